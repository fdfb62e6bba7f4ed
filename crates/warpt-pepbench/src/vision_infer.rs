//! `vision_infer`: image classification throughput of a Vision Transformer
//! (ViT) — a batch of images through the patch embedding, the encoder and
//! the final LayerNorm (and the classifier, when a checkpoint has one) — or
//! of a CLIP's zero-shot classification (the image tower, then similarity
//! against texts encoded once), in images/s and batch latency.
//!
//! The model is a preset by family and size (tiny to xl, the ViT paper's
//! and CLIP's shapes) with weights from the seed, or a Hugging Face `vit`
//! or `clip` directory. Images are synthetic: seeded pixels normalised as
//! ViT's image processor does. A preset too large for the free memory is
//! skipped before anything is allocated. Validation: for a ViT the tiny
//! preset at the run's precision against a plain f64 forward pass (on
//! 32 × 32 images), for a CLIP its logits against the cosines of its
//! features recomputed in f64; finite outputs, and each image run alone
//! equal to its row of the batch.

use candle_core::{Device, Tensor};
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasureResult, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params, StageLimits,
    Validation,
};
use warpt_models::device::{self, MemoryPeak};
use warpt_models::llm::Precision;
use warpt_models::sampling::{DEVICES, FLOAT_PRECISIONS, time_each};
use warpt_models::vision::{self, Vit, VitPreset};

use crate::vision_model::{FAMILIES, VisionModel, family_of};

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
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .components([BenchmarkComponent::Cpu, BenchmarkComponent::Ram, BenchmarkComponent::Gpu])
        .kind(BenchmarkKind::Application)
        .description(format!(
            "Vision Transformer inference (candle-transformers' ViT and CLIP layers): `batch` synthetic images \
             per sample through the patch embedding, the encoder and the final LayerNorm (the classifier \
             too when a checkpoint has one); for `family=clip` (or a clip `model_dir`), zero-shot \
             classification: the image tower and projection, then similarity logits against `texts` texts \
             encoded once before measuring. `images_per_s` and `batch_latency_ms`. ViT presets, weights from \
             the seed: {}; CLIP presets: tiny = ViT-Ti/16 image tower, small = ViT-S/16, base = OpenAI's \
             ViT-B/32, large = ViT-L/14, xl = ViT-H/14 (text towers as paired); or `model_dir` = a Hugging \
             Face vit or clip directory. A preset the free memory cannot hold is skipped before allocating. \
             Validation: a ViT's tiny preset against a plain f64 forward pass, a CLIP's logits against its \
             features' cosines in f64, finite outputs, each image alone = its row of the batch. Runs here: {}.",
            sizes.join("; "),
            warpt_models::support::summary("pepbench/vision_infer")
        ))
        .duration(5.0)
        .param(
            Param::choice("family", "vit", FAMILIES)
                .help("the presets' family: vit or clip (a model_dir's config.json names its own)"),
        )
        .param(Param::choice("model", "small", PRESETS).help(
            "preset: tiny (ViT-Ti/16), small (ViT-S/16), base (ViT-B/16; CLIP ViT-B/32), large (ViT-L/16; \
             CLIP ViT-L/14), xl (ViT-H/14)",
        ))
        .param(Param::input_path("model_dir", "").help(
            "a Hugging Face vit or clip directory (config.json, model.safetensors); overrides family and model",
        ))
        .param(Param::choice("device", "cpu", DEVICES).help(warpt_models::device::HELP))
        .param(Param::choice("precision", "f32", FLOAT_PRECISIONS).help("f32, bf16 or f16"))
        .param(Param::int("batch", 8, 1..=65536).help("images per batch"))
        .param(
            Param::int("texts", 8, 1..=4096)
                .help("CLIP only: texts each image is scored against (encoded once)"),
        )
        .check(check_params)
        .timeouts(StageLimits {
            setup: Some(600.0),
            validate: Some(120.0),
            ..StageLimits::default()
        })
        .metric("images_per_s")
        .metric("batch_latency_ms")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let s = |k: &str| params.get(k).and_then(ParamValue::as_str).unwrap_or("");
    let family = family_of(s("model_dir"), s("family"))?;
    crate::vision_model::check(s("model_dir"), family, s("model"))
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
    model: Option<VisionModel>,
    images: Option<Tensor>,
    precision: Option<Precision>,
    device: Option<Device>,
    memory: MemoryPeak,
}

impl Benchmark for VisionInfer {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        crate::heap::keep_freed_memory();
        let precision = Precision::parse_float(ctx.str_param("precision")?)
            .map_err(BenchmarkError::invalid("precision"))?;
        let device = device::open(ctx.str_param("device")?)?;
        self.memory = MemoryPeak::new(&device);
        let batch = ctx.int_param("batch", 1)? as usize;
        let family = family_of(ctx.str_param("model_dir")?, ctx.str_param("family")?)
            .map_err(BenchmarkError::invalid(NAME))?;
        if let Some(why) =
            warpt_models::support::refusal(family, precision.name(), ctx.str_param("device")?)
        {
            return Err(BenchmarkError::Skipped(why));
        }
        let texts = ctx.int_param("texts", 1)? as usize;
        let model = VisionModel::load(ctx, family, precision, &device, texts)?;
        let (channels, side) = model.image_shape();
        let pixels = vision::synthetic_images(channels, side, batch, ctx.seed);
        let images = Tensor::from_vec(pixels, (batch, channels, side, side), &device)
            .and_then(|t| t.to_dtype(precision.dtype()))
            .map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        device::settle(&device, || {
            model.forward(&images).map_err(|e| e.to_string())
        })?;
        self.memory.sample();
        self.model = Some(model);
        self.images = Some(images);
        self.precision = Some(precision);
        self.device = Some(device);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let (Some(model), Some(images)) = (self.model.as_ref(), self.images.as_ref()) else {
            return Err(BenchmarkError::not_prepared());
        };
        let batch = images.dims().first().copied().unwrap_or(0);
        let defs = [
            SeriesDef::rate("images_per_s", "images/s", batch as f64),
            SeriesDef::new("batch_latency_ms", "ms", false, &[], Convert::Time(1e3)),
        ];
        let memory = &self.memory;
        let m = time_each(measure, ctx, NAME, &defs, || {
            let out = model
                .forward(images)
                .and_then(|out| device::sync(images.device()).map(|()| out));
            memory.sample();
            out.map_err(|e| e.to_string())
        })
        .map_err(|e| BenchmarkError::Failed(format!("running the model: {e}")))?;
        let (image_size, patch_size, tokens) = model.patches();
        let family = model.family().model_type();
        let precision = self.precision.unwrap_or(Precision::F32);
        let dir = ctx.str_param("model_dir")?;
        let mut details: Vec<(String, ParamValue)> = vec![
            ("family".into(), ParamValue::from(family)),
            ("architecture".into(), ParamValue::from(family)),
            (
                "engine".into(),
                ParamValue::from(match model {
                    VisionModel::Vit(_) => "candle-transformers ViT embeddings and encoder",
                    VisionModel::Clip(..) => {
                        "candle-transformers CLIP encoder layers, warpt's embeddings, pooling and similarity"
                    }
                }),
            ),
            (
                "weights".into(),
                ParamValue::Str(if dir.is_empty() {
                    format!(
                        "generated from the seed ({family} {} preset)",
                        ctx.str_param("model")?
                    )
                } else {
                    dir.to_string()
                }),
            ),
            (
                "parameters".into(),
                ParamValue::Int(model.parameters() as i64),
            ),
            (
                "model_bytes".into(),
                ParamValue::Int((model.parameters() * precision.dtype().size_in_bytes()) as i64),
            ),
            ("precision".into(), ParamValue::from(precision.name())),
            ("image_size".into(), ParamValue::Int(image_size as i64)),
            ("patch_size".into(), ParamValue::Int(patch_size as i64)),
            ("tokens_per_image".into(), ParamValue::Int(tokens as i64)),
            ("output".into(), ParamValue::Str(model.output())),
            ("heap".into(), ParamValue::from(crate::heap::SETTING)),
        ];
        details.extend(device::details(images.device(), &self.memory));
        Ok(Measured::new(m.metrics, details))
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

fn check(
    model: &VisionModel,
    images: &Tensor,
    precision: Precision,
    seed: u64,
) -> Result<String, String> {
    let err = |e: candle_core::Error| format!("running the model for validation: {e}");
    let tol = precision.logit_tolerance();
    // 1. A ViT: the tiny preset against the f64 forward pass; a CLIP: its
    //    logits against exp(logit_scale) x the cosines of its features in f64.
    let first = match model {
        VisionModel::Vit(_) => tiny_against_reference(precision, seed)?,
        VisionModel::Clip(clip, texts) => {
            let image = clip.image_features(images).map_err(err)?;
            let got = clip
                .logits_per_image(&image, texts)
                .and_then(|t| t.to_vec2::<f32>())
                .map_err(err)?;
            let (image, texts) = (
                image.to_vec2::<f32>().map_err(err)?,
                texts.to_vec2::<f32>().map_err(err)?,
            );
            let cos = |a: &[f32], b: &[f32]| {
                let dot = |x: &[f32], y: &[f32]| -> f64 {
                    x.iter()
                        .zip(y)
                        .map(|(p, q)| f64::from(*p) * f64::from(*q))
                        .sum()
                };
                dot(a, b) / (dot(a, a) * dot(b, b)).sqrt()
            };
            let scale = clip.logit_scale();
            let mut worst = 0f64;
            for (row, img) in got.iter().zip(&image) {
                let want: Vec<f64> = texts.iter().map(|t| scale * cos(img, t)).collect();
                worst = worst.max(relative(row, &want));
            }
            if worst > 1e-4 {
                return Err(format!(
                    "the similarity logits differ from exp(logit_scale) x the features' cosines in f64 by \
                     {worst:.2e} of the largest (tolerance 1e-4)"
                ));
            }
            format!(
                "similarity logits of {} images x {} texts within {worst:.1e} of exp(logit_scale) x the \
                 features' cosines in f64",
                got.len(),
                texts.len()
            )
        }
    };
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
        "{first}; the measured model's outputs finite, images alone within {apart:.1e} of their batch rows"
    ))
}

/// The ViT tiny preset on 32 x 32 images (five tokens) in `precision`
/// against the f64 forward pass.
fn tiny_against_reference(precision: Precision, seed: u64) -> Result<String, String> {
    let err = |e: candle_core::Error| format!("running the ViT for validation: {e}");
    let tol = precision.logit_tolerance();
    let mut config = VitPreset::Tiny.config();
    config.image_size = 32;
    let cpu = Device::Cpu;
    let tiny = Vit::load(
        vision::generate(&config, seed, &cpu).map_err(err)?,
        config.clone(),
        precision.dtype(),
        &cpu,
    )?;
    let pixels = vision::synthetic_images(3, 32, 2, seed ^ 1);
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
    Ok(format!(
        "tiny preset in {}: CLS features of two 32 x 32 images within {worst:.1e} of the f64 reference's \
         largest (tolerance {tol:.0e})",
        precision.name()
    ))
}
