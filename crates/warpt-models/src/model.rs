//! Llama-architecture decoder presets and their weights, generated from the
//! seed: the same model on every machine with nothing to download.
//!
//! Tensor names and shapes are Hugging Face's (`model.layers.N.self_attn.
//! q_proj.weight` as `[out, in]`), so the same weights load in candle, in the
//! plain f64 reference and, written as safetensors, in PyTorch.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::llama;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The shape of a Llama-architecture model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Tokens in the vocabulary.
    pub vocab: usize,
    /// Hidden size (the residual stream's width).
    pub hidden: usize,
    /// MLP inner width.
    pub intermediate: usize,
    /// Decoder layers.
    pub layers: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention when fewer than `heads`).
    pub kv_heads: usize,
    /// Dimension of one attention head: `hidden / heads` in every preset
    /// and Llama, set apart in some families (Gemma, Qwen3).
    pub head_dim: usize,
    /// Longest sequence (prompt plus generated tokens).
    pub context: usize,
}

/// The tiny Llama the crate's unit tests write and read (GGUF, safetensors).
#[cfg(test)]
pub(crate) const TEST_SHAPE: Shape = Shape {
    vocab: 64,
    hidden: 32,
    intermediate: 64,
    layers: 2,
    heads: 4,
    kv_heads: 2,
    head_dim: 8,
    context: 128,
};

/// The longest context a model file may declare: rotary tables and masks
/// are sized from it before anything else is known (a million positions
/// take half a gigabyte of tables).
pub const MAX_CONTEXT: usize = 1 << 20;

/// RMSNorm epsilon of every preset (Llama 2's).
pub const RMS_EPS: f64 = 1e-5;
/// RoPE base of every preset.
pub const ROPE_THETA: f32 = 10_000.0;
/// Standard deviation of the generated linear and embedding weights (Hugging
/// Face's `initializer_range`).
const INIT_STD: f64 = 0.02;

/// The model presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// About 10 M parameters: quick, and small enough for the f64 reference.
    Tiny,
    /// About 34 M parameters: a small Llama of the size people test
    /// with (six 384-wide layers, a 32000-token vocabulary).
    Mini,
    /// About 110 M parameters, with a 16384-token context (room for
    /// 8192-token prompts).
    Small,
    /// About 1.1 B parameters: TinyLlama-1.1B's shape.
    Base,
    /// About 6.7 B parameters: Llama-2-7B's shape.
    Large,
    /// About 13 B parameters: Llama-2-13B's shape.
    Xl,
    /// The family's largest released dense shape (Llama 3.1 405B, Mistral
    /// Large 2, Qwen2-72B, Qwen3-32B, Phi-3-medium, Gemma 7B, Gemma 2 27B,
    /// gpt2-xl, T5-11B; see [`crate::family_presets`]): what a data-centre
    /// node serves, refused with the memory it needs where it does not fit.
    Xxl,
}

impl Preset {
    /// Every preset, smallest first.
    pub const ALL: [Preset; 7] = [
        Preset::Tiny,
        Preset::Mini,
        Preset::Small,
        Preset::Base,
        Preset::Large,
        Preset::Xl,
        Preset::Xxl,
    ];

    /// Every preset's name, smallest first (the `model` parameter's
    /// choices).
    pub const NAMES: [&'static str; 7] = ["tiny", "mini", "small", "base", "large", "xl", "xxl"];

    /// The preset called `name`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "tiny" => Ok(Preset::Tiny),
            "mini" => Ok(Preset::Mini),
            "small" => Ok(Preset::Small),
            "base" => Ok(Preset::Base),
            "large" => Ok(Preset::Large),
            "xl" => Ok(Preset::Xl),
            "xxl" => Ok(Preset::Xxl),
            other => Err(format!(
                "parameter 'model': unknown preset '{other}' (known: {})",
                Preset::NAMES.join(", ")
            )),
        }
    }

    /// The preset's name.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Tiny => "tiny",
            Preset::Mini => "mini",
            Preset::Small => "small",
            Preset::Base => "base",
            Preset::Large => "large",
            Preset::Xl => "xl",
            Preset::Xxl => "xxl",
        }
    }

    /// The preset's shape.
    pub fn shape(self) -> Shape {
        match self {
            Preset::Tiny => Shape {
                vocab: 8192,
                hidden: 256,
                intermediate: 768,
                layers: 6,
                heads: 8,
                kv_heads: 4,
                head_dim: 32,
                context: 2048,
            },
            Preset::Mini => Shape {
                vocab: 32_000,
                hidden: 384,
                intermediate: 1024,
                layers: 6,
                heads: 6,
                kv_heads: 2,
                head_dim: 64,
                context: 2048,
            },
            Preset::Small => Shape {
                vocab: 32_000,
                hidden: 768,
                intermediate: 1536,
                layers: 12,
                heads: 12,
                kv_heads: 4,
                head_dim: 64,
                // Room for long-context runs (prompt_tokens=8192 and the
                // tokens generated after it).
                context: 16_384,
            },
            Preset::Base => Shape {
                vocab: 32_000,
                hidden: 2048,
                intermediate: 5632,
                layers: 22,
                heads: 32,
                kv_heads: 4,
                head_dim: 64,
                context: 2048,
            },
            Preset::Large => Shape {
                vocab: 32_000,
                hidden: 4096,
                intermediate: 11_008,
                layers: 32,
                heads: 32,
                kv_heads: 32,
                head_dim: 128,
                context: 4096,
            },
            Preset::Xl => Shape {
                vocab: 32_000,
                hidden: 5120,
                intermediate: 13_824,
                layers: 40,
                heads: 40,
                kv_heads: 40,
                head_dim: 128,
                context: 4096,
            },
            // Llama 3.1 405B's config.json.
            Preset::Xxl => Shape {
                vocab: 128_256,
                hidden: 16_384,
                intermediate: 53_248,
                layers: 126,
                heads: 128,
                kv_heads: 8,
                head_dim: 128,
                context: 131_072,
            },
        }
    }
}

impl Shape {
    /// Parameters, counted from the tensor list (before anything exists).
    pub fn parameters(&self) -> usize {
        self.tensors()
            .iter()
            .map(|(_, d)| d.iter().product::<usize>())
            .sum()
    }

    /// One line for `describe`.
    pub fn describe(&self) -> String {
        format!(
            "vocab {}, hidden {}, MLP {}, {} layers, {} heads ({} KV), context {}: {} parameters",
            self.vocab,
            self.hidden,
            self.intermediate,
            self.layers,
            self.heads,
            self.kv_heads,
            self.context,
            self.parameters()
        )
    }

    /// Every tensor's Hugging Face name and shape, embeddings first.
    pub fn tensors(&self) -> Vec<(String, Vec<usize>)> {
        let (h, q, kv) = (
            self.hidden,
            self.heads * self.head_dim,
            self.kv_heads * self.head_dim,
        );
        let mut t = vec![("model.embed_tokens.weight".to_string(), vec![self.vocab, h])];
        for i in 0..self.layers {
            let p = format!("model.layers.{i}");
            t.push((format!("{p}.input_layernorm.weight"), vec![h]));
            t.push((format!("{p}.self_attn.q_proj.weight"), vec![q, h]));
            t.push((format!("{p}.self_attn.k_proj.weight"), vec![kv, h]));
            t.push((format!("{p}.self_attn.v_proj.weight"), vec![kv, h]));
            t.push((format!("{p}.self_attn.o_proj.weight"), vec![h, q]));
            t.push((format!("{p}.post_attention_layernorm.weight"), vec![h]));
            t.push((
                format!("{p}.mlp.gate_proj.weight"),
                vec![self.intermediate, h],
            ));
            t.push((
                format!("{p}.mlp.up_proj.weight"),
                vec![self.intermediate, h],
            ));
            t.push((
                format!("{p}.mlp.down_proj.weight"),
                vec![h, self.intermediate],
            ));
        }
        t.push(("model.norm.weight".to_string(), vec![h]));
        t.push(("lm_head.weight".to_string(), vec![self.vocab, h]));
        t
    }

    /// candle-transformers' configuration for this shape.
    pub fn candle_config(&self) -> llama::Config {
        llama::Config {
            hidden_size: self.hidden,
            intermediate_size: self.intermediate,
            vocab_size: self.vocab,
            num_hidden_layers: self.layers,
            num_attention_heads: self.heads,
            num_key_value_heads: self.kv_heads,
            use_flash_attn: false,
            rms_norm_eps: RMS_EPS,
            rope_theta: ROPE_THETA,
            bos_token_id: None,
            eos_token_id: None,
            rope_scaling: None,
            max_position_embeddings: self.context,
            tie_word_embeddings: false,
        }
    }
}

/// The preset of `all` that `name_of` calls `name`, or an error for
/// parameter `model` that lists the known names.
pub fn preset_named<P: Copy>(
    all: &[P],
    name: &str,
    name_of: impl Fn(P) -> &'static str,
) -> Result<P, String> {
    all.iter()
        .copied()
        .find(|p| name_of(*p) == name)
        .ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|p| name_of(*p)).collect();
            format!(
                "parameter 'model': unknown preset '{name}' (known: {})",
                known.join(", ")
            )
        })
}

/// One tensor's values, generated from the seed and the tensor's name alone
/// (so tensors can be made in any order, in parallel, and again by the
/// reference): norm weights near 1 (N(1, 0.1²)), everything else N(0, 0.02²).
pub fn tensor_values(seed: u64, name: &str, len: usize) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ h);
    let mut uniform = move || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    // LayerNorm and RMSNorm scales: `…norm.weight`, ViT's
    // `layernorm_before.weight`, CLIP's `layer_norm1.weight` and
    // `pre_layrnorm.weight`.
    let lower = name.to_ascii_lowercase();
    let stem = lower
        .strip_suffix(".weight")
        .map(|s| s.trim_end_matches(|c: char| c.is_ascii_digit()));
    let norm = stem
        .is_some_and(|s| s.ends_with("norm") || s.contains("layernorm") || s.contains("layrnorm"));
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        // Box-Muller: two normals per pair of uniforms.
        let r = (-2.0 * uniform().ln()).sqrt();
        let a = std::f64::consts::TAU * uniform();
        for z in [r * a.cos(), r * a.sin()] {
            if out.len() < len {
                out.push(if norm { 1.0 + 0.1 * z } else { INIT_STD * z } as f32);
            }
        }
    }
    out
}

/// Every tensor of `shape` generated from `seed`, in f32 on `device`, made
/// on all cores.
pub fn generate(
    shape: &Shape,
    seed: u64,
    device: &Device,
) -> candle_core::Result<HashMap<String, Tensor>> {
    generate_tensors(&shape.tensors(), seed, device)
}

/// The tensors `specs` names (name and shape) generated from `seed` by
/// [`tensor_values`], in f32 on `device`, made on all cores.
pub fn generate_tensors(
    specs: &[(String, Vec<usize>)],
    seed: u64,
    device: &Device,
) -> candle_core::Result<HashMap<String, Tensor>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let made: Vec<Vec<(usize, Vec<f32>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((name, dims)) = specs.get(i) else {
                            break mine;
                        };
                        mine.push((i, tensor_values(seed, name, dims.iter().product())));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut map = HashMap::with_capacity(specs.len());
    for (i, values) in made.into_iter().flatten() {
        let (name, dims) = &specs[i];
        map.insert(
            name.clone(),
            Tensor::from_vec(values, dims.as_slice(), device)?,
        );
    }
    if map.len() != specs.len() {
        candle_core::bail!("a weight-generating thread panicked");
    }
    Ok(map)
}

/// Parameters and bytes of `tensors` stored as `dtype`.
pub fn count(tensors: &HashMap<String, Tensor>, dtype: DType) -> (usize, usize) {
    let params: usize = tensors.values().map(Tensor::elem_count).sum();
    (params, params * dtype.size_in_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_the_parameter_counts_they_claim() {
        let count = |p: Preset| -> usize {
            p.shape()
                .tensors()
                .iter()
                .map(|(_, d)| d.iter().product::<usize>())
                .sum()
        };
        assert!((8_000_000..12_000_000).contains(&count(Preset::Tiny)));
        assert!((33_000_000..35_000_000).contains(&count(Preset::Mini)));
        assert_eq!(Preset::ALL.map(Preset::name), Preset::NAMES);
        for (a, b) in Preset::ALL.iter().zip(&Preset::ALL[1..]) {
            assert!(count(*a) < count(*b), "{a:?} is not smaller than {b:?}");
        }
        assert!((100_000_000..120_000_000).contains(&count(Preset::Small)));
        // TinyLlama-1.1B: 1 100 048 384 parameters.
        assert_eq!(count(Preset::Base), 1_100_048_384);
        assert!(
            Preset::parse("huge")
                .unwrap_err()
                .contains("tiny, mini, small, base, large, xl")
        );
    }

    #[test]
    fn weights_depend_on_seed_and_name_only() {
        let a = tensor_values(1, "lm_head.weight", 1000);
        assert_eq!(a, tensor_values(1, "lm_head.weight", 1000));
        assert_ne!(a, tensor_values(2, "lm_head.weight", 1000));
        let mean = a.iter().map(|&x| x as f64).sum::<f64>() / 1000.0;
        let sd = (a.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / 999.0).sqrt();
        assert!(
            mean.abs() < 0.003 && (sd - 0.02).abs() < 0.002,
            "{mean} {sd}"
        );
        let n = tensor_values(1, "model.norm.weight", 1000);
        assert!(n.iter().all(|&x| (0.4..1.6).contains(&x)));
    }
}
