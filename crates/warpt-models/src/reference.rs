//! A Llama forward pass written plainly in f64 (loops, no candle), to check
//! candle's answer: one token at a time with its own key/value cache, which
//! is mathematically the same as a batched prefill.

use std::collections::HashMap;

use crate::model::{RMS_EPS, ROPE_THETA, Shape, tensor_values};

/// The reference model: f64 copies of the generated weights.
pub struct Reference {
    shape: Shape,
    w: HashMap<String, Vec<f64>>,
    /// Per layer: keys and values of every position so far, `kv_heads × head_dim` each.
    keys: Vec<Vec<Vec<f64>>>,
    values: Vec<Vec<Vec<f64>>>,
}

fn rms_norm(x: &[f64], w: &[f64]) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let scale = 1.0 / (ms + RMS_EPS).sqrt();
    x.iter().zip(w).map(|(v, g)| v * scale * g).collect()
}

/// `w` (`[out, in]`, row-major) times `x`.
fn matvec(w: &[f64], x: &[f64]) -> Vec<f64> {
    w.chunks_exact(x.len())
        .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
        .collect()
}

/// Rotary embedding as Hugging Face's Llama applies it (`rotate_half`: the
/// first half of each head pairs with the second).
fn rope(x: &mut [f64], head_dim: usize, pos: usize) {
    let half = head_dim / 2;
    for head in x.chunks_exact_mut(head_dim) {
        for i in 0..half {
            let freq = 1.0 / (ROPE_THETA as f64).powf((2 * i) as f64 / head_dim as f64);
            let (s, c) = (pos as f64 * freq).sin_cos();
            let (a, b) = (head[i], head[i + half]);
            head[i] = a * c - b * s;
            head[i + half] = b * c + a * s;
        }
    }
}

impl Reference {
    /// The model of `shape` with the weights `seed` generates.
    pub fn new(shape: Shape, seed: u64) -> Self {
        let w = shape
            .tensors()
            .into_iter()
            .map(|(name, dims)| {
                let v = tensor_values(seed, &name, dims.iter().product());
                (name, v.into_iter().map(f64::from).collect())
            })
            .collect();
        Self::from_weights(shape, w)
    }

    /// The model of `shape` with the given weights (Hugging Face names,
    /// row-major `[out, in]`), e.g. a quantized model's, dequantized.
    pub fn from_weights(shape: Shape, w: HashMap<String, Vec<f64>>) -> Self {
        Reference {
            shape,
            w,
            keys: vec![Vec::new(); shape.layers],
            values: vec![Vec::new(); shape.layers],
        }
    }

    fn weight(&self, name: &str) -> &[f64] {
        self.w.get(name).map_or(&[], Vec::as_slice)
    }

    /// Forgets every position seen.
    pub fn reset(&mut self) {
        self.keys.iter_mut().for_each(Vec::clear);
        self.values.iter_mut().for_each(Vec::clear);
    }

    /// Feeds one token at the next position; the logits after it.
    pub fn step(&mut self, token: u32) -> Vec<f64> {
        let s = self.shape;
        let (hd, group) = (s.head_dim, s.heads / s.kv_heads);
        let pos = self.keys[0].len();
        let emb = self.weight("model.embed_tokens.weight");
        let mut x: Vec<f64> = emb[token as usize * s.hidden..][..s.hidden].to_vec();
        for l in 0..s.layers {
            let p = format!("model.layers.{l}");
            let h = rms_norm(&x, self.weight(&format!("{p}.input_layernorm.weight")));
            let mut q = matvec(self.weight(&format!("{p}.self_attn.q_proj.weight")), &h);
            let mut k = matvec(self.weight(&format!("{p}.self_attn.k_proj.weight")), &h);
            let v = matvec(self.weight(&format!("{p}.self_attn.v_proj.weight")), &h);
            rope(&mut q, hd, pos);
            rope(&mut k, hd, pos);
            self.keys[l].push(k);
            self.values[l].push(v);
            let mut attn = vec![0.0; s.hidden];
            for head in 0..s.heads {
                let kvh = head / group;
                let qh = &q[head * hd..][..hd];
                let scores: Vec<f64> = self.keys[l]
                    .iter()
                    .map(|k| {
                        qh.iter()
                            .zip(&k[kvh * hd..][..hd])
                            .map(|(a, b)| a * b)
                            .sum::<f64>()
                            / (hd as f64).sqrt()
                    })
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|z| (z - max).exp()).collect();
                let sum: f64 = e.iter().sum();
                for (weight, v) in e.iter().zip(&self.values[l]) {
                    for d in 0..hd {
                        attn[head * hd + d] += weight / sum * v[kvh * hd + d];
                    }
                }
            }
            let o = matvec(self.weight(&format!("{p}.self_attn.o_proj.weight")), &attn);
            x.iter_mut().zip(&o).for_each(|(a, b)| *a += b);
            let h = rms_norm(
                &x,
                self.weight(&format!("{p}.post_attention_layernorm.weight")),
            );
            let gate = matvec(self.weight(&format!("{p}.mlp.gate_proj.weight")), &h);
            let up = matvec(self.weight(&format!("{p}.mlp.up_proj.weight")), &h);
            let act: Vec<f64> = gate
                .iter()
                .zip(&up)
                .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
                .collect();
            let down = matvec(self.weight(&format!("{p}.mlp.down_proj.weight")), &act);
            x.iter_mut().zip(&down).for_each(|(a, b)| *a += b);
        }
        let h = rms_norm(&x, self.weight("model.norm.weight"));
        matvec(self.weight("lm_head.weight"), &h)
    }

    /// Greedy generation: the logits after the prompt, the `n` tokens
    /// generated, and for each the gap between the best and second-best
    /// logit it was chosen by (how firmly it was chosen).
    pub fn generate(&mut self, prompt: &[u32], n: usize) -> (Vec<f64>, Vec<u32>, Vec<f64>) {
        self.reset();
        let mut logits = Vec::new();
        for &t in prompt {
            logits = self.step(t);
        }
        let first_logits = logits.clone();
        let mut tokens = Vec::with_capacity(n);
        let mut gaps = Vec::with_capacity(n);
        for i in 0..n {
            let next = argmax(&logits);
            tokens.push(next);
            gaps.push(top_gap(&logits));
            if i + 1 < n {
                logits = self.step(next);
            }
        }
        (first_logits, tokens, gaps)
    }
}

/// The index of the largest value (the first on ties).
pub fn argmax(v: &[f64]) -> u32 {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best as u32
}

/// The gap between the largest and the second-largest value.
pub fn top_gap(v: &[f64]) -> f64 {
    let (mut a, mut b) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for &x in v {
        if x > a {
            b = a;
            a = x;
        } else if x > b {
            b = x;
        }
    }
    a - b
}
