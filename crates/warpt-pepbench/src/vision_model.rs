//! The model `vision_infer` measures: a ViT (classification features or
//! logits) or a CLIP (zero-shot classification: image features against
//! the features of a fixed set of texts, encoded once), from a preset or a
//! Hugging Face directory, with the memory a preset needs checked first.

use candle_core::{DType, Device, Tensor};
use warpt_harness::{BenchmarkError, RunContext};
use warpt_models::clip::{self, Clip};
use warpt_models::family::Family;
use warpt_models::llm::Precision;
use warpt_models::sampling::{Budget, gib};
use warpt_models::vision::{self, Vit, VitPreset};

/// The families `vision_infer` runs.
pub const FAMILIES: &[&str] = &["vit", "clip"];

/// The family a run's parameters name: a directory's `model_type`, else
/// the `family` parameter.
pub fn family_of(dir: &str, family: &str) -> Result<Family, String> {
    let model_type = if dir.is_empty() {
        family.to_string()
    } else {
        let (raw, path) = warpt_models::hf::read_config(dir)?;
        let says = raw["model_type"].as_str().unwrap_or("").to_string();
        if !FAMILIES.contains(&says.as_str()) {
            return Err(format!(
                "parameter 'model_dir': {} says model_type '{says}'; vision_infer runs {}",
                path.display(),
                FAMILIES.join(", ")
            ));
        }
        says
    };
    match model_type.as_str() {
        "vit" => Ok(Family::Vit),
        "clip" => Ok(Family::Clip),
        other => Err(format!(
            "parameter 'family': '{other}' is not one of {}",
            FAMILIES.join(", ")
        )),
    }
}

/// Checks a directory or a preset name without loading weights.
pub fn check(dir: &str, family: Family, model: &str) -> Result<(), String> {
    match (dir.is_empty(), family) {
        (false, Family::Clip) => clip::check_dir(dir).map(|_| ()),
        (false, _) => vision::check_dir(dir).map(|_| ()),
        (true, Family::Clip) => clip::preset(model).map(|_| ()),
        (true, _) => VitPreset::parse(model).map(|_| ()),
    }
}

/// A loaded vision model.
pub enum VisionModel {
    /// A Vision Transformer.
    Vit(Vit),
    /// A CLIP, and its texts' normalised features `(texts, projection)`
    /// (boxed: a CLIP holds two towers).
    Clip(Box<Clip>, Tensor),
}

/// Bytes a run needs: the weights in the run's dtype and their f32 copy
/// while loading, and one batch's activations (the residual stream, the
/// MLP's inner width and one layer's attention scores, with room for
/// candle's copies) and images.
fn bytes_needed(params: usize, tower: (usize, usize, usize), dtype: DType, batch: usize) -> u64 {
    let (tokens, width, heads) = (tower.0 as u64, tower.1 as u64, tower.2 as u64);
    let activations = 4 * batch as u64 * (tokens * 5 * width + heads * tokens * tokens) * 4;
    params as u64 * (4 + dtype.size_in_bytes() as u64) + activations
}

/// Skipped when `need` bytes do not fit in the memory available now.
fn fits(need: u64, what: &str, precision: Precision, batch: usize) -> Result<(), BenchmarkError> {
    let budget = Budget::now();
    if budget.fits(need) {
        return Ok(());
    }
    Err(BenchmarkError::Skipped(format!(
        "the {what} at batch {batch} in {} needs about {:.1} GiB; {:.1} GiB is available \
         (a smaller model or batch runs)",
        precision.name(),
        gib(need),
        gib(budget.available)
    )))
}

impl VisionModel {
    /// The model the context's parameters name, in `precision` on
    /// `device`, with `texts` texts for a CLIP.
    pub fn load(
        ctx: &RunContext,
        family: Family,
        precision: Precision,
        device: &Device,
        texts: usize,
    ) -> Result<Self, BenchmarkError> {
        let dir = ctx.str_param("model_dir")?;
        let model = ctx.str_param("model")?;
        let batch = ctx.int_param("batch", 1)? as usize;
        let dtype = precision.dtype();
        let failed = |e: String| BenchmarkError::Failed(e);
        let invalid = |reason: String| BenchmarkError::InvalidParam {
            key: "model".into(),
            reason,
        };
        if family == Family::Clip {
            let (model, config) = if dir.is_empty() {
                let config = clip::preset(model).map_err(invalid)?;
                let v = &config.vision_config;
                let tokens = (v.image_size / v.patch_size).pow(2) + 1;
                let tower = (tokens, v.hidden_size, v.num_attention_heads);
                let need = bytes_needed(clip::parameter_count(&config), tower, dtype, batch);
                fits(need, &format!("clip {model} preset"), precision, batch)?;
                let (vb, made) = warpt_models::seeded::var_builder(ctx.seed, dtype, device);
                let scale = f64::from(config.logit_scale_init_value).exp();
                let mut clip = Clip::build(vb, config.clone(), scale, 0)
                    .map_err(|e| failed(format!("building the CLIP preset: {e}")))?;
                // The logit scale is a parameter too, passed rather than made.
                clip.parameters = made.load(std::sync::atomic::Ordering::Relaxed) + 1;
                (clip, config)
            } else {
                let config = clip::check_dir(dir).map_err(failed)?;
                (
                    Clip::load(load_tensors(dir, device)?, config.clone(), dtype, device)
                        .map_err(failed)?,
                    config,
                )
            };
            let ids = clip::synthetic_texts(&config.text_config, texts, ctx.seed);
            let len = config.text_config.max_position_embeddings;
            let features = Tensor::from_vec(ids, (texts, len), device)
                .and_then(|ids| model.text_features(&ids))
                .map_err(|e| failed(format!("encoding the texts: {e}")))?;
            return Ok(VisionModel::Clip(Box::new(model), features));
        }
        let (config, tensors) = if dir.is_empty() {
            let preset = VitPreset::parse(model).map_err(invalid)?;
            let config = preset.config();
            let tokens = (config.image_size / config.patch_size).pow(2) + 1;
            let tower = (tokens, config.hidden_size, config.num_attention_heads);
            let need = bytes_needed(vision::parameter_count(&config), tower, dtype, batch);
            fits(need, &format!("{} preset", preset.name()), precision, batch)?;
            let tensors =
                vision::generate(&config, ctx.seed, device).map_err(|e| failed(e.to_string()))?;
            (config, tensors)
        } else {
            (
                vision::check_dir(dir).map_err(failed)?,
                load_tensors(dir, device)?,
            )
        };
        Ok(VisionModel::Vit(
            Vit::load(tensors, config, dtype, device).map_err(failed)?,
        ))
    }

    /// Image channels and side.
    pub fn image_shape(&self) -> (usize, usize) {
        match self {
            VisionModel::Vit(m) => (m.config.num_channels, m.config.image_size),
            VisionModel::Clip(m, _) => {
                let v = &m.config.vision_config;
                (v.num_channels, v.image_size)
            }
        }
    }

    /// The output for `images`: a ViT's CLS features or logits, a CLIP's
    /// similarity logits per image against its texts; f32 `(batch, n)`.
    pub fn forward(&self, images: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            VisionModel::Vit(m) => m.forward(images),
            VisionModel::Clip(m, texts) => m.logits_per_image(&m.image_features(images)?, texts),
        }
    }

    /// Its family.
    pub fn family(&self) -> Family {
        match self {
            VisionModel::Vit(_) => Family::Vit,
            VisionModel::Clip(..) => Family::Clip,
        }
    }

    /// Parameters, counted from the tensors.
    pub fn parameters(&self) -> usize {
        match self {
            VisionModel::Vit(m) => m.parameters,
            VisionModel::Clip(m, _) => m.parameters,
        }
    }

    /// Image side, patch side and tokens per image.
    pub fn patches(&self) -> (usize, usize, usize) {
        let (size, patch) = match self {
            VisionModel::Vit(m) => (m.config.image_size, m.config.patch_size),
            VisionModel::Clip(m, _) => {
                let v = &m.config.vision_config;
                (v.image_size, v.patch_size)
            }
        };
        (size, patch, (size / patch).pow(2) + 1)
    }

    /// What the output is, for `details.output`.
    pub fn output(&self) -> String {
        match self {
            VisionModel::Vit(m) if m.classifies() => "classifier logits".into(),
            VisionModel::Vit(_) => "CLS features after the final LayerNorm".into(),
            VisionModel::Clip(_, texts) => format!(
                "image-text similarity logits against {} texts (exp(logit_scale) x cosine of the projected, \
                 normalised features; the texts encoded once before measuring)",
                texts.dims().first().copied().unwrap_or(0)
            ),
        }
    }
}

/// A directory's model.safetensors, on `device`.
fn load_tensors(
    dir: &str,
    device: &Device,
) -> Result<std::collections::HashMap<String, Tensor>, BenchmarkError> {
    let path = std::path::Path::new(dir).join("model.safetensors");
    candle_core::safetensors::load(&path, device)
        .map_err(|e| BenchmarkError::Failed(format!("loading {}: {e}", path.display())))
}
