//! The size presets (`model=tiny..xl`) of every family `llm_infer` runs,
//! as the config.json a checkpoint of that family and size would carry, so
//! a preset is built exactly as a `model_dir` of the family is (weights
//! from the seed instead of a file):
//!
//! - Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma and Gemma 2 take the Llama
//!   presets' widths ([`Preset::shape`]) in their own blocks (Gemma's
//!   GELU MLP and tied embeddings, Gemma 2's soft-capping, Qwen2's biases,
//!   Qwen3's q/k norms, Phi-3's fused projections);
//! - GPT-2 takes GPT-2's released sizes: small = gpt2 (124 M), base =
//!   gpt2-medium, large = gpt2-large, xl = gpt2-xl (1.5 B);
//! - T5 takes T5's: small = t5-small, base = t5-base, large = t5-large,
//!   xl = t5-3b, xxl = t5-11b;
//! - `xxl` is each family's largest released dense model (Llama 3.1 405B,
//!   Mistral Large 2, Qwen2-72B, Qwen3-32B, Phi-3-medium, Gemma 7B, Gemma
//!   2 27B; GPT-2's is gpt2-xl, the same as `xl`), which few machines hold:
//!   `llm_infer` skips it with the memory it needs where it does not fit.

use crate::family::Family;
use crate::model::{Preset, Shape};

/// The config.json of `family`'s `preset`.
pub fn preset_config(family: Family, preset: Preset) -> serde_json::Value {
    let shape = match preset {
        Preset::Xxl => largest(family),
        _ => preset.shape(),
    };
    match family {
        Family::Gpt2 => gpt2(preset),
        Family::T5 => t5(preset),
        _ => decoder(family, &shape),
    }
}

/// `family`'s largest released dense model, from its config.json (`xxl`;
/// GPT-2 and T5 have their own tables below).
fn largest(family: Family) -> Shape {
    let (vocab, hidden, intermediate, layers, heads, kv_heads, head_dim) = match family {
        // Mistral Large 2 (Mistral-Large-Instruct-2407, 123 B).
        Family::Mistral => (32_768, 12_288, 28_672, 88, 96, 8, 128),
        // Qwen2-72B.
        Family::Qwen2 => (152_064, 8192, 29_568, 80, 64, 8, 128),
        // Qwen3-32B (the larger Qwen3 are mixtures of experts).
        Family::Qwen3 => (151_936, 5120, 25_600, 64, 64, 8, 128),
        // Phi-3-medium (14 B).
        Family::Phi3 => (32_064, 5120, 17_920, 40, 40, 10, 128),
        // Gemma 7B.
        Family::Gemma => (256_000, 3072, 24_576, 28, 16, 16, 256),
        // Gemma 2 27B.
        Family::Gemma2 => (256_000, 4608, 36_864, 46, 32, 16, 128),
        // Llama 3.1 405B.
        _ => return Preset::Xxl.shape(),
    };
    Shape {
        vocab,
        hidden,
        intermediate,
        layers,
        heads,
        kv_heads,
        head_dim,
        context: Preset::Xxl.shape().context,
    }
}

/// A Llama-widths decoder of `family`.
fn decoder(family: Family, shape: &Shape) -> serde_json::Value {
    let mut c = crate::hf::config_json(shape, family.model_type());
    let hd = shape.head_dim;
    let extra = match family {
        Family::Mistral => serde_json::json!({"head_dim": hd, "sliding_window": null}),
        Family::Qwen3 => serde_json::json!({"head_dim": hd, "attention_bias": false}),
        Family::Gemma => serde_json::json!({
            "head_dim": hd, "attention_bias": false, "tie_word_embeddings": true,
            "hidden_act": null, "hidden_activation": "gelu_pytorch_tanh",
        }),
        Family::Gemma2 => serde_json::json!({
            "head_dim": hd, "attention_bias": false, "tie_word_embeddings": true,
            "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": hd,
            "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
            "sliding_window": null,
        }),
        _ => serde_json::json!({}),
    };
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            // A null drops the Llama field (Gemma names its activation apart).
            if v.is_null() && k == "hidden_act" {
                c.remove(k);
            } else {
                c.insert(k.clone(), v.clone());
            }
        }
    }
    c
}

/// GPT-2 at its released sizes (tiny and mini: warpt's, for quick runs).
fn gpt2(preset: Preset) -> serde_json::Value {
    let (vocab, width, layers, heads) = match preset {
        Preset::Tiny => (8192, 256, 6, 8),
        Preset::Mini => (50257, 384, 6, 6),
        Preset::Small => (50257, 768, 12, 12),
        Preset::Base => (50257, 1024, 24, 16),
        Preset::Large => (50257, 1280, 36, 20),
        // gpt2-xl is GPT-2's largest release.
        Preset::Xl | Preset::Xxl => (50257, 1600, 48, 25),
    };
    serde_json::json!({
        "model_type": "gpt2", "vocab_size": vocab, "n_positions": 1024, "n_embd": width,
        "n_layer": layers, "n_head": heads, "activation_function": "gelu_new",
    })
}

/// T5 at its released sizes (tiny and mini: warpt's), the original T5's ReLU
/// feed-forward and tied, scaled output.
fn t5(preset: Preset) -> serde_json::Value {
    let (d_model, d_kv, d_ff, layers, heads) = match preset {
        Preset::Tiny => (256, 32, 1024, 4, 8),
        Preset::Mini => (384, 64, 1536, 4, 6),
        Preset::Small => (512, 64, 2048, 6, 8),
        Preset::Base => (768, 64, 3072, 12, 12),
        Preset::Large => (1024, 64, 4096, 24, 16),
        Preset::Xl => (1024, 128, 16384, 24, 32),
        // t5-11b.
        Preset::Xxl => (1024, 128, 65536, 24, 128),
    };
    serde_json::json!({
        "model_type": "t5", "vocab_size": 32128, "d_model": d_model, "d_kv": d_kv, "d_ff": d_ff,
        "num_layers": layers, "num_heads": heads, "feed_forward_proj": "relu",
        "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
        "decoder_start_token_id": 0, "pad_token_id": 0, "n_positions": 512,
    })
}

/// Parameters of a model of `family` with `shape` (as [`crate::hf::parse_config`]
/// gives it), estimated before anything is allocated.
pub fn estimated_parameters(family: Family, shape: &Shape) -> usize {
    let (h, q, ff, l) = (
        shape.hidden,
        shape.heads * shape.head_dim,
        shape.intermediate,
        shape.layers,
    );
    match family {
        // Encoder and decoder blocks (the decoder's with cross-attention),
        // two-matrix MLPs, one tied embedding.
        Family::T5 => l * (4 * h * q + 2 * h * ff) + l * (8 * h * q + 2 * h * ff) + shape.vocab * h,
        // Two-matrix MLP, learned positions, tied output.
        Family::Gpt2 => l * (4 * h * h + 2 * h * ff) + (shape.vocab + shape.context) * h,
        // Llama's tensors without the output, which is the embedding.
        Family::Gemma | Family::Gemma2 => shape.parameters() - shape.vocab * h,
        _ => shape.parameters(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_parses_its_presets() {
        for family in Family::LLM {
            for preset in Preset::ALL {
                let raw = preset_config(family, preset);
                let (shape, config) = crate::hf::parse_config(raw)
                    .unwrap_or_else(|e| panic!("{family:?} {preset:?}{e}"));
                assert_eq!(config.family(), family);
                assert!(estimated_parameters(family, &shape) > 1_000_000);
            }
        }
        // The released sizes: gpt2 124 M, t5-small 60 M (within the
        // estimate's rounding: biases and norms are left out).
        let small = |f| {
            let (shape, _) = crate::hf::parse_config(preset_config(f, Preset::Small)).unwrap();
            estimated_parameters(f, &shape) as f64 / 1e6
        };
        let (gpt2, t5) = (small(Family::Gpt2), small(Family::T5));
        assert!((123.0..125.0).contains(&gpt2), "{gpt2}");
        assert!((60.0..61.0).contains(&t5), "{t5}");
    }
}
