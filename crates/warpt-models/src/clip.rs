//! CLIP: an image tower and a text tower projected into one space, and the
//! image-text similarity of their normalised features (zero-shot
//! classification). The towers' transformer layers are candle-transformers'
//! (`ClipEncoder`); the rest is warpt's, because candle's CLIP neither reads
//! a `config.json`, nor pools text the way transformers does for
//! checkpoints written since 2023 (the first `eos_token_id`, not the largest
//! id), nor embeds patches in bf16 or f16 on the CPU (its convolution has no
//! such kernel; here the stride-p convolution is one product, as for ViT).

use std::collections::HashMap;

use candle_core::{D, DType, Device, IndexOp, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::clip::EncoderConfig;
use candle_transformers::models::clip::text_model::{Activation, ClipEncoder, ClipTextConfig};
use candle_transformers::models::clip::vision_model::ClipVisionConfig;
use serde::Deserialize;

/// The text tower's `text_config` (transformers' defaults where a saved
/// config leaves a field out).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct TextConfig {
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Width.
    pub hidden_size: usize,
    /// MLP width.
    pub intermediate_size: usize,
    /// Layers.
    pub num_hidden_layers: usize,
    /// Attention heads.
    pub num_attention_heads: usize,
    /// Tokens per text.
    pub max_position_embeddings: usize,
    /// The MLP's activation (only `quick_gelu` runs).
    pub hidden_act: String,
    /// LayerNorm epsilon (candle's CLIP layers use 1e-5).
    pub layer_norm_eps: f64,
    /// The end-of-text token whose features represent the text; 2 in
    /// checkpoints written before 2023, where the largest id does instead.
    pub eos_token_id: u32,
}

impl Default for TextConfig {
    fn default() -> Self {
        TextConfig {
            vocab_size: 49408,
            hidden_size: 512,
            intermediate_size: 2048,
            num_hidden_layers: 12,
            num_attention_heads: 8,
            max_position_embeddings: 77,
            hidden_act: "quick_gelu".into(),
            layer_norm_eps: 1e-5,
            eos_token_id: 49407,
        }
    }
}

/// The image tower's `vision_config`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct VisionConfig {
    /// Width.
    pub hidden_size: usize,
    /// MLP width.
    pub intermediate_size: usize,
    /// Layers.
    pub num_hidden_layers: usize,
    /// Attention heads.
    pub num_attention_heads: usize,
    /// Image channels.
    pub num_channels: usize,
    /// Image side, in pixels.
    pub image_size: usize,
    /// Patch side, in pixels.
    pub patch_size: usize,
    /// The MLP's activation (only `quick_gelu` runs).
    pub hidden_act: String,
    /// LayerNorm epsilon.
    pub layer_norm_eps: f64,
}

impl Default for VisionConfig {
    fn default() -> Self {
        VisionConfig {
            hidden_size: 768,
            intermediate_size: 3072,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            num_channels: 3,
            image_size: 224,
            patch_size: 32,
            hidden_act: "quick_gelu".into(),
            layer_norm_eps: 1e-5,
        }
    }
}

/// A `clip` config.json.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// The text tower.
    #[serde(default)]
    pub text_config: TextConfig,
    /// The image tower.
    #[serde(default)]
    pub vision_config: VisionConfig,
    /// Width of the shared space.
    #[serde(default = "default_projection")]
    pub projection_dim: usize,
    /// The logit scale's logarithm when the weights hold none.
    #[serde(default = "default_logit_scale")]
    pub logit_scale_init_value: f32,
}

fn default_projection() -> usize {
    512
}

fn default_logit_scale() -> f32 {
    2.6592
}

impl Config {
    /// What warpt cannot run as transformers does, if anything.
    pub fn unsupported(&self) -> Option<String> {
        let (t, v) = (&self.text_config, &self.vision_config);
        for (tower, act, eps) in [
            ("text", &t.hidden_act, t.layer_norm_eps),
            ("vision", &v.hidden_act, v.layer_norm_eps),
        ] {
            if act != "quick_gelu" {
                return Some(format!(
                    "{tower}_config.hidden_act '{act}' is not supported (quick_gelu is)"
                ));
            }
            if (eps - 1e-5).abs() > 1e-12 {
                return Some(format!(
                    "{tower}_config.layer_norm_eps {eps} is not supported (1e-5 is)"
                ));
            }
        }
        let divides = |h: usize, n: usize| n > 0 && h.is_multiple_of(n);
        if !divides(t.hidden_size, t.num_attention_heads)
            || !divides(v.hidden_size, v.num_attention_heads)
            || !divides(v.image_size, v.patch_size)
        {
            return Some(
                "the heads must divide each tower's width and the patch size the image size".into(),
            );
        }
        None
    }

    fn text_encoder(&self) -> EncoderConfig {
        let t = &self.text_config;
        EncoderConfig::Text(ClipTextConfig {
            vocab_size: t.vocab_size,
            embed_dim: t.hidden_size,
            activation: Activation::QuickGelu,
            intermediate_size: t.intermediate_size,
            max_position_embeddings: t.max_position_embeddings,
            pad_with: None,
            num_hidden_layers: t.num_hidden_layers,
            num_attention_heads: t.num_attention_heads,
            projection_dim: self.projection_dim,
        })
    }

    fn vision_encoder(&self) -> EncoderConfig {
        let v = &self.vision_config;
        EncoderConfig::Vision(ClipVisionConfig {
            embed_dim: v.hidden_size,
            activation: Activation::QuickGelu,
            intermediate_size: v.intermediate_size,
            num_hidden_layers: v.num_hidden_layers,
            num_attention_heads: v.num_attention_heads,
            projection_dim: self.projection_dim,
            num_channels: v.num_channels,
            image_size: v.image_size,
            patch_size: v.patch_size,
        })
    }
}

fn layer_norm(vb: VarBuilder, n: usize) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(n, "weight")?,
        vb.get(n, "bias")?,
        1e-5,
    ))
}

/// A CLIP model ready to run.
pub struct Clip {
    class_embedding: Tensor,
    patch_projection: Tensor,
    image_positions: Tensor,
    pre_layrnorm: LayerNorm,
    vision: ClipEncoder,
    post_layernorm: LayerNorm,
    visual_projection: Linear,
    token_embedding: Embedding,
    text_positions: Tensor,
    text: ClipEncoder,
    final_layer_norm: LayerNorm,
    text_projection: Linear,
    logit_scale: f64,
    /// Its configuration.
    pub config: Config,
    /// Parameters, counted from the tensors.
    pub parameters: usize,
}

impl Clip {
    /// The model in `tensors` (`CLIPModel`'s names), in `dtype` on `device`.
    pub fn load(
        tensors: HashMap<String, Tensor>,
        config: Config,
        dtype: DType,
        device: &Device,
    ) -> std::result::Result<Self, String> {
        let parameters = tensors.values().map(Tensor::elem_count).sum();
        let logit_scale = match tensors.get("logit_scale") {
            Some(t) => t
                .to_dtype(DType::F32)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|e| format!("reading logit_scale: {e}"))?
                .first()
                .copied()
                .unwrap_or(config.logit_scale_init_value),
            None => config.logit_scale_init_value,
        };
        let vb = VarBuilder::from_tensors(tensors, dtype, device);
        Self::build(vb, config, f64::from(logit_scale).exp(), parameters)
            .map_err(|e| format!("building the CLIP model: {e}"))
    }

    /// The model whose tensors `vb` holds, with `logit_scale` (already
    /// exponentiated) and its parameter count.
    pub fn build(
        vb: VarBuilder,
        config: Config,
        logit_scale: f64,
        parameters: usize,
    ) -> Result<Self> {
        let (t, v) = (&config.text_config, &config.vision_config);
        let (vh, th, proj) = (v.hidden_size, t.hidden_size, config.projection_dim);
        let (p, ch) = (v.patch_size, v.num_channels);
        let patches = (v.image_size / p).pow(2);
        let vm = vb.pp("vision_model");
        let ve = vm.pp("embeddings");
        let tm = vb.pp("text_model");
        let te = tm.pp("embeddings");
        Ok(Clip {
            class_embedding: ve.get(vh, "class_embedding")?.reshape((1, 1, vh))?,
            patch_projection: ve
                .get((vh, ch, p, p), "patch_embedding.weight")?
                .reshape((vh, ch * p * p))?
                .t()?,
            image_positions: ve
                .get((patches + 1, vh), "position_embedding.weight")?
                .unsqueeze(0)?,
            pre_layrnorm: layer_norm(vm.pp("pre_layrnorm"), vh)?,
            vision: ClipEncoder::new(vm.pp("encoder"), &config.vision_encoder())?,
            post_layernorm: layer_norm(vm.pp("post_layernorm"), vh)?,
            visual_projection: Linear::new(vb.get((proj, vh), "visual_projection.weight")?, None),
            token_embedding: Embedding::new(
                te.get((t.vocab_size, th), "token_embedding.weight")?,
                th,
            ),
            text_positions: te.get((t.max_position_embeddings, th), "position_embedding.weight")?,
            text: ClipEncoder::new(tm.pp("encoder"), &config.text_encoder())?,
            final_layer_norm: layer_norm(tm.pp("final_layer_norm"), th)?,
            text_projection: Linear::new(vb.get((proj, th), "text_projection.weight")?, None),
            logit_scale,
            config,
            parameters,
        })
    }

    /// The image features of `images` `(batch, channels, size, size)` in the
    /// shared space, L2-normalised, f32 `(batch, projection_dim)`.
    pub fn image_features(&self, images: &Tensor) -> Result<Tensor> {
        let b = images.dim(0)?;
        let h = self.config.vision_config.hidden_size;
        let p = self.config.vision_config.patch_size;
        let tokens =
            crate::vision::patch_tokens(images, p)?.broadcast_matmul(&self.patch_projection)?;
        let cls = self.class_embedding.broadcast_as((b, 1, h))?;
        let x = Tensor::cat(&[&cls, &tokens], 1)?.broadcast_add(&self.image_positions)?;
        let x = self.vision.forward(&self.pre_layrnorm.forward(&x)?, None)?;
        let pooled = self.post_layernorm.forward(&x.i((.., 0, ..))?)?;
        normalised(&self.visual_projection.forward(&pooled)?)
    }

    /// The text features of token ids `(texts, max_position_embeddings)`
    /// in the shared space, L2-normalised, f32 `(texts, projection_dim)`:
    /// each text's features at its end-of-text token, found as
    /// transformers finds it.
    pub fn text_features(&self, ids: &Tensor) -> Result<Tensor> {
        let (n, len) = ids.dims2()?;
        let x = self
            .token_embedding
            .forward(ids)?
            .broadcast_add(&self.text_positions.narrow(0, 0, len)?)?;
        let causal: Vec<f32> = (0..len)
            .flat_map(|i| (0..len).map(move |j| if j > i { f32::NEG_INFINITY } else { 0.0 }))
            .collect();
        let mask = Tensor::from_vec(causal, (1, 1, len, len), ids.device())?;
        let x = self
            .final_layer_norm
            .forward(&self.text.forward(&x, Some(&mask))?)?;
        let rows = ids.to_vec2::<u32>()?;
        let pooled = rows
            .iter()
            .enumerate()
            .map(|(i, row)| x.i((i, self.eos_position(row)))?.unsqueeze(0))
            .collect::<Result<Vec<_>>>()?;
        let pooled = Tensor::cat(&pooled, 0)?;
        debug_assert_eq!(pooled.dim(0)?, n);
        normalised(&self.text_projection.forward(&pooled)?)
    }

    /// Where a text's features are read: its first `eos_token_id` (the
    /// start when it has none), or for checkpoints whose config says 2 its
    /// largest id, as transformers reads them.
    pub fn eos_position(&self, ids: &[u32]) -> usize {
        let eos = self.config.text_config.eos_token_id;
        if eos == 2 {
            // The first of the largest, as torch's argmax.
            let max = ids.iter().copied().max().unwrap_or(0);
            ids.iter().position(|&t| t == max).unwrap_or(0)
        } else {
            ids.iter().position(|&t| t == eos).unwrap_or(0)
        }
    }

    /// `exp(logit_scale)`, what the cosines are multiplied by.
    pub fn logit_scale(&self) -> f64 {
        self.logit_scale
    }

    /// The similarity logits of normalised image features against
    /// normalised text features: `exp(logit_scale) × cos`, `(images, texts)`.
    pub fn logits_per_image(&self, images: &Tensor, texts: &Tensor) -> Result<Tensor> {
        images.matmul(&texts.t()?)? * self.logit_scale
    }
}

/// `x` in f32, each row divided by its L2 norm.
fn normalised(x: &Tensor) -> Result<Tensor> {
    let x = x.to_dtype(DType::F32)?;
    let norm = x.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?;
    x.broadcast_div(&norm)
}

/// `n` synthetic texts for configuration `c`, from the seed: random ids
/// below the end-of-text token, which closes each text (so it is where
/// the features are read under either rule).
pub fn synthetic_texts(c: &TextConfig, n: usize, seed: u64) -> Vec<u32> {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7465_7874);
    let len = c.max_position_embeddings;
    let vocab = c.vocab_size as u32;
    // Under the old rule the end token must be the largest id: the last.
    let (eos, top) = if c.eos_token_id == 2 {
        (vocab - 1, vocab - 1)
    } else {
        (c.eos_token_id, vocab)
    };
    // Ids from 3 below `top`, never the end token.
    let span = u64::from(top - 3 - u32::from(eos < top)).max(1);
    (0..n)
        .flat_map(|_| {
            let mut row: Vec<u32> = (0..len - 1)
                .map(|_| {
                    let t = 3 + (rng.next_u64() % span) as u32;
                    if t >= eos { t + 1 } else { t }
                })
                .collect();
            row.push(eos);
            row
        })
        .collect()
}

/// The presets `model` names, by the image tower's shape (the text tower
/// as CLIP paired it): tiny = ViT-Ti/16 with a 256-wide, 4-layer text
/// tower; small = ViT-S/16 with a 384-wide one; base = OpenAI's
/// ViT-B/32; large = OpenAI's ViT-L/14; xl = OpenCLIP's ViT-H/14.
pub const PRESETS: [&str; 5] = ["tiny", "small", "base", "large", "xl"];

/// The configuration of preset `name`.
pub fn preset(name: &str) -> std::result::Result<Config, String> {
    // (vision width, layers, heads, patch; text width, layers, heads; projection)
    let (vw, vl, vh, p, tw, tl, th, proj) = match name {
        "tiny" => (192, 12, 3, 16, 256, 4, 4, 256),
        "small" => (384, 12, 6, 16, 384, 12, 6, 384),
        "base" => (768, 12, 12, 32, 512, 12, 8, 512),
        "large" => (1024, 24, 16, 14, 768, 12, 12, 768),
        "xl" => (1280, 32, 16, 14, 1024, 24, 16, 1024),
        other => {
            return Err(format!(
                "parameter 'model': '{other}' is not one of {}",
                PRESETS.join(", ")
            ));
        }
    };
    Ok(Config {
        text_config: TextConfig {
            hidden_size: tw,
            intermediate_size: 4 * tw,
            num_hidden_layers: tl,
            num_attention_heads: th,
            ..TextConfig::default()
        },
        vision_config: VisionConfig {
            hidden_size: vw,
            intermediate_size: 4 * vw,
            num_hidden_layers: vl,
            num_attention_heads: vh,
            patch_size: p,
            ..VisionConfig::default()
        },
        projection_dim: proj,
        logit_scale_init_value: default_logit_scale(),
    })
}

/// Parameters of configuration `c`, counted from its shapes.
pub fn parameter_count(c: &Config) -> usize {
    let layer = |h: usize, m: usize| 4 * (h * h + h) + 2 * h * m + h + m + 4 * h;
    let (t, v) = (&c.text_config, &c.vision_config);
    let patches = (v.image_size / v.patch_size.max(1)).pow(2);
    let vision = v.hidden_size * (1 + v.num_channels * v.patch_size.pow(2) + patches + 1)
        + 4 * v.hidden_size
        + v.num_hidden_layers * layer(v.hidden_size, v.intermediate_size);
    let text = t.hidden_size * (t.vocab_size + t.max_position_embeddings)
        + 2 * t.hidden_size
        + t.num_hidden_layers * layer(t.hidden_size, t.intermediate_size);
    vision + text + c.projection_dim * (v.hidden_size + t.hidden_size) + 1
}

/// The configuration in a `clip` directory's config.json, checked.
pub fn check_dir(dir: &str) -> std::result::Result<Config, String> {
    let (raw, path) = crate::hf::read_config(dir)?;
    let c: Config = crate::hf::single_file_config(dir, raw, &path, "clip", "vision_infer")?;
    if let Some(why) = c.unsupported() {
        return Err(format!("parameter 'model_dir': {}: {why}", path.display()));
    }
    Ok(c)
}
