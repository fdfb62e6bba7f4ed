//! Vision Transformers (ViT): presets by size with weights from the seed,
//! Hugging Face `vit` directories, the forward pass (candle-transformers'
//! ViT embeddings and encoder, then the final LayerNorm: the CLS token's
//! features, or a classifier's logits when the checkpoint has one), and a
//! plain f64 forward pass that checks it.

use std::collections::HashMap;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{LayerNorm, Linear, VarBuilder};
use candle_transformers::models::vit;

use crate::bert::{attend, erf, layer_norm};
use crate::model::tensor_values;

/// A ViT size: the shapes of the ViT paper's models at 224 × 224, 16 × 16
/// patches (tiny and small from DeiT; xl is ViT-H/14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VitPreset {
    /// ViT-Ti/16, about 5.7 M parameters.
    Tiny,
    /// ViT-S/16, about 22 M.
    Small,
    /// ViT-B/16, about 86 M.
    Base,
    /// ViT-L/16, about 304 M.
    Large,
    /// ViT-H/14, about 632 M.
    Xl,
}

impl VitPreset {
    /// Every preset, smallest first.
    pub const ALL: [VitPreset; 5] = [
        VitPreset::Tiny,
        VitPreset::Small,
        VitPreset::Base,
        VitPreset::Large,
        VitPreset::Xl,
    ];

    /// The preset called `name`.
    pub fn parse(name: &str) -> Result<Self, String> {
        crate::model::preset_named(&Self::ALL, name, Self::name)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            VitPreset::Tiny => "tiny",
            VitPreset::Small => "small",
            VitPreset::Base => "base",
            VitPreset::Large => "large",
            VitPreset::Xl => "xl",
        }
    }

    /// Its configuration (224 × 224 RGB images, biases on q/k/v, exact GELU).
    pub fn config(self) -> vit::Config {
        let (hidden, layers, heads, patch) = match self {
            VitPreset::Tiny => (192, 12, 3, 16),
            VitPreset::Small => (384, 12, 6, 16),
            VitPreset::Base => (768, 12, 12, 16),
            VitPreset::Large => (1024, 24, 16, 16),
            VitPreset::Xl => (1280, 32, 16, 14),
        };
        vit::Config {
            hidden_size: hidden,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            intermediate_size: 4 * hidden,
            hidden_act: candle_nn::Activation::Gelu,
            layer_norm_eps: 1e-12,
            image_size: 224,
            patch_size: patch,
            num_channels: 3,
            qkv_bias: true,
        }
    }
}

/// Every tensor of a ViT backbone of configuration `c` (Hugging Face's
/// `ViTModel` names, without the pooler) and its shape.
pub fn tensors(c: &vit::Config) -> Vec<(String, Vec<usize>)> {
    let (h, i, p) = (c.hidden_size, c.intermediate_size, c.patch_size);
    let patches = (c.image_size / p).pow(2);
    let mut t = vec![
        ("embeddings.cls_token".to_string(), vec![1, 1, h]),
        (
            "embeddings.position_embeddings".to_string(),
            vec![1, patches + 1, h],
        ),
        (
            "embeddings.patch_embeddings.projection.weight".to_string(),
            vec![h, c.num_channels, p, p],
        ),
        (
            "embeddings.patch_embeddings.projection.bias".to_string(),
            vec![h],
        ),
    ];
    for l in 0..c.num_hidden_layers {
        let e = format!("encoder.layer.{l}");
        for name in ["query", "key", "value"] {
            t.push((format!("{e}.attention.attention.{name}.weight"), vec![h, h]));
            t.push((format!("{e}.attention.attention.{name}.bias"), vec![h]));
        }
        t.push((format!("{e}.attention.output.dense.weight"), vec![h, h]));
        t.push((format!("{e}.attention.output.dense.bias"), vec![h]));
        t.push((format!("{e}.intermediate.dense.weight"), vec![i, h]));
        t.push((format!("{e}.intermediate.dense.bias"), vec![i]));
        t.push((format!("{e}.output.dense.weight"), vec![h, i]));
        t.push((format!("{e}.output.dense.bias"), vec![h]));
        for norm in ["layernorm_before", "layernorm_after"] {
            t.push((format!("{e}.{norm}.weight"), vec![h]));
            t.push((format!("{e}.{norm}.bias"), vec![h]));
        }
    }
    t.push(("layernorm.weight".to_string(), vec![h]));
    t.push(("layernorm.bias".to_string(), vec![h]));
    t
}

/// Parameters of a ViT backbone of configuration `c`, from its tensor list
/// (what `details.parameters` reports before anything is allocated).
pub fn parameter_count(c: &vit::Config) -> usize {
    tensors(c)
        .iter()
        .map(|(_, d)| d.iter().product::<usize>())
        .sum()
}

/// The seeded weights of configuration `c`, f32 on `device`.
pub fn generate(
    c: &vit::Config,
    seed: u64,
    device: &Device,
) -> candle_core::Result<HashMap<String, Tensor>> {
    crate::model::generate_tensors(&tensors(c), seed, device)
}

/// The configuration in a `vit` directory's config.json, checked.
pub fn check_dir(dir: &str) -> Result<vit::Config, String> {
    let (raw, path) = crate::hf::read_config(dir)?;
    let c: vit::Config = crate::hf::single_file_config(dir, raw, &path, "vit", "vision_infer")?;
    if c.num_attention_heads == 0
        || !c.hidden_size.is_multiple_of(c.num_attention_heads)
        || c.patch_size == 0
        || !c.image_size.is_multiple_of(c.patch_size)
    {
        return Err(format!(
            "parameter 'model_dir': {}: the heads must divide hidden_size and the patch size image_size",
            path.display()
        ));
    }
    Ok(c)
}

/// A ViT ready to run: backbone, final LayerNorm, and a classifier when
/// the checkpoint has one. The patch embedding is warpt's: the stride-p
/// convolution as one product of the patches with the projection (candle's
/// CPU convolution has no bf16 or f16 kernel).
pub struct Vit {
    cls: Tensor,
    positions: Tensor,
    projection: Tensor,
    projection_bias: Tensor,
    encoder: vit::Encoder,
    layernorm: LayerNorm,
    classifier: Option<Linear>,
    /// Its configuration.
    pub config: vit::Config,
    /// Parameters, counted from the tensors.
    pub parameters: usize,
}

impl Vit {
    /// The model in `tensors` (names of `ViTModel`, or of
    /// `ViTForImageClassification` with their `vit.` prefix and classifier),
    /// in `dtype` on `device`.
    pub fn load(
        tensors: HashMap<String, Tensor>,
        config: vit::Config,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, String> {
        let tensors: HashMap<String, Tensor> = tensors
            .into_iter()
            .filter(|(k, _)| !k.starts_with("pooler."))
            .map(|(k, v)| (k.strip_prefix("vit.").unwrap_or(&k).to_string(), v))
            .collect();
        let parameters = tensors.values().map(Tensor::elem_count).sum();
        let has_classifier = tensors.contains_key("classifier.weight");
        let labels = tensors
            .get("classifier.weight")
            .map_or(0, |t| t.dims().first().copied().unwrap_or(0));
        let vb = VarBuilder::from_tensors(tensors, dtype, device);
        let build = |e: candle_core::Error| format!("building the ViT: {e}");
        let h = config.hidden_size;
        let layernorm = LayerNorm::new(
            vb.get(h, "layernorm.weight").map_err(build)?,
            vb.get(h, "layernorm.bias").map_err(build)?,
            config.layer_norm_eps,
        );
        let (p, ch) = (config.patch_size, config.num_channels);
        let patches = (config.image_size / p).pow(2);
        let e = vb.pp("embeddings");
        Ok(Vit {
            cls: e.get((1, 1, h), "cls_token").map_err(build)?,
            positions: e
                .get((1, patches + 1, h), "position_embeddings")
                .map_err(build)?,
            projection: e
                .get((h, ch, p, p), "patch_embeddings.projection.weight")
                .and_then(|w| w.reshape((h, ch * p * p)))
                .and_then(|w| w.t())
                .map_err(build)?,
            projection_bias: e
                .get(h, "patch_embeddings.projection.bias")
                .map_err(build)?,
            encoder: vit::Encoder::new(&config, vb.pp("encoder")).map_err(build)?,
            layernorm,
            classifier: has_classifier
                .then(|| candle_nn::linear(h, labels, vb.pp("classifier")))
                .transpose()
                .map_err(build)?,
            config,
            parameters,
        })
    }

    /// Whether the output is a classifier's logits (else CLS features).
    pub fn classifies(&self) -> bool {
        self.classifier.is_some()
    }

    /// The output for images `(batch, channels, size, size)`: the CLS
    /// token's features after the final LayerNorm, through the classifier
    /// when there is one; f32 `(batch, width)`.
    pub fn forward(&self, images: &Tensor) -> candle_core::Result<Tensor> {
        let b = images.dim(0)?;
        let tokens = patch_tokens(images, self.config.patch_size)?
            .broadcast_matmul(&self.projection)?
            .broadcast_add(&self.projection_bias)?;
        let cls = self.cls.broadcast_as((b, 1, self.config.hidden_size))?;
        let x = Tensor::cat(&[&cls, &tokens], 1)?.broadcast_add(&self.positions)?;
        let x = self.encoder.forward(&x)?;
        let cls = self.layernorm.forward(&x.narrow(1, 0, 1)?.squeeze(1)?)?;
        let out = match &self.classifier {
            Some(c) => c.forward(&cls)?,
            None => cls,
        };
        out.to_dtype(DType::F32)
    }
}

/// Images `(b, c, side·p, side·p)` as their `p × p` patches, row-major,
/// each flattened channel-first: `(b, side², c·p·p)`. Times the projection
/// `(c·p·p, width)`, this is a stride-p convolution's output.
pub fn patch_tokens(images: &Tensor, p: usize) -> candle_core::Result<Tensor> {
    let (b, ch, s, _) = images.dims4()?;
    let side = s / p;
    images
        .reshape((b, ch, side, p, side, p))?
        .permute((0, 2, 4, 1, 3, 5))?
        .reshape((b, side * side, ch * p * p))
}

/// `batch` synthetic images of `channels × size × size` from the seed:
/// pixels uniform in [0, 1), normalised as ViT's image processor does (mean
/// 0.5, standard deviation 0.5), `(batch, channels, size, size)` f32.
pub fn synthetic_images(channels: usize, size: usize, batch: usize, seed: u64) -> Vec<f32> {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x696d_6167_6573);
    let n = batch * channels * size * size;
    (0..n)
        .map(|_| {
            let u = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
            (u - 0.5) / 0.5
        })
        .collect()
}

/// The plain f64 forward pass of the seeded backbone of configuration `c`
/// on one image (`channels × size × size` values): the CLS features after
/// the final LayerNorm.
pub fn reference(c: &vit::Config, seed: u64, image: &[f32]) -> Vec<f64> {
    let w: HashMap<String, Vec<f64>> = tensors(c)
        .into_iter()
        .map(|(name, dims)| {
            let v = tensor_values(seed, &name, dims.iter().product());
            (name, v.into_iter().map(f64::from).collect())
        })
        .collect();
    let get = |n: &str| w.get(n).map_or(&[][..], Vec::as_slice);
    let (h, heads, p, s) = (
        c.hidden_size,
        c.num_attention_heads,
        c.patch_size,
        c.image_size,
    );
    let linear = |name: &str, x: &[f64]| -> Vec<f64> {
        let (wt, b) = (get(&format!("{name}.weight")), get(&format!("{name}.bias")));
        wt.chunks_exact(x.len())
            .zip(b)
            .map(|(row, bb)| row.iter().zip(x).map(|(a, v)| a * v).sum::<f64>() + bb)
            .collect()
    };
    let norm = |x: &[f64], name: &str| -> Vec<f64> {
        let mut y = x.to_vec();
        layer_norm(
            &mut y,
            get(&format!("{name}.weight")),
            get(&format!("{name}.bias")),
            c.layer_norm_eps,
        );
        y
    };
    // Tokens: CLS, then each patch (row-major) through the projection
    // (a convolution of stride p: one dot product per output channel).
    let pos = get("embeddings.position_embeddings");
    let proj = get("embeddings.patch_embeddings.projection.weight");
    let proj_b = get("embeddings.patch_embeddings.projection.bias");
    let side = s / p;
    let mut xs: Vec<Vec<f64>> = vec![
        (0..h)
            .map(|d| get("embeddings.cls_token")[d] + pos[d])
            .collect(),
    ];
    for py in 0..side {
        for px in 0..side {
            let mut patch = Vec::with_capacity(c.num_channels * p * p);
            for ch in 0..c.num_channels {
                for y in 0..p {
                    for x in 0..p {
                        let at = (ch * s + py * p + y) * s + px * p + x;
                        patch.push(f64::from(image[at]));
                    }
                }
            }
            let t = 1 + py * side + px;
            xs.push(
                (0..h)
                    .map(|d| {
                        let row = &proj[d * patch.len()..(d + 1) * patch.len()];
                        row.iter().zip(&patch).map(|(a, b)| a * b).sum::<f64>()
                            + proj_b[d]
                            + pos[t * h + d]
                    })
                    .collect(),
            );
        }
    }
    for l in 0..c.num_hidden_layers {
        let e = format!("encoder.layer.{l}");
        let normed: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| norm(x, &format!("{e}.layernorm_before")))
            .collect();
        let proj = |name: &str| -> Vec<Vec<f64>> {
            normed
                .iter()
                .map(|x| linear(&format!("{e}.attention.attention.{name}"), x))
                .collect()
        };
        let (q, k, v) = (proj("query"), proj("key"), proj("value"));
        let mut next = Vec::with_capacity(xs.len());
        for (t, x) in xs.iter().enumerate() {
            let ctx = attend(&q[t], &k, &v, heads);
            let mut a = linear(&format!("{e}.attention.output.dense"), &ctx);
            a.iter_mut().zip(x).for_each(|(o, r)| *o += r);
            let inner: Vec<f64> = linear(
                &format!("{e}.intermediate.dense"),
                &norm(&a, &format!("{e}.layernorm_after")),
            )
            .into_iter()
            .map(|z| 0.5 * z * (1.0 + erf(z / std::f64::consts::SQRT_2)))
            .collect();
            let mut o = linear(&format!("{e}.output.dense"), &inner);
            o.iter_mut().zip(&a).for_each(|(o, r)| *o += r);
            next.push(o);
        }
        xs = next;
    }
    norm(&xs[0], "layernorm")
}
