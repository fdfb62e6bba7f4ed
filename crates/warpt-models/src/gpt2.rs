//! GPT-2 on candle's tensor operations (candle-transformers has no GPT-2):
//! learned position embeddings, pre-LayerNorm blocks with biases, fused
//! q/k/v, GELU (tanh form), the output tied to the token embedding, and a
//! KV cache per layer. Reads checkpoints as transformers saves them: the
//! projections are `Conv1D`s whose weights are stored `[in, out]`, the names
//! with or without the `transformer.` prefix (the original OpenAI uploads
//! have none).

use candle_core::{D, DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// A GPT-2 `config.json`'s fields that shape the model.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Longest sequence (learned positions).
    pub n_positions: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// Blocks.
    pub n_layer: usize,
    /// Attention heads.
    pub n_head: usize,
    /// MLP inner width; 4 × `n_embd` when unset.
    #[serde(default)]
    pub n_inner: Option<usize>,
    /// LayerNorm epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    /// The MLP's activation: `gelu_new` (tanh form) or `gelu`.
    #[serde(default = "default_activation")]
    pub activation_function: String,
    /// Scores divided by sqrt(head dim) (transformers' default).
    #[serde(default = "default_true")]
    pub scale_attn_weights: bool,
    /// Scores further divided by the layer's index + 1.
    #[serde(default)]
    pub scale_attn_by_inverse_layer_idx: bool,
}

fn default_eps() -> f64 {
    1e-5
}

fn default_activation() -> String {
    "gelu_new".into()
}

fn default_true() -> bool {
    true
}

impl Config {
    /// MLP inner width.
    pub fn inner(&self) -> usize {
        self.n_inner.unwrap_or(4 * self.n_embd)
    }

    /// What warpt cannot run as transformers does, if anything.
    pub fn unsupported(&self) -> Option<String> {
        if !matches!(
            self.activation_function.as_str(),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu"
        ) {
            return Some(format!(
                "activation_function '{}' is not supported (gelu_new, gelu_pytorch_tanh, gelu are)",
                self.activation_function
            ));
        }
        if self.n_head == 0 || !self.n_embd.is_multiple_of(self.n_head) {
            return Some(format!(
                "{} heads do not divide n_embd {}",
                self.n_head, self.n_embd
            ));
        }
        None
    }
}

/// A `Conv1D` (`x @ W + b`, `W` stored `[in, out]`) as candle's `Linear`,
/// whose weight is `[out, in]`: transposed once at load.
fn conv1d(vb: &VarBuilder, n_in: usize, n_out: usize) -> Result<Linear> {
    let weight = vb.get((n_in, n_out), "weight")?.t()?.contiguous()?;
    Ok(Linear::new(weight, Some(vb.get(n_out, "bias")?)))
}

struct Block {
    ln_1: LayerNorm,
    c_attn: Linear,
    attn_proj: Linear,
    ln_2: LayerNorm,
    c_fc: Linear,
    mlp_proj: Linear,
    cache: Option<(Tensor, Tensor)>,
    heads: usize,
    scale: f64,
}

/// GPT-2 with its KV cache.
pub struct Model {
    wte: Embedding,
    wpe: Embedding,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    exact_gelu: bool,
}

fn layer_norm(vb: VarBuilder, n: usize, eps: f64) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(n, "weight")?,
        vb.get(n, "bias")?,
        eps,
    ))
}

impl Model {
    /// The model in `vb` (names with or without `transformer.`).
    pub fn new(c: &Config, vb: VarBuilder) -> Result<Self> {
        let vb = if vb.contains_tensor("transformer.wte.weight") {
            vb.pp("transformer")
        } else {
            vb
        };
        let (h, eps) = (c.n_embd, c.layer_norm_epsilon);
        let head_dim = h / c.n_head.max(1);
        let mut blocks = Vec::with_capacity(c.n_layer);
        for i in 0..c.n_layer {
            let b = vb.pp(format!("h.{i}"));
            let mut scale = if c.scale_attn_weights {
                1.0 / (head_dim as f64).sqrt()
            } else {
                1.0
            };
            if c.scale_attn_by_inverse_layer_idx {
                scale /= (i + 1) as f64;
            }
            blocks.push(Block {
                ln_1: layer_norm(b.pp("ln_1"), h, eps)?,
                c_attn: conv1d(&b.pp("attn.c_attn"), h, 3 * h)?,
                attn_proj: conv1d(&b.pp("attn.c_proj"), h, h)?,
                ln_2: layer_norm(b.pp("ln_2"), h, eps)?,
                c_fc: conv1d(&b.pp("mlp.c_fc"), h, c.inner())?,
                mlp_proj: conv1d(&b.pp("mlp.c_proj"), c.inner(), h)?,
                cache: None,
                heads: c.n_head,
                scale,
            });
        }
        Ok(Model {
            wte: Embedding::new(vb.get((c.vocab_size, h), "wte.weight")?, h),
            wpe: Embedding::new(vb.get((c.n_positions, h), "wpe.weight")?, h),
            blocks,
            ln_f: layer_norm(vb.pp("ln_f"), h, eps)?,
            exact_gelu: c.activation_function == "gelu",
        })
    }

    /// Forgets the cached keys and values: the next forward starts a sequence.
    pub fn clear_kv_cache(&mut self) {
        for b in &mut self.blocks {
            b.cache = None;
        }
    }

    /// Logits after the last of `ids`' tokens, `(batch, 1, vocab)`, for
    /// tokens at positions `pos..`; keys and values join the cache.
    pub fn forward(&mut self, ids: &Tensor, pos: usize) -> Result<Tensor> {
        let (_, n) = ids.dims2()?;
        let positions = Tensor::arange(pos as u32, (pos + n) as u32, ids.device())?;
        let mut x = self
            .wte
            .forward(ids)?
            .broadcast_add(&self.wpe.forward(&positions)?)?;
        let mask = (n > 1)
            .then(|| causal_mask(n, pos, ids.device(), x.dtype()))
            .transpose()?;
        for b in &mut self.blocks {
            x = b.forward(&x, mask.as_ref(), self.exact_gelu)?;
        }
        let last = self.ln_f.forward(&x.narrow(1, n - 1, 1)?)?;
        last.broadcast_matmul(&self.wte.embeddings().t()?)
    }
}

/// `-inf` above the diagonal of `n` new positions after `past` cached ones.
fn causal_mask(n: usize, past: usize, dev: &candle_core::Device, dtype: DType) -> Result<Tensor> {
    let m: Vec<f32> = (0..n)
        .flat_map(|i| {
            (0..past + n).map(move |j| if j > past + i { f32::NEG_INFINITY } else { 0.0 })
        })
        .collect();
    Tensor::from_vec(m, (n, past + n), dev)?.to_dtype(dtype)
}

impl Block {
    fn forward(&mut self, x: &Tensor, mask: Option<&Tensor>, exact_gelu: bool) -> Result<Tensor> {
        let (b, n, h) = x.dims3()?;
        let hd = h / self.heads;
        let qkv = self.c_attn.forward(&self.ln_1.forward(x)?)?;
        let split = |i: usize| -> Result<Tensor> {
            qkv.narrow(D::Minus1, i * h, h)?
                .reshape((b, n, self.heads, hd))?
                .transpose(1, 2)?
                .contiguous()
        };
        let (q, mut k, mut v) = (split(0)?, split(1)?, split(2)?);
        if let Some((pk, pv)) = &self.cache {
            k = Tensor::cat(&[pk, &k], 2)?;
            v = Tensor::cat(&[pv, &v], 2)?;
        }
        self.cache = Some((k.clone(), v.clone()));
        // Scores in f32 whatever the weights' precision, as transformers
        // upcasts the softmax.
        let dtype = q.dtype();
        let scores = (q
            .to_dtype(DType::F32)?
            .matmul(&k.to_dtype(DType::F32)?.t()?)?
            * self.scale)?;
        let scores = match mask {
            Some(m) => scores.broadcast_add(&m.to_dtype(DType::F32)?)?,
            None => scores,
        };
        let probs = candle_nn::ops::softmax_last_dim(&scores)?.to_dtype(dtype)?;
        let attn = probs.matmul(&v)?.transpose(1, 2)?.reshape((b, n, h))?;
        let x = (x + self.attn_proj.forward(&attn)?)?;
        let inner = self.c_fc.forward(&self.ln_2.forward(&x)?)?;
        let inner = if exact_gelu {
            inner.gelu_erf()?
        } else {
            inner.gelu()?
        };
        x + self.mlp_proj.forward(&inner)?
    }
}
