//! `vision_infer`: image classification throughput of a Vision Transformer
//! (ViT) — a batch of images through the patch embedding, the encoder and
//! the final LayerNorm (and the classifier, when a checkpoint has one) —
//! in images/s and batch latency.
//!
//! The model is a preset by size (tiny to xl, the ViT paper's shapes at
//! 224 × 224) with weights from the seed, or a Hugging Face `vit`
//! directory. Images are synthetic: seeded pixels normalised as ViT's image
//! processor does. A preset too large for the free memory is skipped before
//! anything is allocated. Validation: the tiny preset at the run's
//! precision against a plain f64 forward pass (on 32 × 32 images), finite
//! outputs, and each image run alone equal to its row of the batch.

use candle_core::{DType, Device, Tensor};
use warpt_harness::{Benchmark, BenchmarkError, Convert, Measure, Measured, RunContext, SeriesDef};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkSpec, ParamValue, Params, StageLimits,
    Validation,
};
use warpt_models::llm::Precision;
use warpt_models::sampling::{Budget, DEVICES, FLOAT_PRECISIONS, choices, gib, time_each};
use warpt_models::vision::{self, Vit, VitPreset};

/// Benchmark name within the suite.
pub const NAME: &str = "vision_infer";
/// The presets `model` takes.
const PRESETS: &[&str] = &["tiny", "small", "base", "large", "xl"];

/// The spec of `vision_infer`.
pub fn spec() -> BenchmarkSpec {
    let sizes: Vec<String> = VitPreset::ALL
        .iter()
        .map(|p| {
            let c = p.config();
            format!(
                "{} = {} wide, {} layers, {} heads, patch {} ({:.1} M parameters)",
                p.name(),
                c.hidden_size,
                c.num_hidden_layers,
                c.num_attention_heads,
                c.patch_size,
                vision::parameter_count(&c) as f64 / 1e6
            )
        })
        .collect();
    BenchmarkSpec {
        id: BenchmarkId::new(crate::SUITE, NAME),
        components: vec![BenchmarkComponent::Cpu, BenchmarkComponent::Ram],
        kind: BenchmarkKind::Application,
        description: Some(format!(
            "Vision Transformer inference (candle-transformers' ViT): `batch` synthetic 224 x 224 images \
             per sample through the patch embedding, the encoder and the final LayerNorm (the classifier \
             too when a checkpoint has one); `images_per_s` and `batch_latency_ms`. Presets, weights from \
             the seed: {}; or `model_dir` = a Hugging Face vit directory. A preset the free memory cannot \
             hold is skipped before allocating. Validation: the tiny preset against a plain f64 forward \
             pass, finite outputs, each image alone = its row of the batch. Runs here: {}.",
            sizes.join("; "),
            warpt_models::support::summary("pepbench/vision_infer")
        )),
        default_duration_seconds: Some(5.0),
        external_tool: None,
        params: [
            ("model".to_string(), ParamValue::Str("small".into())),
            ("model_dir".to_string(), ParamValue::Str(String::new())),
            ("device".to_string(), ParamValue::Str("cpu".into())),
            ("precision".to_string(), ParamValue::Str("f32".into())),
            ("batch".to_string(), ParamValue::Int(8)),
        ]
        .into(),
        param_help: [
            (
                "model".to_string(),
                "preset: tiny (ViT-Ti/16), small (ViT-S/16), base (ViT-B/16), large (ViT-L/16), xl (ViT-H/14)"
                    .to_string(),
            ),
            (
                "model_dir".to_string(),
                "a Hugging Face vit directory (config.json, model.safetensors); overrides model"
                    .to_string(),
            ),
            (
                "device".to_string(),
                "cpu (cuda and metal need a build with that feature)".to_string(),
            ),
            ("precision".to_string(), "f32, bf16 or f16".to_string()),
            ("batch".to_string(), "images per batch".to_string()),
        ]
        .into(),
        param_kinds: warpt_model::ParamKind::table(&[(
            "model_dir",
            warpt_model::ParamKind::InputPath,
        )]),
        param_ranges: Default::default(),
        param_choices: choices(&[
            ("model", PRESETS),
            ("device", DEVICES),
            ("precision", FLOAT_PRECISIONS),
        ]),
        timeouts: StageLimits {
            setup: Some(600.0),
            validate: Some(120.0),
            ..StageLimits::default()
        },
        metrics: vec!["images_per_s".into(), "batch_latency_ms".into()],
    }
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let batch = params
        .get("batch")
        .and_then(ParamValue::as_i64)
        .unwrap_or(0);
    if !(1..=65536).contains(&batch) {
        return Err(format!(
            "parameter 'batch' must be from 1 to 65536, not {batch}"
        ));
    }
    let dir = params
        .get("model_dir")
        .and_then(ParamValue::as_str)
        .unwrap_or("");
    if dir.is_empty() {
        let model = params
            .get("model")
            .and_then(ParamValue::as_str)
            .unwrap_or("");
        VitPreset::parse(model)?;
    } else {
        vision::check_dir(dir)?;
    }
    Ok(())
}

/// Bytes a run of configuration `c` needs: the weights in the run's dtype,
/// their f32 copy while loading (seeded or from safetensors), and the
/// activations of one batch (the residual stream, the MLP's inner width and
/// one head's attention scores at a time, with room for candle's copies).
fn bytes_needed(c: &candle_transformers::models::vit::Config, dtype: DType, batch: usize) -> u64 {
    let params = vision::parameter_count(c) as u64;
    let tokens = ((c.image_size / c.patch_size).pow(2) + 1) as u64;
    let width = (c.hidden_size + c.intermediate_size) as u64;
    let activations =
        4 * batch as u64 * (tokens * width + c.num_attention_heads as u64 * tokens * tokens) * 4;
    let images = batch as u64 * (c.num_channels * c.image_size * c.image_size) as u64 * 8;
    params * (4 + dtype.size_in_bytes() as u64) + activations + images
}

/// Largest difference relative to the largest magnitude in `want`.
fn relative(got: &[f32], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-30);
    got.iter()
        .zip(want)
        .map(|(g, w)| (f64::from(*g) - w).abs())
        .fold(0.0, f64::max)
        / scale
}

/// The running benchmark.
#[derive(Default)]
pub struct VisionInfer {
    model: Option<Vit>,
    images: Option<Tensor>,
    precision: Option<Precision>,
    device: Option<Device>,
}

impl VisionInfer {
    /// A fresh instance.
    pub fn new() -> Self {
        VisionInfer::default()
    }
}

impl Benchmark for VisionInfer {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        crate::heap::keep_freed_memory();
        check_params(&ctx.params).map_err(|reason| BenchmarkError::InvalidParam {
            key: NAME.into(),
            reason,
        })?;
        let precision = Precision::parse_float(ctx.str_param("precision")?).map_err(|reason| {
            BenchmarkError::InvalidParam {
                key: "precision".into(),
                reason,
            }
        })?;
        let device = warpt_models::select::device(ctx.str_param("device")?)?;
        let batch = ctx.int_param("batch", 1)? as usize;
        let dir = ctx.str_param("model_dir")?;
        let failed = |e: candle_core::Error| BenchmarkError::Failed(e.to_string());
        let (config, tensors) = if dir.is_empty() {
            let preset = VitPreset::parse(ctx.str_param("model")?).map_err(|reason| {
                BenchmarkError::InvalidParam {
                    key: "model".into(),
                    reason,
                }
            })?;
            let config = preset.config();
            let need = bytes_needed(&config, precision.dtype(), batch);
            let budget = Budget::now();
            if !budget.fits(need) {
                return Err(BenchmarkError::Skipped(format!(
                    "the {} preset at batch {batch} in {} needs about {:.1} GiB; {:.1} GiB is available \
                     (a smaller model or batch runs)",
                    preset.name(),
                    precision.name(),
                    gib(need),
                    gib(budget.available)
                )));
            }
            let tensors = vision::generate(&config, ctx.seed, &device).map_err(failed)?;
            (config, tensors)
        } else {
            let config = vision::check_dir(dir).map_err(BenchmarkError::Failed)?;
            let path = std::path::Path::new(dir).join("model.safetensors");
            let tensors = candle_core::safetensors::load(&path, &device)
                .map_err(|e| BenchmarkError::Failed(format!("loading {}: {e}", path.display())))?;
            (config, tensors)
        };
        let pixels = vision::synthetic_images(&config, batch, ctx.seed);
        let side = config.image_size;
        let images = Tensor::from_vec(pixels, (batch, config.num_channels, side, side), &device)
            .and_then(|t| t.to_dtype(precision.dtype()))
            .map_err(failed)?;
        let model = Vit::load(tensors, config, precision.dtype(), &device)
            .map_err(BenchmarkError::Failed)?;
        self.model = Some(model);
        self.images = Some(images);
        self.precision = Some(precision);
        self.device = Some(device);
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let (Some(model), Some(images)) = (self.model.as_ref(), self.images.as_ref()) else {
            return Err(BenchmarkError::not_prepared());
        };
        let batch = images.dims().first().copied().unwrap_or(0);
        let defs = [
            SeriesDef::new(
                "images_per_s",
                "images/s",
                true,
                &[],
                Convert::Rate(batch as f64),
            ),
            SeriesDef::new("batch_latency_ms", "ms", false, &[], Convert::Time(1e3)),
        ];
        let m = time_each(measure, ctx, NAME, &defs, || {
            model.forward(images).map_err(|e| e.to_string())
        })
        .map_err(|e| BenchmarkError::Failed(format!("running the ViT: {e}")))?;
        let c = &model.config;
        let precision = self.precision.unwrap_or(Precision::F32);
        let dir = ctx.str_param("model_dir")?;
        Ok(Measured {
            metrics: m.metrics,
            details: vec![
                ("family".into(), ParamValue::from("vit")),
                ("architecture".into(), ParamValue::from("vit")),
                (
                    "engine".into(),
                    ParamValue::from("candle-transformers ViT embeddings and encoder"),
                ),
                (
                    "weights".into(),
                    ParamValue::Str(if dir.is_empty() {
                        format!(
                            "generated from the seed ({} preset)",
                            ctx.str_param("model")?
                        )
                    } else {
                        dir.to_string()
                    }),
                ),
                (
                    "parameters".into(),
                    ParamValue::Int(model.parameters as i64),
                ),
                (
                    "model_bytes".into(),
                    ParamValue::Int((model.parameters * precision.dtype().size_in_bytes()) as i64),
                ),
                ("precision".into(), ParamValue::from(precision.name())),
                ("image_size".into(), ParamValue::Int(c.image_size as i64)),
                ("patch_size".into(), ParamValue::Int(c.patch_size as i64)),
                (
                    "tokens_per_image".into(),
                    ParamValue::Int(((c.image_size / c.patch_size).pow(2) + 1) as i64),
                ),
                (
                    "output".into(),
                    ParamValue::from(if model.classifies() {
                        "classifier logits"
                    } else {
                        "CLS features after the final LayerNorm"
                    }),
                ),
                ("heap".into(), ParamValue::from(crate::heap::SETTING)),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, ctx: &RunContext) -> Validation {
        let (Some(model), Some(images), Some(precision)) =
            (self.model.as_ref(), self.images.as_ref(), self.precision)
        else {
            return Validation::fail("nothing was run");
        };
        match check(model, images, precision, ctx.seed) {
            Ok(msg) => Validation::pass(msg),
            Err(msg) => Validation::fail(msg),
        }
    }
}

fn check(model: &Vit, images: &Tensor, precision: Precision, seed: u64) -> Result<String, String> {
    let err = |e: candle_core::Error| format!("running the ViT for validation: {e}");
    let tol = precision.logit_tolerance();
    // 1. The tiny preset on 32 x 32 images (five tokens) at this precision
    //    against the f64 forward pass.
    let mut config = VitPreset::Tiny.config();
    config.image_size = 32;
    let cpu = Device::Cpu;
    let tiny = Vit::load(
        vision::generate(&config, seed, &cpu).map_err(err)?,
        config.clone(),
        precision.dtype(),
        &cpu,
    )?;
    let pixels = vision::synthetic_images(&config, 2, seed ^ 1);
    let input = Tensor::from_vec(pixels.clone(), (2, 3, 32, 32), &cpu)
        .and_then(|t| t.to_dtype(precision.dtype()))
        .map_err(err)?;
    let got = tiny
        .forward(&input)
        .and_then(|t| t.to_vec2::<f32>())
        .map_err(err)?;
    let per_image = 3 * 32 * 32;
    let mut worst = 0f64;
    for (i, row) in got.iter().enumerate() {
        let want = vision::reference(&config, seed, &pixels[i * per_image..(i + 1) * per_image]);
        worst = worst.max(relative(row, &want));
    }
    if worst > tol {
        return Err(format!(
            "tiny preset in {}: CLS features differ from the f64 reference by {worst:.2e} of the largest (tolerance {tol:.0e})",
            precision.name()
        ));
    }
    // 2. Finite outputs and 3. alone = in the batch, on the measured model.
    let batch = model
        .forward(images)
        .and_then(|t| t.to_vec2::<f32>())
        .map_err(err)?;
    if batch.iter().flatten().any(|x| !x.is_finite()) {
        return Err("the measured model's output is not finite".into());
    }
    let mut apart = 0f64;
    for (i, row) in batch.iter().enumerate().take(2) {
        let alone = model
            .forward(&images.narrow(0, i, 1).map_err(err)?)
            .and_then(|t| t.to_vec2::<f32>())
            .map_err(err)?;
        let want: Vec<f64> = row.iter().map(|x| f64::from(*x)).collect();
        apart = apart.max(relative(&alone[0], &want));
    }
    if apart > tol {
        return Err(format!(
            "an image run alone differs from its row of the batch by {apart:.2e} of the largest (tolerance {tol:.0e})"
        ));
    }
    Ok(format!(
        "tiny preset in {}: CLS features of two 32 x 32 images within {worst:.1e} of the f64 reference's \
         largest (tolerance {tol:.0e}); the measured model's outputs finite, images alone within \
         {apart:.1e} of their batch rows",
        precision.name()
    ))
}
