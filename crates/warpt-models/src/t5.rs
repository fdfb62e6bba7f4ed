//! T5, the encoder-decoder, on candle's tensor operations. candle-transformers
//! has a T5, but its decoder buckets relative positions as the encoder does
//! (bidirectionally), so past 8 generated tokens its logits leave
//! transformers', and it recomputes the cross-attention keys and values of
//! the whole input at every decode step. Here the decoder's buckets are
//! causal, the cross-attention keys and values are computed once per
//! generation ([`State`]), and a generation's caches live outside the model,
//! so one model serves any number of generations.
//!
//! Reads checkpoints as transformers saves them: `shared.weight` (or an
//! `embed_tokens` copy), `encoder.block.N.layer.{0,1}` and
//! `decoder.block.N.layer.{0,1,2}`, the relative position table in block 0
//! of each stack, `DenseReluDense.wi` or the gated `wi_0`/`wi_1`, an
//! `lm_head.weight` when the output is not the embedding.

use candle_core::{D, DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, Linear, VarBuilder};
use serde::Deserialize;

/// A T5 `config.json`'s fields that shape the model.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Hidden size.
    pub d_model: usize,
    /// Size of one head's keys and values.
    pub d_kv: usize,
    /// Feed-forward width.
    pub d_ff: usize,
    /// Encoder blocks.
    pub num_layers: usize,
    /// Decoder blocks (the encoder's count when unset).
    #[serde(default)]
    pub num_decoder_layers: Option<usize>,
    /// Attention heads.
    pub num_heads: usize,
    /// Relative position buckets.
    #[serde(default = "default_buckets")]
    pub relative_attention_num_buckets: usize,
    /// Distance past which positions share the last bucket.
    #[serde(default = "default_max_distance")]
    pub relative_attention_max_distance: usize,
    /// RMS norm epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    /// `relu`, `gated-gelu`, or `[gated-]ACT` for another activation.
    #[serde(default = "default_ff")]
    pub feed_forward_proj: String,
    /// Whether the config ties the output to the embedding; transformers
    /// 4 scales the last hidden state by `d_model^-0.5` unless this is false.
    #[serde(default)]
    pub tie_word_embeddings: Option<bool>,
    /// Whether the last hidden state is scaled by `d_model^-0.5`, as
    /// transformers 5 writes it (T5 v1.1 and FLAN-T5 are not).
    #[serde(default)]
    pub scale_decoder_outputs: Option<bool>,
    /// The padding token, which starts decoding unless set apart.
    #[serde(default)]
    pub pad_token_id: Option<u32>,
    /// The token decoding starts from.
    #[serde(default)]
    pub decoder_start_token_id: Option<u32>,
    /// Longest input the checkpoint was meant for (T5's positions are
    /// relative, so this is advice; 512 when unset).
    #[serde(default)]
    pub n_positions: Option<usize>,
}

fn default_buckets() -> usize {
    32
}

fn default_max_distance() -> usize {
    128
}

fn default_eps() -> f64 {
    1e-6
}

fn default_ff() -> String {
    "relu".into()
}

/// The feed-forward activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Relu,
    /// GELU, exact (erf).
    Gelu,
    /// GELU, tanh form (`gelu_new`).
    GeluTanh,
    Silu,
}

impl Config {
    /// Decoder blocks.
    pub fn decoder_layers(&self) -> usize {
        self.num_decoder_layers.unwrap_or(self.num_layers)
    }

    /// The token decoding starts from.
    pub fn start_token(&self) -> u32 {
        self.decoder_start_token_id
            .or(self.pad_token_id)
            .unwrap_or(0)
    }

    /// Longest input (advice: T5's positions are relative).
    pub fn context(&self) -> usize {
        self.n_positions.unwrap_or(512)
    }

    /// Whether the feed-forward is gated, and its activation, as
    /// transformers reads `feed_forward_proj`.
    fn ff(&self) -> std::result::Result<(bool, Act), String> {
        let proj = self.feed_forward_proj.as_str();
        let (gated, act) = match proj.split_once('-') {
            Some(("gated", act)) => (true, act),
            None => (false, proj),
            Some(_) => return Err(format!("feed_forward_proj '{proj}' is not [gated-]ACT")),
        };
        let act = match act {
            "relu" => Act::Relu,
            // transformers' "gated-gelu" means the tanh form, for
            // compatibility with the first T5 v1.1 checkpoints.
            "gelu" if gated => Act::GeluTanh,
            "gelu" => Act::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" => Act::GeluTanh,
            "silu" | "swish" => Act::Silu,
            other => {
                return Err(format!(
                    "feed_forward_proj '{proj}': activation '{other}' is not supported (relu, gelu, gelu_new, silu are)"
                ));
            }
        };
        Ok((gated, act))
    }

    /// What warpt cannot run as transformers does, if anything.
    pub fn unsupported(&self) -> Option<String> {
        if let Err(why) = self.ff() {
            return Some(why);
        }
        if self.num_heads == 0 || self.d_kv == 0 || self.relative_attention_num_buckets < 4 {
            return Some(
                "num_heads, d_kv and relative_attention_num_buckets (4 or more) must be set".into(),
            );
        }
        None
    }
}

/// T5's norm: scales by the root mean square (no mean, no bias), in f32.
struct Norm {
    weight: Tensor,
    eps: f64,
}

impl Norm {
    fn new(vb: VarBuilder, n: usize, eps: f64) -> Result<Self> {
        Ok(Norm {
            weight: vb.get(n, "weight")?,
            eps,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let dtype = x.dtype();
        let x32 = x.to_dtype(DType::F32)?;
        let var = x32.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = x32.broadcast_div(&(var + self.eps)?.sqrt()?)?;
        normed.to_dtype(dtype)?.broadcast_mul(&self.weight)
    }
}

fn linear(vb: &VarBuilder, n_in: usize, n_out: usize, name: &str) -> Result<Linear> {
    Ok(Linear::new(vb.get((n_out, n_in), name)?, None))
}

/// One attention: no scaling of the scores (T5 folds it into its weights).
struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    heads: usize,
    d_kv: usize,
}

impl Attention {
    fn new(vb: VarBuilder, c: &Config) -> Result<Self> {
        let inner = c.num_heads * c.d_kv;
        Ok(Attention {
            q: linear(&vb, c.d_model, inner, "q.weight")?,
            k: linear(&vb, c.d_model, inner, "k.weight")?,
            v: linear(&vb, c.d_model, inner, "v.weight")?,
            o: linear(&vb, inner, c.d_model, "o.weight")?,
            heads: c.num_heads,
            d_kv: c.d_kv,
        })
    }

    /// `x` `(b, n, d)` as heads `(b, heads, n, d_kv)`.
    fn split(&self, x: Tensor) -> Result<Tensor> {
        let (b, n, _) = x.dims3()?;
        x.reshape((b, n, self.heads, self.d_kv))?
            .transpose(1, 2)?
            .contiguous()
    }

    /// Keys and values of `x`, as heads.
    fn keys_values(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((
            self.split(self.k.forward(x)?)?,
            self.split(self.v.forward(x)?)?,
        ))
    }

    /// Attention of `x`'s queries over `k`, `v` with `bias` (f32, added to
    /// the scores: relative positions and the causal mask).
    fn attend(&self, x: &Tensor, k: &Tensor, v: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let (b, n, _) = x.dims3()?;
        let dtype = x.dtype();
        let q = self.split(self.q.forward(x)?)?;
        // Scores and softmax in f32 whatever the weights' precision, as
        // transformers upcasts the softmax.
        let scores = q
            .to_dtype(DType::F32)?
            .matmul(&k.to_dtype(DType::F32)?.t()?)?;
        let scores = match bias {
            Some(bias) => scores.broadcast_add(bias)?,
            None => scores,
        };
        let probs = candle_nn::ops::softmax_last_dim(&scores)?.to_dtype(dtype)?;
        let out = probs
            .matmul(v)?
            .transpose(1, 2)?
            .reshape((b, n, self.heads * self.d_kv))?;
        self.o.forward(&out)
    }
}

/// The feed-forward layer.
struct FeedForward {
    wi: Linear,
    /// The gate's second projection (`wi_1`), when gated (`wi` is then `wi_0`).
    wi_1: Option<Linear>,
    wo: Linear,
    act: Act,
}

impl FeedForward {
    fn new(vb: VarBuilder, c: &Config, gated: bool, act: Act) -> Result<Self> {
        let (d, ff) = (c.d_model, c.d_ff);
        Ok(FeedForward {
            wi: linear(&vb, d, ff, if gated { "wi_0.weight" } else { "wi.weight" })?,
            wi_1: gated
                .then(|| linear(&vb, d, ff, "wi_1.weight"))
                .transpose()?,
            wo: linear(&vb, ff, d, "wo.weight")?,
            act,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.wi.forward(x)?;
        let h = match self.act {
            Act::Relu => h.relu()?,
            Act::Gelu => h.gelu_erf()?,
            Act::GeluTanh => h.gelu()?,
            Act::Silu => h.silu()?,
        };
        let h = match &self.wi_1 {
            Some(wi_1) => (h * wi_1.forward(x)?)?,
            None => h,
        };
        self.wo.forward(&h)
    }
}

/// One block: self-attention, cross-attention in the decoder, feed-forward,
/// each after its norm and added to the residual.
struct Block {
    self_norm: Norm,
    self_attn: Attention,
    cross: Option<(Norm, Attention)>,
    ff_norm: Norm,
    ff: FeedForward,
}

/// The encoder's or the decoder's stack of blocks.
struct Stack {
    blocks: Vec<Block>,
    /// The relative position table of block 0, `(buckets, heads)`, which
    /// every block uses.
    positions: Embedding,
    final_norm: Norm,
    /// Buckets for positions on both sides (encoder) or only behind (decoder).
    bidirectional: bool,
    buckets: usize,
    max_distance: usize,
}

impl Stack {
    fn new(vb: VarBuilder, c: &Config, decoder: bool) -> Result<Self> {
        let (gated, act) = c.ff().map_err(candle_core::Error::msg)?;
        let n = if decoder {
            c.decoder_layers()
        } else {
            c.num_layers
        };
        let eps = c.layer_norm_epsilon;
        let mut blocks = Vec::with_capacity(n);
        for i in 0..n {
            let b = vb.pp(format!("block.{i}.layer"));
            let ff = if decoder { "2" } else { "1" };
            blocks.push(Block {
                self_norm: Norm::new(b.pp("0.layer_norm"), c.d_model, eps)?,
                self_attn: Attention::new(b.pp("0.SelfAttention"), c)?,
                cross: decoder
                    .then(|| -> Result<_> {
                        Ok((
                            Norm::new(b.pp("1.layer_norm"), c.d_model, eps)?,
                            Attention::new(b.pp("1.EncDecAttention"), c)?,
                        ))
                    })
                    .transpose()?,
                ff_norm: Norm::new(b.pp(ff).pp("layer_norm"), c.d_model, eps)?,
                ff: FeedForward::new(b.pp(ff).pp("DenseReluDense"), c, gated, act)?,
            });
        }
        let table = vb.get(
            (c.relative_attention_num_buckets, c.num_heads),
            "block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        )?;
        Ok(Stack {
            blocks,
            positions: Embedding::new(table, c.num_heads),
            final_norm: Norm::new(vb.pp("final_layer_norm"), c.d_model, eps)?,
            bidirectional: !decoder,
            buckets: c.relative_attention_num_buckets,
            max_distance: c.relative_attention_max_distance,
        })
    }

    /// The bias added to the scores of `n` queries after `past` cached
    /// positions over all `past + n` keys, `(1, heads, n, past + n)` in
    /// f32: the relative positions' table entries, and in the decoder
    /// `-inf` on keys after the query.
    fn bias(&self, n: usize, past: usize, dev: &Device) -> Result<Tensor> {
        let keys = past + n;
        let mut ids = Vec::with_capacity(n * keys);
        for i in 0..n {
            for j in 0..keys {
                let relative = j as i64 - (past + i) as i64;
                ids.push(bucket(
                    relative,
                    self.bidirectional,
                    self.buckets,
                    self.max_distance,
                ));
            }
        }
        let ids = Tensor::from_vec(ids, (n, keys), dev)?;
        let bias = self
            .positions
            .forward(&ids)?
            .to_dtype(DType::F32)?
            .permute((2, 0, 1))?
            .unsqueeze(0)?;
        if self.bidirectional || n == 1 {
            return Ok(bias);
        }
        let mask: Vec<f32> = (0..n)
            .flat_map(|i| {
                (0..keys).map(move |j| if j > past + i { f32::NEG_INFINITY } else { 0.0 })
            })
            .collect();
        bias.broadcast_add(&Tensor::from_vec(mask, (n, keys), dev)?)
    }
}

/// transformers' bucket of a relative position (`key - query`): exact
/// buckets for the nearest half, logarithmic ones out to `max_distance`;
/// bidirectional stacks give each side half the buckets, causal ones see
/// only positions behind (`relative <= 0`).
fn bucket(relative: i64, bidirectional: bool, buckets: usize, max_distance: usize) -> u32 {
    let (mut nb, mut base) = (buckets as i64, 0i64);
    let distance = if bidirectional {
        nb /= 2;
        if relative > 0 {
            base = nb;
        }
        relative.abs()
    } else {
        (-relative).max(0)
    };
    let max_exact = nb / 2;
    let b = if distance < max_exact {
        distance
    } else {
        // In f32, as transformers computes it.
        let far = ((distance as f32 / max_exact as f32).ln()
            / (max_distance as f32 / max_exact as f32).ln()
            * (nb - max_exact) as f32) as i64;
        (max_exact + far).min(nb - 1)
    };
    (base + b) as u32
}

/// A T5 model: no state of its own; a generation's caches are a [`State`].
pub struct Model {
    shared: Embedding,
    encoder: Stack,
    decoder: Stack,
    lm_head: Tensor,
    /// Multiplies the last hidden state (`d_model^-0.5` when tied).
    out_scale: f64,
    start: u32,
}

/// One generation's caches: the decoder's keys and values so far, and the
/// cross-attention's over the encoded input (computed once).
pub struct State {
    self_kv: Vec<Option<(Tensor, Tensor)>>,
    cross_kv: Vec<(Tensor, Tensor)>,
    past: usize,
}

impl Model {
    /// The model in `vb`.
    pub fn new(c: &Config, vb: VarBuilder) -> Result<Self> {
        let (vocab, d) = (c.vocab_size, c.d_model);
        let shared_name = ["shared", "encoder.embed_tokens", "decoder.embed_tokens"]
            .into_iter()
            .find(|n| vb.contains_tensor(&format!("{n}.weight")))
            .unwrap_or("shared");
        let shared = vb.pp(shared_name).get((vocab, d), "weight")?;
        // A separate output only where the config unties it (transformers
        // 4's T5 v1.1 and FLAN-T5); transformers 5 always ties.
        let lm_head =
            if c.tie_word_embeddings == Some(false) && vb.contains_tensor("lm_head.weight") {
                vb.get((vocab, d), "lm_head.weight")?
            } else {
                shared.clone()
            };
        let scaled = c
            .scale_decoder_outputs
            .unwrap_or(c.tie_word_embeddings != Some(false));
        let out_scale = if scaled { (d as f64).powf(-0.5) } else { 1.0 };
        Ok(Model {
            shared: Embedding::new(shared, d),
            encoder: Stack::new(vb.pp("encoder"), c, false)?,
            decoder: Stack::new(vb.pp("decoder"), c, true)?,
            lm_head,
            out_scale,
            start: c.start_token(),
        })
    }

    /// The token decoding starts from.
    pub fn start_token(&self) -> u32 {
        self.start
    }

    /// The encoder's output for token ids `(batch, n)`, `(batch, n, d_model)`.
    pub fn encode(&self, ids: &Tensor) -> Result<Tensor> {
        let (_, n) = ids.dims2()?;
        let mut x = self.shared.forward(ids)?;
        let bias = self.encoder.bias(n, 0, ids.device())?;
        for b in &self.encoder.blocks {
            let h = b.self_norm.forward(&x)?;
            let (k, v) = b.self_attn.keys_values(&h)?;
            x = (&x + b.self_attn.attend(&h, &k, &v, Some(&bias))?)?;
            x = (&x + b.ff.forward(&b.ff_norm.forward(&x)?)?)?;
        }
        self.encoder.final_norm.forward(&x)
    }

    /// A generation over `encoded` (from [`Model::encode`]): the
    /// cross-attention keys and values of every decoder block.
    pub fn start(&self, encoded: &Tensor) -> Result<State> {
        let cross_kv = self
            .decoder
            .blocks
            .iter()
            .map(|b| match &b.cross {
                Some((_, attn)) => attn.keys_values(encoded),
                None => candle_core::bail!("a decoder block without cross-attention"),
            })
            .collect::<Result<_>>()?;
        Ok(State {
            self_kv: vec![None; self.decoder.blocks.len()],
            cross_kv,
            past: 0,
        })
    }

    /// Logits after the last of the decoder tokens `ids` `(batch, n)`,
    /// `(batch, vocab)` in f32; their keys and values join `state`.
    pub fn decode(&self, state: &mut State, ids: &Tensor) -> Result<Tensor> {
        let (_, n) = ids.dims2()?;
        let mut x = self.shared.forward(ids)?;
        let bias = self.decoder.bias(n, state.past, ids.device())?;
        for (i, b) in self.decoder.blocks.iter().enumerate() {
            let h = b.self_norm.forward(&x)?;
            let (mut k, mut v) = b.self_attn.keys_values(&h)?;
            if let Some((pk, pv)) = &state.self_kv[i] {
                k = Tensor::cat(&[pk, &k], 2)?;
                v = Tensor::cat(&[pv, &v], 2)?;
            }
            x = (&x + b.self_attn.attend(&h, &k, &v, Some(&bias))?)?;
            state.self_kv[i] = Some((k, v));
            if let Some((norm, attn)) = &b.cross {
                let (ck, cv) = &state.cross_kv[i];
                x = (&x + attn.attend(&norm.forward(&x)?, ck, cv, None)?)?;
            }
            x = (&x + b.ff.forward(&b.ff_norm.forward(&x)?)?)?;
        }
        state.past += n;
        let last = self.decoder.final_norm.forward(&x.narrow(1, n - 1, 1)?)?;
        let last = (last.squeeze(1)? * self.out_scale)?;
        last.matmul(&self.lm_head.t()?)?.to_dtype(DType::F32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_transformers() {
        // Values from transformers' _relative_position_bucket with 32
        // buckets and max_distance 128.
        let bi = |r| bucket(r, true, 32, 128);
        let causal = |r| bucket(r, false, 32, 128);
        assert_eq!((bi(0), bi(-3), bi(3), bi(-7), bi(7)), (0, 3, 19, 7, 23));
        assert_eq!((bi(-8), bi(-20), bi(-200), bi(200)), (8, 10, 15, 31));
        assert_eq!((causal(0), causal(5), causal(-5)), (0, 0, 5));
        assert_eq!(
            (causal(-15), causal(-16), causal(-40), causal(-500)),
            (15, 16, 23, 31)
        );
    }
}
