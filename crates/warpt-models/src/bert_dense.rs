//! BERT (and RoBERTa, given BERT's names) on candle's tensor operations in
//! any dtype: the encoder `embed` runs where warpt's packed f32 kernel does
//! not (bf16, f16, other devices).
//!
//! Why not candle-transformers' `BertModel`: it adds `(1 - mask) × f32::MIN`
//! to the scores in the model's dtype, and `f32::MIN` rounds to −∞ in bf16
//! and f16, so every unmasked score becomes 0 × −∞ = NaN. Here the scores,
//! the mask and the softmax are f32 (as PyTorch upcasts the softmax), the
//! matrix products in the model's dtype.

use std::collections::HashMap;

use candle_core::{D, DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::bert;

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    out_norm: LayerNorm,
}

/// A BERT encoder on candle's operations.
pub struct DenseBert {
    word: Embedding,
    position: Tensor,
    token_type: Tensor,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    act: bert::HiddenAct,
}

fn layer_norm(vb: VarBuilder, n: usize, eps: f64) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(n, "weight")?,
        vb.get(n, "bias")?,
        eps,
    ))
}

impl DenseBert {
    /// The encoder of configuration `c` in `tensors` (Hugging Face names,
    /// with or without a `bert.` prefix), in `dtype` on `device`.
    pub fn load(
        tensors: HashMap<String, Tensor>,
        c: &bert::Config,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let tensors: HashMap<String, Tensor> = tensors
            .into_iter()
            .map(|(k, v)| (k.strip_prefix("bert.").unwrap_or(&k).to_string(), v))
            .collect();
        let vb = VarBuilder::from_tensors(tensors, dtype, device);
        let (h, i, eps) = (c.hidden_size, c.intermediate_size, c.layer_norm_eps);
        let e = vb.pp("embeddings");
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for l in 0..c.num_hidden_layers {
            let p = vb.pp(format!("encoder.layer.{l}"));
            layers.push(Layer {
                query: candle_nn::linear(h, h, p.pp("attention.self.query"))?,
                key: candle_nn::linear(h, h, p.pp("attention.self.key"))?,
                value: candle_nn::linear(h, h, p.pp("attention.self.value"))?,
                attn_out: candle_nn::linear(h, h, p.pp("attention.output.dense"))?,
                attn_norm: layer_norm(p.pp("attention.output.LayerNorm"), h, eps)?,
                intermediate: candle_nn::linear(h, i, p.pp("intermediate.dense"))?,
                output: candle_nn::linear(i, h, p.pp("output.dense"))?,
                out_norm: layer_norm(p.pp("output.LayerNorm"), h, eps)?,
            });
        }
        Ok(DenseBert {
            word: Embedding::new(e.get((c.vocab_size, h), "word_embeddings.weight")?, h),
            position: e.get((c.max_position_embeddings, h), "position_embeddings.weight")?,
            token_type: e.get((c.type_vocab_size, h), "token_type_embeddings.weight")?,
            embed_norm: layer_norm(e.pp("LayerNorm"), h, eps)?,
            layers,
            heads: c.num_attention_heads,
            act: c.hidden_act,
        })
    }

    /// The last hidden state `(batch, len, hidden)` of `ids` `(batch, len)`,
    /// attending only where `mask` `(batch, len)` is 1; token type 0 for all.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (b, n) = ids.dims2()?;
        let x = self
            .word
            .forward(ids)?
            .broadcast_add(&self.position.narrow(0, 0, n)?)?
            .broadcast_add(&self.token_type.narrow(0, 0, 1)?)?;
        let mut x = self.embed_norm.forward(&x)?;
        // 0 where a key is attended, -1e30 where it is padding (f32).
        let bias = ((mask.to_dtype(DType::F32)? - 1.0)? * 1e30)?.reshape((b, 1, 1, n))?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias, self.heads, self.act)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(
        &self,
        x: &Tensor,
        bias: &Tensor,
        heads: usize,
        act: bert::HiddenAct,
    ) -> Result<Tensor> {
        let (b, n, h) = x.dims3()?;
        let hd = h / heads;
        let split = |t: Tensor| -> Result<Tensor> {
            t.reshape((b, n, heads, hd))?.transpose(1, 2)?.contiguous()
        };
        let q = split(self.query.forward(x)?)?;
        let k = split(self.key.forward(x)?)?;
        let v = split(self.value.forward(x)?)?;
        let scores = q
            .matmul(&k.t()?)?
            .to_dtype(DType::F32)?
            .affine(1.0 / (hd as f64).sqrt(), 0.0)?
            .broadcast_add(bias)?;
        let probs = candle_nn::ops::softmax(&scores, D::Minus1)?.to_dtype(x.dtype())?;
        let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((b, n, h))?;
        let a = self
            .attn_norm
            .forward(&(x + self.attn_out.forward(&ctx)?)?)?;
        let inner = self.intermediate.forward(&a)?;
        let inner = match act {
            bert::HiddenAct::Gelu => inner.gelu_erf()?,
            bert::HiddenAct::GeluApproximate => inner.gelu()?,
            bert::HiddenAct::Relu => inner.relu()?,
        };
        self.out_norm.forward(&(a + self.output.forward(&inner)?)?)
    }
}
