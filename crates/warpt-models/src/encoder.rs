//! BERT's encoder forward pass in f32 on warpt's packed kernel
//! ([`crate::packed`]), with sentence-transformers' pooling: what `embed`
//! runs for f32 on the CPU (`bert_dense`, on candle's operations, runs the rest).
//!
//! candle's BERT reaches half of this CPU's arithmetic: its GEMM packs the
//! `[out, in]` weights on every call, attention runs as many small batched
//! products, and GELU calls libm's erf per element. Here each layer is
//! three packed products with the bias added in the kernel (query, key
//! and value fused into one), attention runs one task per sequence and head
//! with both of its products on the packed kernel (in bf16 on AMX, its
//! own tile loop: [`tiled`]), and GELU and softmax are vectorized
//! ([`crate::fastmath`]).

use std::collections::HashMap;

use candle_core::{DType, Tensor};
use candle_transformers::models::bert;
use rayon::prelude::*;
use warpt_gemm::Bf16;

use crate::fastmath;
use crate::packed::{PackedMatrix, Precision};
use crate::uninit::{chunks, copy, par_rows};

mod tiled;

/// About how many bytes (f32) a product's output in a block of the
/// encoder's rows holds: the QKV product's, the feed-forward expansion's.
/// Whole, at MiniLM's batch of 32 x 128 tokens, the expansion was 25 MB
/// written by one product, read by GELU and read again by the next, the
/// QKV output 19 MB read back by attention, both far past the L2. Measured
/// on a 2-core Xeon (L2 2 MiB a core, bf16 on AMX): MiniLM in blocks of
/// 16 sequences, the expansion in two of 1024 rows, 1.25x the whole;
/// BERT-base at batch 4 x 384, the expansion in two blocks of 768 rows,
/// 1.09x (512 rows: 1.06x; two sequences a block: no change).
const BLOCK: usize = 12 << 20;

/// A LayerNorm's scale and shift.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// One encoder layer.
struct Layer {
    /// Query, key and value stacked: `3 × hidden` outputs.
    qkv: PackedMatrix,
    /// Attention's output projection.
    attn_out: PackedMatrix,
    attn_norm: Norm,
    /// The feed-forward layer's expansion and projection.
    inter: PackedMatrix,
    out: PackedMatrix,
    out_norm: Norm,
}

/// A BERT encoder held for the packed kernel.
pub struct PackedBert {
    /// The precision of its products (the linear layers' and attention's).
    precision: Precision,
    hidden: usize,
    heads: usize,
    eps: f32,
    max_positions: usize,
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token type 0's embedding: every sentence is segment 0.
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    /// Bytes of a product's output in a block of rows ([`BLOCK`]).
    block: usize,
}

/// The mean over the unmasked tokens of each of `batch` sequences of
/// `hidden` states (`batch × seq × h`, row-major), scaled to unit norm:
/// sentence-transformers' pooling.
pub fn mean_pool_unit(
    hidden: &[f32],
    mask: &[u32],
    batch: usize,
    seq: usize,
    h: usize,
) -> Vec<Vec<f32>> {
    (0..batch)
        .map(|b| {
            let mut mean = vec![0f64; h];
            let mut count = 0usize;
            for t in 0..seq {
                if mask[b * seq + t] != 0 {
                    count += 1;
                    let row = &hidden[(b * seq + t) * h..][..h];
                    mean.iter_mut().zip(row).for_each(|(m, v)| *m += *v as f64);
                }
            }
            let count = count.max(1) as f64;
            mean.iter_mut().for_each(|m| *m /= count);
            let norm = mean.iter().map(|m| m * m).sum::<f64>().sqrt().max(1e-12);
            mean.iter().map(|m| (m / norm) as f32).collect()
        })
        .collect()
}

impl PackedBert {
    /// Whether this forward pass computes what `c` describes: GELU with
    /// erf and absolute positions (all-MiniLM and BERT proper).
    pub fn supports(c: &bert::Config) -> bool {
        matches!(c.hidden_act, bert::HiddenAct::Gelu)
            && matches!(
                c.position_embedding_type,
                bert::PositionEmbeddingType::Absolute
            )
            && c.num_attention_heads > 0
            && c.hidden_size.is_multiple_of(c.num_attention_heads)
    }

    /// The encoder in `tensors` (Hugging Face names, with or without a
    /// `bert.` prefix) of configuration `c`, its products in `precision`
    /// (bf16: weights rounded here, inputs as they are multiplied, sums in
    /// f32; softmax, norms and GELU stay f32).
    pub fn load(
        tensors: &HashMap<String, Tensor>,
        c: &bert::Config,
        precision: Precision,
    ) -> Result<Self, String> {
        let get = |name: &str, len: usize| -> Result<Vec<f32>, String> {
            let t = tensors
                .get(name)
                .or_else(|| tensors.get(&format!("bert.{name}")))
                .ok_or_else(|| format!("the weights have no tensor {name}"))?;
            let v = t
                .to_dtype(DType::F32)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|e| format!("reading {name}: {e}"))?;
            if v.len() != len {
                return Err(format!(
                    "{name} has {} values; the config implies {len}",
                    v.len()
                ));
            }
            Ok(v)
        };
        let (h, i) = (c.hidden_size, c.intermediate_size);
        let norm = |prefix: &str| -> Result<Norm, String> {
            Ok(Norm {
                weight: get(&format!("{prefix}.weight"), h)?,
                bias: get(&format!("{prefix}.bias"), h)?,
            })
        };
        let linear = |prefix: &str, n: usize, k: usize| -> Result<PackedMatrix, String> {
            let w = get(&format!("{prefix}.weight"), n * k)?;
            let b = get(&format!("{prefix}.bias"), n)?;
            Ok(PackedMatrix::from_rows_in(&w, n, k, precision).with_bias(&b))
        };
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for l in 0..c.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let (mut w, mut b) = (Vec::with_capacity(3 * h * h), Vec::with_capacity(3 * h));
            for part in ["query", "key", "value"] {
                w.extend(get(&format!("{p}.attention.self.{part}.weight"), h * h)?);
                b.extend(get(&format!("{p}.attention.self.{part}.bias"), h)?);
            }
            layers.push(Layer {
                qkv: PackedMatrix::from_rows_in(&w, 3 * h, h, precision).with_bias(&b),
                attn_out: linear(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                inter: linear(&format!("{p}.intermediate.dense"), i, h)?,
                out: linear(&format!("{p}.output.dense"), h, i)?,
                out_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let token_types = get(
            "embeddings.token_type_embeddings.weight",
            c.type_vocab_size * h,
        )?;
        Ok(PackedBert {
            precision,
            hidden: h,
            heads: c.num_attention_heads,
            eps: c.layer_norm_eps as f32,
            max_positions: c.max_position_embeddings,
            word: get("embeddings.word_embeddings.weight", c.vocab_size * h)?,
            position: get(
                "embeddings.position_embeddings.weight",
                c.max_position_embeddings * h,
            )?,
            token_type: token_types[..h].to_vec(),
            embed_norm: norm("embeddings.LayerNorm")?,
            layers,
            block: BLOCK,
        })
    }

    /// The precision of its products.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The pooled, unit-norm embedding of each of `batch` sequences of
    /// `seq` token `ids` (row-major), where `mask` is 1 on real tokens and
    /// 0 on padding.
    pub fn embed(
        &self,
        ids: &[u32],
        mask: &[u32],
        batch: usize,
        seq: usize,
    ) -> Result<Vec<Vec<f32>>, String> {
        let hidden = self.forward(ids, mask, batch, seq)?;
        Ok(mean_pool_unit(&hidden, mask, batch, seq, self.hidden))
    }

    /// The last layer's hidden states, `batch × seq × hidden` (row-major),
    /// for `ids` and `mask` as [`embed`](Self::embed) takes them.
    pub fn forward(
        &self,
        ids: &[u32],
        mask: &[u32],
        batch: usize,
        seq: usize,
    ) -> Result<Vec<f32>, String> {
        let h = self.hidden;
        let rows = batch * seq;
        if ids.len() != rows || mask.len() != rows {
            return Err(format!(
                "{} ids and {} mask values for {batch} x {seq}",
                ids.len(),
                mask.len()
            ));
        }
        if seq > self.max_positions {
            return Err(format!(
                "{seq} tokens; the model has {} positions",
                self.max_positions
            ));
        }
        let vocab = self.word.len() / h;
        if let Some(bad) = ids.iter().find(|&&id| id as usize >= vocab) {
            return Err(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            ));
        }
        if rows == 0 {
            // No tokens: no blocks of them to cut.
            return Ok(Vec::new());
        }
        let mut x = vec![0f32; rows * h];
        x.par_chunks_mut(h).enumerate().for_each(|(r, row)| {
            let word = &self.word[ids[r] as usize * h..][..h];
            let pos = &self.position[(r % seq) * h..][..h];
            for (((o, w), p), t) in row.iter_mut().zip(word).zip(pos).zip(&self.token_type) {
                *o = w + p + t;
            }
        });
        layer_norm(&mut x, &self.embed_norm, self.eps);
        let keep: Vec<f32> = mask
            .iter()
            .map(|&m| if m != 0 { 1.0 } else { 0.0 })
            .collect();
        // The products' outputs, made (and zeroed) once for every layer:
        // a new vector per product was a memset of 44 MB a layer at batch
        // 32 x 128 tokens on MiniLM, 7% of a bf16 forward pass.
        let (mut qkv, mut ctx, mut inter, mut inter16) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // Each layer a block of whole sequences at a time (attention
        // stays inside a sequence), the QKV product's output about
        // `block` bytes, but as many sequences as threads (attention's
        // split); the feed-forward layer within it a block of rows at a
        // time, its expansion (GELU's input and output) about as large.
        let per_sequence = seq * 3 * h * 4;
        let most = (self.block / per_sequence).max(rayon::current_num_threads());
        let seqs = batch.div_ceil(batch.div_ceil(most.max(1)));
        for layer in &self.layers {
            for (x, keep) in x.chunks_mut(seqs * seq * h).zip(keep.chunks(seqs * seq)) {
                let rows = keep.len();
                qkv.resize(rows * layer.qkv.rows(), 0.0);
                layer.qkv.matmul_t_into(x, rows, &mut qkv);
                self.attention(&qkv, keep, rows / seq, seq, &mut ctx);
                // The residual is the product's start (x += ctx · Wᵀ + b):
                // no output zeroed, no pass adding it before the norm.
                layer.attn_out.matmul_t_add(&ctx, rows, x);
                layer_norm(x, &layer.attn_norm, self.eps);
                let width = layer.inter.rows();
                let blocks = (rows * width * 4).div_ceil(self.block).max(1);
                for x in x.chunks_mut(rows.div_ceil(blocks) * h) {
                    self.feed_forward(layer, x, &mut inter, &mut inter16);
                }
                layer_norm(x, &layer.out_norm, self.eps);
            }
        }
        Ok(x)
    }

    /// `x += out(GELU(inter(x)))` for the rows of `x`, through the
    /// buffers `inter` and `inter16` (kept from call to call).
    fn feed_forward(
        &self,
        layer: &Layer,
        x: &mut [f32],
        inter: &mut Vec<f32>,
        inter16: &mut Vec<Bf16>,
    ) {
        let rows = x.len() / self.hidden;
        inter.resize(rows * layer.inter.rows(), 0.0);
        layer.inter.matmul_t_into(x, rows, inter);
        if layer.out.multiplies_bf16() {
            // GELU written in bf16 as the next product reads it: the
            // same values, one pass instead of three over them.
            inter16.resize(inter.len(), Bf16(0));
            inter16
                .par_chunks_mut(1 << 14)
                .zip(inter.par_chunks(1 << 14))
                .for_each(|(o, i)| fastmath::gelu_erf_to_bf16(i, o));
            layer.out.matmul_t_add_bf16(inter16, rows, x);
        } else {
            inter.par_chunks_mut(1 << 14).for_each(fastmath::gelu_erf);
            layer.out.matmul_t_add(inter, rows, x);
        }
    }

    /// Scaled dot-product attention over `qkv` (`rows × 3 hidden`) into
    /// `ctx` (`rows × hidden`): in bf16 on the AMX tiles where they exist
    /// ([`tiled`]), else one task per sequence and head on the packed
    /// kernel.
    fn attention(&self, qkv: &[f32], keep: &[f32], batch: usize, seq: usize, ctx: &mut Vec<f32>) {
        let (h, heads) = (self.hidden, self.heads);
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        if self.precision == Precision::Bf16 {
            let shape = tiled::Shape {
                hidden: h,
                heads,
                dim: d,
                scale,
            };
            ctx.resize(batch * seq * h, 0.0);
            if tiled::attention(qkv, keep, seq, &shape, ctx) {
                return;
            }
        }
        let blocks: Vec<Vec<f32>> = (0..batch * heads)
            .into_par_iter()
            .map(|task| {
                let (b, head) = (task / heads, task % heads);
                let part = |offset: usize, scale: f32| -> Vec<f32> {
                    let mut out = Vec::with_capacity(seq * d);
                    for t in 0..seq {
                        let row = &qkv[(b * seq + t) * 3 * h + offset + head * d..][..d];
                        out.extend(row.iter().map(|v| v * scale));
                    }
                    out
                };
                // In bf16, written so once from qkv (the same values the
                // products would round them to, without f32 copies).
                let part16 = |offset: usize, scale: f32| -> Vec<Bf16> {
                    let mut out = vec![Bf16(0); seq * d];
                    let mut row = vec![0f32; d];
                    for (t, o) in out.chunks_exact_mut(d).enumerate() {
                        let src = &qkv[(b * seq + t) * 3 * h + offset + head * d..][..d];
                        row.iter_mut().zip(src).for_each(|(r, v)| *r = v * scale);
                        warpt_gemm::simd::bf16_from_f32(&row, o);
                    }
                    out
                };
                // Both products in the linear layers' precision (bf16:
                // as PyTorch's autocast multiplies them), the softmax in
                // f32.
                SCORES.with_borrow_mut(|scores| {
                    // Each thread's scores in one buffer for all its tasks
                    // (zeroed when it grows, not per task).
                    scores.resize(scores.len().max(seq * seq), 0.0);
                    let scores = &mut scores[..seq * seq];
                    let values = if self.precision == Precision::Bf16 {
                        let keys = PackedMatrix::from_rows_bf16(&part16(h, 1.0), seq, d);
                        keys.matmul_t_into_serial_bf16(&part16(0, scale), seq, scores);
                        PackedMatrix::from_cols_bf16(&part16(2 * h, 1.0), d, seq)
                    } else {
                        let keys =
                            PackedMatrix::from_rows_in(&part(h, 1.0), seq, d, self.precision);
                        keys.matmul_t_into_serial(&part(0, scale), seq, scores);
                        PackedMatrix::from_cols_in(&part(2 * h, 1.0), d, seq, self.precision)
                    };
                    let keep = &keep[b * seq..][..seq];
                    for row in scores.chunks_exact_mut(seq) {
                        fastmath::softmax_masked(row, keep);
                    }
                    values.matmul_t_serial(scores, seq)
                })
            })
            .collect();
        // Each token's heads side by side, the tokens in parallel (into a
        // vector nothing zeroes first).
        *ctx = par_rows(batch * seq, h, |r, slots| {
            let (b, t) = (r / seq, r % seq);
            chunks(slots, d, |head, s| {
                copy(s, &blocks[b * heads + head][t * d..][..d])
            })
        })
    }
}

thread_local! {
    /// A thread's attention scores (`seq × seq`), kept between its tasks.
    static SCORES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `x = LayerNorm(x)` row by row (rows of the norm's width).
fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
    let h = norm.weight.len();
    x.par_chunks_mut(h).for_each(|row| {
        fastmath::layer_norm(row, None, &norm.weight, &norm.bias, eps);
    });
}

#[cfg(test)]
mod tests;
