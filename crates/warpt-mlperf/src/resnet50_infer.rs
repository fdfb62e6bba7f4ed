//! `resnet50_infer`: MLPerf's image classification as a system under test —
//! ResNet-50 v1.5 on 224×224 ImageNet-normalised images (seeded, or the
//! images of `dataset=DIR`), channels last, every convolution GEMMs on
//! warpt's engine (3×3 stride-1 ones by Winograd's F(2×2, 3×3)), batch
//! norms folded, in f32 or bf16.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_harness::{Benchmark, BenchmarkError, Measure, MeasureResult, RunContext};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Params, Validation};

use crate::bench::{self, ModelRules, Outcome, SpecParts};
use crate::loadgen::{QuerySample, Responder, Response, Scenario, SystemUnderTest};
use crate::resnet::{self, MEAN, STD, Weights};
use crate::resnet_candle::CandleNet;
use crate::resnet_gemm::{Conv3x3, GemmNet, argmax};
use warpt_models::device::{self, MemoryPeak};
use warpt_models::packed::Precision;

/// Benchmark name within the suite.
pub const NAME: &str = "resnet50_infer";

/// ResNet-50's rules in `mlperf.conf`.
pub(crate) const MODEL: ModelRules = ModelRules {
    name: "resnet50",
    server_latency_ms: 15.0,
    offline_min_count: 24576,
    library: 1024,
    token_bounds_ms: None,
};

/// The spec of `resnet50_infer`.
pub fn spec() -> BenchmarkSpec {
    bench::scenario_spec(SpecParts {
        name: NAME,
        scenario: Scenario::Offline,
        batch: Some(8),
        components: vec![BenchmarkComponent::Cpu, BenchmarkComponent::Gpu],
        description: "MLPerf image classification: ResNet-50 v1.5 (torchvision's layout, batch norms folded), channels \
             last, every convolution GEMMs on warpt's engine in `precision` (f32, or bf16: weights and inputs rounded, \
             products summed in f32; weights packed once): 3x3 stride-1 ones by Winograd's F(4x4,3x3) (`conv3x3`), \
             the others one GEMM (im2col for the strided 3x3 and the stem); on `device=cuda`, candle's NCHW convolutions \
             (im2col and cuBLAS) with the same folded weights; 224x224 ImageNet-normalised images (seeded, or `dataset=DIR`), \
             up to `batch` at once, under the chosen LoadGen scenario (default Offline: samples/s). Weights from the \
             seed or `model_dir` (model.safetensors with torchvision's names). Validation: the network against a plain \
             f64 forward pass on a 32x32 image (within 1e-4 of the largest logit in f32, 5e-2 in bf16), and a sample \
             served in a batch classified as it is alone. An accuracy run (accuracy=true) over a labelled dataset \
             (`labels`, or the dataset's val_map.txt) scores top1_accuracy, and fails below 99% of \
             `reference_accuracy` (MLPerf's quality target).",
        devices: &["cpu", "cuda"],
        params: vec![
            Param::int("image_size", 224, 32..=1024).help("image height and width (MLPerf: 224)"),
            Param::input_path("dataset", "").help(
                "a directory of images (JPEG, PNG, PPM), resized and center-cropped to image_size; empty = seeded images",
            ),
            Param::input_path("labels", "").help(
                "with accuracy=true: the dataset's labels, `NAME CLASS` lines (MLPerf's val_map.txt; default: the dataset's val_map.txt when there is one): top1_accuracy is scored",
            ),
            Param::float("reference_accuracy", 0.0, 0.0..=100.0).unit("%").help(
                "the reference model's top-1 (76.46 for ResNet-50 v1.5 in FP32): a top-1 below 99% of it fails (MLPerf's quality target); 0 = no target",
            ),
            Param::choice("precision", "f32", Precision::NAMES).help(
                "f32, bf16 or f16: the convolutions' weights and inputs (bf16 and f16 as PyTorch's autocast: rounded, products summed in f32; AVX512_BF16 where the CPU has it, f16 widened by F16C)",
            ),
            Param::choice("conv3x3", "winograd", Conv3x3::NAMES).help(
                "how the 3x3 stride-1 convolutions run: winograd (F(4x4,3x3), 36 GEMMs of 4x fewer multiplications; in bf16 and f16 F(2x2,3x3), whose transforms survive their rounding), winograd2x2 (F(2x2,3x3), 16 GEMMs of 2.25x fewer, transforms that only add) or im2col (one GEMM); details.conv3x3 says which ran",
            ),
        ],
        check: check_params,
        metrics: &[],
    })
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    bench::check_common(params)?;
    let dataset = params
        .get("dataset")
        .and_then(ParamValue::as_str)
        .unwrap_or("");
    if !dataset.is_empty() && !std::path::Path::new(dataset).is_dir() {
        return Err(format!("parameter 'dataset': {dataset} is not a directory"));
    }
    bench::precision(params)?;
    conv3x3(params)?;
    let text = |k: &str| params.get(k).and_then(ParamValue::as_str).unwrap_or("");
    let (accuracy, reference) = crate::quality::requested(params);
    if !accuracy && (!text("labels").is_empty() || reference > 0.0) {
        return Err(
            "parameters 'labels' and 'reference_accuracy': top-1 is scored in an accuracy run (accuracy=true)"
                .into(),
        );
    }
    if !text("labels").is_empty() && dataset.is_empty() {
        return Err("parameter 'labels': labels name the images of a dataset (dataset=DIR)".into());
    }
    if reference > 0.0 && labels_file(params).is_none() {
        return Err(
            "parameter 'reference_accuracy': top-1 needs labels (labels=FILE, or val_map.txt in the dataset)"
                .into(),
        );
    }
    Ok(())
}

/// The labels file of an accuracy run: `labels`, else the dataset's
/// `val_map.txt` when there is one.
fn labels_file(params: &Params) -> Option<std::path::PathBuf> {
    let text = |k: &str| params.get(k).and_then(ParamValue::as_str).unwrap_or("");
    if !text("labels").is_empty() {
        return Some(text("labels").into());
    }
    let dataset = text("dataset");
    let default = std::path::Path::new(dataset).join("val_map.txt");
    (!dataset.is_empty() && default.is_file()).then_some(default)
}

/// The `conv3x3` parameter (winograd when absent).
fn conv3x3(params: &Params) -> Result<Conv3x3, String> {
    match params.get("conv3x3").and_then(ParamValue::as_str) {
        None => Ok(Conv3x3::Winograd),
        Some(name) => Conv3x3::parse(name).map_err(|e| format!("parameter 'conv3x3': {e}")),
    }
}

/// Images held as bytes (3 × size × size, RGB planes), normalised per batch.
pub struct Library {
    /// Height and width.
    pub size: usize,
    images: Vec<Vec<u8>>,
    /// Each image's file name (a dataset's; empty for seeded images).
    pub names: Vec<String>,
}

impl Library {
    /// `count` seeded images: smooth gradients with noise, so they are
    /// neither constant nor white noise.
    pub fn seeded(seed: u64, count: usize, size: usize) -> Self {
        let images = (0..count)
            .map(|i| {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(
                    seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                );
                let base: [f32; 3] = std::array::from_fn(|_| (rng.next_u32() % 256) as f32);
                let mut img = Vec::with_capacity(3 * size * size);
                for (c, b) in base.iter().enumerate() {
                    for y in 0..size {
                        for x in 0..size {
                            let grad = ((x + y * (c + 1)) % size) as f32 / size as f32 * 96.0;
                            let noise = (rng.next_u32() % 64) as f32;
                            img.push(((b + grad + noise) % 256.0) as u8);
                        }
                    }
                }
                img
            })
            .collect();
        Library {
            size,
            images,
            names: Vec::new(),
        }
    }

    /// Images loaded from a directory (see [`crate::images`]).
    pub fn from_dir(dir: &str, size: usize) -> Result<Self, String> {
        let (names, images) = crate::images::load_dir(std::path::Path::new(dir), size)?
            .into_iter()
            .unzip();
        Ok(Library {
            size,
            images,
            names,
        })
    }

    /// Images in the library.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// The normalised pixels of image `index` (3 × size × size).
    pub fn normalised(&self, index: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(3 * self.size * self.size);
        self.normalise_into(index, &mut out);
        out
    }

    /// [`Self::normalised`] appended to `out`: a plane per channel, no
    /// division per pixel (a batch's inputs are made on the SUT's thread
    /// while the cores wait).
    fn normalise_into(&self, index: usize, out: &mut Vec<f32>) {
        let plane = self.size * self.size;
        let image = &self.images[index % self.images.len()];
        for (c, channel) in image.chunks(plane).enumerate() {
            let (mean, std) = (MEAN[c], STD[c]);
            out.extend(channel.iter().map(|&p| (p as f32 - mean) / std));
        }
    }
}

/// The network a SUT runs: warpt's GEMM engine on the CPU, candle's
/// operations on a GPU.
pub enum Net {
    /// Channels-last GEMMs on warpt's engine.
    Gemm(Box<GemmNet>),
    /// candle's convolutions (CUDA: im2col and cuBLAS).
    Candle(CandleNet),
}

impl Net {
    /// Logits of `n` normalised `size` × `size` images, 1000 a row.
    pub fn forward(&self, nchw: &[f32], n: usize, size: usize) -> Result<Vec<f32>, String> {
        match self {
            Net::Gemm(net) => Ok(net.forward(nchw, n, size)),
            Net::Candle(net) => net
                .forward(nchw, n, size)
                .map_err(|e| format!("running the network: {e}")),
        }
    }

    /// The precision it runs in.
    pub fn precision(&self) -> Precision {
        match self {
            Net::Gemm(net) => net.precision(),
            Net::Candle(net) => net.precision(),
        }
    }
}

/// The ResNet-50 SUT.
pub struct ResnetSut {
    net: Net,
    library: Library,
    batch: usize,
    name: String,
    memory: MemoryPeak,
}

impl ResnetSut {
    /// Logits of `indices`, one row of 1000 each.
    pub fn logits(&self, indices: &[usize]) -> Result<Vec<f32>, String> {
        let size = self.library.size;
        let mut pixels = Vec::with_capacity(indices.len() * 3 * size * size);
        for &i in indices {
            self.library.normalise_into(i, &mut pixels);
        }
        let logits = self.net.forward(&pixels, indices.len(), self.library.size);
        self.memory.sample();
        logits
    }
}

impl SystemUnderTest for ResnetSut {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn max_batch(&self) -> usize {
        self.batch
    }

    fn process(&self, batch: &[QuerySample], responder: &Responder) -> Result<(), String> {
        let indices: Vec<usize> = batch.iter().map(|s| s.index).collect();
        let classes = argmax(&self.logits(&indices)?, resnet::CLASSES);
        for (sample, class) in batch.iter().zip(classes) {
            responder.complete(
                sample,
                Response {
                    data: (class as i32).to_le_bytes().to_vec(),
                    tokens: None,
                },
            );
        }
        Ok(())
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct Resnet50Infer {
    sut: Option<ResnetSut>,
    weights: Option<Weights>,
    outcome: Option<Outcome>,
    /// The accuracy run's top-1, percent, where labels were given.
    top1: Option<f64>,
}

impl Resnet50Infer {
    /// An accuracy run's top-1 against the labels (none without labels or
    /// outside an accuracy run).
    fn top1(
        &self,
        ctx: &RunContext,
        sut: &ResnetSut,
        outcome: &Outcome,
    ) -> Result<Option<crate::quality::Accuracy>, BenchmarkError> {
        if outcome.summary.settings.mode != crate::loadgen::Mode::AccuracyOnly {
            return Ok(None);
        }
        let Some(file) = labels_file(&ctx.params) else {
            return Ok(None);
        };
        let labels =
            crate::quality::read_labels(&file).map_err(|e| BenchmarkError::InvalidParam {
                key: "labels".into(),
                reason: e,
            })?;
        let answers: Vec<(usize, i32)> = outcome
            .summary
            .result
            .samples
            .iter()
            .filter(|r| r.data.len() == 4)
            .map(|r| {
                (
                    r.index,
                    i32::from_le_bytes([r.data[0], r.data[1], r.data[2], r.data[3]]),
                )
            })
            .collect();
        crate::quality::top1(&sut.library.names, &labels, &answers)
            .map(Some)
            .map_err(BenchmarkError::Failed)
    }
}

/// The weights the context names: `model_dir/model.safetensors` or the seed's.
pub fn weights(ctx: &RunContext) -> Result<(Weights, &'static str), BenchmarkError> {
    let dir = ctx.str_param("model_dir")?;
    if dir.is_empty() {
        return Ok((resnet::generate(ctx.seed), "seeded"));
    }
    let file = std::path::Path::new(dir).join("model.safetensors");
    Ok((
        resnet::load(&file).map_err(BenchmarkError::Failed)?,
        "model_dir",
    ))
}

impl Benchmark for Resnet50Infer {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let dev = device::open(ctx.str_param("device")?)?;
        let memory = MemoryPeak::new(&dev);
        let (w, source) = weights(ctx)?;
        let precision =
            bench::precision(&ctx.params).map_err(BenchmarkError::invalid("precision"))?;
        let conv3x3 = conv3x3(&ctx.params).map_err(BenchmarkError::invalid("conv3x3"))?;
        let net = if dev.is_cpu() {
            Net::Gemm(Box::new(
                GemmNet::new(&w, precision, conv3x3).map_err(BenchmarkError::Failed)?,
            ))
        } else {
            Net::Candle(CandleNet::new(&w, precision, &dev).map_err(BenchmarkError::Failed)?)
        };
        let size = ctx.int_param("image_size", 32)? as usize;
        let dataset = ctx.str_param("dataset")?;
        let library = if dataset.is_empty() {
            let n = match ctx.int_param("samples", 0)? {
                n if n > 0 => n as usize,
                _ => MODEL.library as usize,
            };
            Library::seeded(ctx.seed, n, size)
        } else {
            Library::from_dir(dataset, size).map_err(BenchmarkError::Failed)?
        };
        if library.is_empty() {
            return Err(BenchmarkError::Failed(format!("no images in {dataset}")));
        }
        device::settle(&dev, || {
            let image = library.normalised(0);
            net.forward(&image, 1, size)
        })?;
        memory.sample();
        let images = if dataset.is_empty() {
            "seeded images".to_string()
        } else {
            format!("{} images from {dataset}", library.len())
        };
        self.sut = Some(ResnetSut {
            net,
            batch: ctx.int_param("batch", 1)? as usize,
            name: format!(
                "warpt ResNet-50 v1.5 ({source} weights, {images}, {size}x{size}, {})",
                precision.name()
            ),
            library,
            memory,
        });
        self.weights = Some(w);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let sut = warpt_harness::prepared(&self.sut)?;
        let mut base = bench::settings(ctx, &MODEL, 8)?;
        if !ctx.str_param("dataset")?.is_empty() && ctx.int_param("samples", 0)? == 0 {
            base.performance_sample_count = sut.library.len() as u64;
            base.total_sample_count = sut.library.len() as u64;
        }
        let outcome = bench::run(ctx, measure, sut, &base, NAME)?;
        let mut m = crate::metrics::measured(&outcome, measure);
        let gflop = resnet::forward_flops(sut.library.size) / 1e9;
        m.details.push(("sut".into(), ParamValue::from(sut.name())));
        let precision = sut.net.precision();
        match &sut.net {
            // Every product is the GEMM engine's (weights packed once).
            Net::Gemm(net) => {
                m.details.push((
                    "engine".into(),
                    ParamValue::from(warpt_models::packed::ENGINE),
                ));
                m.details
                    .push(("isa".into(), ParamValue::from(precision.isa())));
                m.details
                    .push(("conv3x3".into(), ParamValue::from(net.conv3x3().name())));
                m.details
                    .extend(device::details(&candle_core::Device::Cpu, &sut.memory));
            }
            Net::Candle(net) => {
                m.details.push((
                    "engine".into(),
                    ParamValue::from("candle (NCHW convolutions: im2col and cuBLAS GEMMs on CUDA)"),
                ));
                m.details.extend(device::details(net.device(), &sut.memory));
            }
        }
        m.details
            .push(("precision".into(), ParamValue::from(precision.name())));
        m.details
            .push(("gflop_per_image".into(), ParamValue::Float(gflop)));
        if let Some(rate) = m.metrics.iter().find(|m| m.name == "samples_per_s") {
            m.details
                .push(("gflops".into(), ParamValue::Float(rate.value * gflop)));
        }
        if let Some(top1) = self.top1(ctx, sut, &outcome)? {
            m.metrics.push(warpt_model::BenchmarkMetric::single(
                "top1_accuracy",
                top1.value,
                "%",
                true,
            ));
            m.details.push((
                "accuracy_scored".into(),
                ParamValue::Int(top1.scored as i64),
            ));
            self.top1 = Some(top1.value);
        }
        self.outcome = Some(outcome);
        Ok(m)
    }

    fn validate(&mut self, ctx: &RunContext) -> Validation {
        let (Some(sut), Some(w), Some(outcome)) = (&self.sut, &self.weights, &self.outcome) else {
            return Validation::fail("nothing was measured");
        };
        let checked = check(sut, w, outcome, ctx.seed).and_then(|m| {
            let reference = ctx.float_param("reference_accuracy").unwrap_or(0.0);
            crate::quality::with_accuracy(m, "top-1 %", self.top1, reference)
        });
        match checked {
            Ok(m) => Validation::pass(m),
            Err(e) => Validation::fail(e),
        }
    }
}

/// The network against the f64 reference on a 32×32 image, and a served
/// sample's class against the same image alone.
fn check(sut: &ResnetSut, w: &Weights, outcome: &Outcome, seed: u64) -> Result<String, String> {
    let answers = crate::check_answers(&outcome.summary, |r| {
        r.data.len() == 4
            && (0..resnet::CLASSES as i32).contains(&i32::from_le_bytes([
                r.data[0], r.data[1], r.data[2], r.data[3],
            ]))
    })?;
    let small = Library::seeded(seed ^ 0x5e11, 1, 32);
    let image = small.normalised(0);
    let want = crate::resnet_reference::logits(w, &image, 32)?;
    let got = sut.net.forward(&image, 1, 32)?;
    let scale = want.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-30);
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (*g as f64 - w).abs() / scale)
        .fold(0f64, f64::max);
    // bf16 keeps 8 significant bits of every weight and input: some
    // 0.4% each, through 53 layers; f16 11, an eighth of that.
    let tolerance = match sut.net.precision() {
        Precision::F32 => 1e-4,
        Precision::Bf16 => 5e-2,
        Precision::F16 => 1e-2,
    };
    if worst > tolerance {
        return Err(format!(
            "logits on a 32x32 image differ from the f64 reference by {worst:.2e} of the largest (tolerance {tolerance:.0e})"
        ));
    }
    let first = outcome
        .summary
        .result
        .samples
        .first()
        .ok_or("no sample was answered")?;
    let alone = argmax(&sut.logits(&[first.index])?, resnet::CLASSES)[0] as i32;
    let served = i32::from_le_bytes([first.data[0], first.data[1], first.data[2], first.data[3]]);
    if alone != served {
        return Err(format!(
            "sample {} was classified {served} in its batch but {alone} alone",
            first.index
        ));
    }
    Ok(format!(
        "{answers}; logits within {worst:.1e} of the f64 reference on a 32x32 image; sample {} classified {served} in its batch and alone",
        first.index
    ))
}
