//! A BERT encoder with all-MiniLM-L6-v2's shape, its seeded weights, and a
//! plain f64 forward pass that checks candle's, with sentence-transformers'
//! mean pooling and L2 normalisation.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert;

use crate::model::tensor_values;

/// all-MiniLM-L6-v2's configuration (its config.json).
pub fn minilm_config() -> bert::Config {
    bert::Config {
        vocab_size: 30522,
        hidden_size: 384,
        num_hidden_layers: 6,
        num_attention_heads: 12,
        intermediate_size: 1536,
        hidden_act: bert::HiddenAct::Gelu,
        hidden_dropout_prob: 0.1,
        max_position_embeddings: 512,
        type_vocab_size: 2,
        initializer_range: 0.02,
        layer_norm_eps: 1e-12,
        pad_token_id: 0,
        position_embedding_type: bert::PositionEmbeddingType::Absolute,
        use_cache: true,
        classifier_dropout: None,
        model_type: Some("bert".into()),
    }
}

/// The encoder families' presets by size, as BERT-form configurations
/// (RoBERTa and XLM-RoBERTa compute BERT's forward pass; a preset of theirs
/// differs in its vocabulary, one token type, and 512 usable positions):
/// tiny = bert-tiny (128 wide, 2 layers), small = all-MiniLM-L6-v2 (384,
/// 6), base = bert-base (768, 12), large = bert-large (1024, 24), xl =
/// XLM-RoBERTa-XL's shape (2560, 36), xxl = XLM-RoBERTa-XXL's (4096, 48;
/// the largest released encoder of the three families).
pub fn encoder_preset(family: crate::family::Family, name: &str) -> Result<bert::Config, String> {
    use crate::family::Family;
    let (hidden, layers, heads, inner) = match name {
        "tiny" => (128, 2, 2, 512),
        "small" => (384, 6, 12, 1536),
        "base" => (768, 12, 12, 3072),
        "large" => (1024, 24, 16, 4096),
        "xl" => (2560, 36, 32, 10240),
        "xxl" => (4096, 48, 32, 16384),
        other => {
            return Err(format!(
                "parameter 'model': '{other}' is not one of tiny, small, base, large, xl, xxl"
            ));
        }
    };
    let (vocab, types) = match family {
        Family::Bert => (30522, 2),
        Family::Roberta => (50265, 1),
        Family::XlmRoberta => (250_002, 1),
        other => {
            return Err(format!(
                "parameter 'family': '{}' is not one of bert, roberta, xlm-roberta",
                other.model_type()
            ));
        }
    };
    Ok(bert::Config {
        vocab_size: vocab,
        hidden_size: hidden,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        intermediate_size: inner,
        type_vocab_size: types,
        model_type: Some(family.model_type().into()),
        ..minilm_config()
    })
}

/// Parameters of configuration `c`, counted from its tensor list.
pub fn parameter_count(c: &bert::Config) -> usize {
    tensors(c)
        .iter()
        .map(|(_, d)| d.iter().product::<usize>())
        .sum()
}

/// Every tensor's Hugging Face name and shape for `c`.
pub fn tensors(c: &bert::Config) -> Vec<(String, Vec<usize>)> {
    let (h, i) = (c.hidden_size, c.intermediate_size);
    let mut t = vec![
        (
            "embeddings.word_embeddings.weight".to_string(),
            vec![c.vocab_size, h],
        ),
        (
            "embeddings.position_embeddings.weight".to_string(),
            vec![c.max_position_embeddings, h],
        ),
        (
            "embeddings.token_type_embeddings.weight".to_string(),
            vec![c.type_vocab_size, h],
        ),
        ("embeddings.LayerNorm.weight".to_string(), vec![h]),
        ("embeddings.LayerNorm.bias".to_string(), vec![h]),
    ];
    for l in 0..c.num_hidden_layers {
        let p = format!("encoder.layer.{l}");
        for (name, dims) in [
            ("attention.self.query", vec![h, h]),
            ("attention.self.key", vec![h, h]),
            ("attention.self.value", vec![h, h]),
            ("attention.output.dense", vec![h, h]),
            ("intermediate.dense", vec![i, h]),
            ("output.dense", vec![h, i]),
        ] {
            let out = dims[0];
            t.push((format!("{p}.{name}.weight"), dims));
            t.push((format!("{p}.{name}.bias"), vec![out]));
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            t.push((format!("{p}.{norm}.weight"), vec![h]));
            t.push((format!("{p}.{norm}.bias"), vec![h]));
        }
    }
    t
}

/// The weights `seed` generates for `c`, in f32 on `device`.
pub fn generate(
    c: &bert::Config,
    seed: u64,
    device: &Device,
) -> candle_core::Result<HashMap<String, Tensor>> {
    crate::model::generate_tensors(&tensors(c), seed, device)
}

/// Mean of the token vectors where `mask` is 1, then L2 normalisation, as
/// sentence-transformers pools: `hidden` is (batch, seq, dim), `mask` (batch, seq).
pub fn mean_pool_normalize(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    // In f32 whatever the model's dtype: candle sums bf16 in bf16, which
    // leaves norms 2% off one (PyTorch accumulates reductions in f32).
    let hidden = hidden.to_dtype(DType::F32)?;
    let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&m)?.sum(1)?;
    let counts = m.sum(1)?.clamp(1e-9, f64::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
    mean.broadcast_div(&norm)
}

/// erf, Abramowitz and Stegun 7.1.26 refined by one Newton step (error
/// below 1e-10, far inside any tolerance used here).
pub(crate) fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.3275911 * x.abs());
    let poly = t
        * (0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let mut y = (1.0 - poly * (-x * x).exp()).copysign(x);
    // Newton on erf(y_true) = y: d/dx erf = 2/sqrt(pi) e^{-x^2}. Refine the
    // value through the series for small |x|, where A&S is least accurate.
    if x.abs() < 0.5 {
        let (mut term, mut sum, x2) = (x, x, x * x);
        for n in 1..30 {
            term *= -x2 / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        y = sum * 2.0 / std::f64::consts::PI.sqrt();
    }
    y
}

pub(crate) fn layer_norm(x: &mut [f64], w: &[f64], b: &[f64], eps: f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let s = 1.0 / (var + eps).sqrt();
    for ((v, g), bb) in x.iter_mut().zip(w).zip(b) {
        *v = (*v - mean) * s * g + bb;
    }
}

/// Plain f64 multi-head attention of one query row over every key and
/// value row (`heads` heads side by side in each row, scores scaled by
/// 1/sqrt(head dim), no mask): the attended row. Shared by the f64
/// references of BERT and ViT.
pub(crate) fn attend(q: &[f64], k: &[Vec<f64>], v: &[Vec<f64>], heads: usize) -> Vec<f64> {
    let h = q.len();
    let hd = h / heads;
    let mut ctx = vec![0.0; h];
    for head in 0..heads {
        let r = head * hd..(head + 1) * hd;
        let scores: Vec<f64> = k
            .iter()
            .map(|kk| {
                q[r.clone()]
                    .iter()
                    .zip(&kk[r.clone()])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
                    / (hd as f64).sqrt()
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        for (weight, vv) in e.iter().zip(v) {
            for d in r.clone() {
                ctx[d] += weight / sum * vv[d];
            }
        }
    }
    ctx
}

/// The plain f64 encoder: one sentence of `ids` (no padding), its pooled
/// and normalised embedding.
pub fn reference_embedding(c: &bert::Config, seed: u64, ids: &[u32]) -> Vec<f64> {
    let w: HashMap<String, Vec<f64>> = tensors(c)
        .into_iter()
        .map(|(name, dims)| {
            let v = tensor_values(seed, &name, dims.iter().product());
            (name, v.into_iter().map(f64::from).collect())
        })
        .collect();
    let get = |n: &str| w.get(n).map_or(&[][..], Vec::as_slice);
    let (h, heads) = (c.hidden_size, c.num_attention_heads);
    let linear = |name: &str, x: &[f64]| -> Vec<f64> {
        let (wt, b) = (get(&format!("{name}.weight")), get(&format!("{name}.bias")));
        wt.chunks_exact(x.len())
            .zip(b)
            .map(|(row, bb)| row.iter().zip(x).map(|(a, v)| a * v).sum::<f64>() + bb)
            .collect()
    };
    let mut xs: Vec<Vec<f64>> = ids
        .iter()
        .enumerate()
        .map(|(pos, &id)| {
            let mut x: Vec<f64> = (0..h)
                .map(|d| {
                    get("embeddings.word_embeddings.weight")[id as usize * h + d]
                        + get("embeddings.position_embeddings.weight")[pos * h + d]
                        + get("embeddings.token_type_embeddings.weight")[d]
                })
                .collect();
            layer_norm(
                &mut x,
                get("embeddings.LayerNorm.weight"),
                get("embeddings.LayerNorm.bias"),
                c.layer_norm_eps,
            );
            x
        })
        .collect();
    for l in 0..c.num_hidden_layers {
        let p = format!("encoder.layer.{l}");
        let q: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| linear(&format!("{p}.attention.self.query"), x))
            .collect();
        let k: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| linear(&format!("{p}.attention.self.key"), x))
            .collect();
        let v: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| linear(&format!("{p}.attention.self.value"), x))
            .collect();
        let mut next = Vec::with_capacity(xs.len());
        for (t, x) in xs.iter().enumerate() {
            let ctx = attend(&q[t], &k, &v, heads);
            let mut a = linear(&format!("{p}.attention.output.dense"), &ctx);
            a.iter_mut().zip(x).for_each(|(o, r)| *o += r);
            layer_norm(
                &mut a,
                get(&format!("{p}.attention.output.LayerNorm.weight")),
                get(&format!("{p}.attention.output.LayerNorm.bias")),
                c.layer_norm_eps,
            );
            let inter: Vec<f64> = linear(&format!("{p}.intermediate.dense"), &a)
                .into_iter()
                .map(|z| 0.5 * z * (1.0 + erf(z / std::f64::consts::SQRT_2)))
                .collect();
            let mut o = linear(&format!("{p}.output.dense"), &inter);
            o.iter_mut().zip(&a).for_each(|(o, r)| *o += r);
            layer_norm(
                &mut o,
                get(&format!("{p}.output.LayerNorm.weight")),
                get(&format!("{p}.output.LayerNorm.bias")),
                c.layer_norm_eps,
            );
            next.push(o);
        }
        xs = next;
    }
    let mut mean = vec![0.0; h];
    for x in &xs {
        mean.iter_mut()
            .zip(x)
            .for_each(|(m, v)| *m += v / xs.len() as f64);
    }
    let norm = mean.iter().map(|v| v * v).sum::<f64>().sqrt();
    mean.iter().map(|v| v / norm).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (-2.0, -0.995_322_265_018_952_7),
        ] {
            assert!(
                (erf(x) - want).abs() < 2e-7,
                "erf({x}) = {} not {want}",
                erf(x)
            );
        }
    }
}
