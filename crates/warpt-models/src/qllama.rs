//! A quantized Llama forward pass: the weights stay in their GGUF blocks,
//! the activations and the KV cache in f32. candle-transformers'
//! `quantized_llama` cannot prefill more than one sequence at a time (its
//! last-position slice is not contiguous for the quantized output
//! projection) and keeps its KV cache inside the model; this one takes
//! batches and an external cache, like the dense `llama` does.
//!
//! q8_0 and q4_0 matrices are repacked at load for warpt's integer kernels
//! ([`warpt_gemm::quant`]): every product, a decode step's (one token per
//! sequence, bound by reading the weights, which the blocks make 4-8x
//! smaller) and a prefill's (many tokens: an integer GEMM), quantizes the
//! activations to 8-bit blocks and multiplies on the blocks, as
//! llama.cpp does; no f32 copy of a weight is ever made. Other block
//! types run on candle's GGML kernels; f32 weights (GGUF type F32) are
//! packed at load for warpt's f32 engine ([`crate::packed`]).

use std::io::{Read, Seek};

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor, gguf_file};
use candle_core::{DType, Device, IndexOp, Module, Tensor};

use rayon::prelude::*;
use warpt_gemm::quant::{QActs, QMatrix, QType};

use crate::attention::{self, Dims};
use crate::model::Shape;
use crate::packed::PackedMatrix;

/// A weight matrix `[out, in]`: f32 packed for warpt's kernel, q8_0 and
/// q4_0 repacked for its integer kernels, anything else in its GGUF
/// blocks.
enum QLinear {
    /// f32 weights on the CPU ([`crate::packed`]).
    Packed(PackedMatrix),
    /// q8_0 or q4_0 weights on the CPU ([`warpt_gemm::quant`]).
    Quant(QMatrix),
    /// Other block types (or not on the CPU), on candle's kernels.
    Blocks {
        /// The blocks, for dequantizing a prefill's matrix.
        blocks: Arc<QTensor>,
        /// candle's products on them.
        matmul: QMatMul,
    },
}

impl QLinear {
    fn new(t: QTensor, device: &Device) -> candle_core::Result<Self> {
        if t.dtype() == GgmlDType::F32 && device.is_cpu() {
            let (out, inp) = t.shape().dims2()?;
            let w = t.dequantize(device)?.flatten_all()?.to_vec1::<f32>()?;
            return Ok(QLinear::Packed(PackedMatrix::from_rows(&w, out, inp)));
        }
        let qtype = match t.dtype() {
            GgmlDType::Q8_0 => Some(QType::Q8_0),
            GgmlDType::Q4_0 => Some(QType::Q4_0),
            _ => None,
        };
        if let (Some(qtype), true) = (qtype, device.is_cpu()) {
            let (out, inp) = t.shape().dims2()?;
            let m = QMatrix::from_ggml(qtype, &t.data()?, out, inp)
                .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
            return Ok(QLinear::Quant(m));
        }
        let blocks = Arc::new(t);
        Ok(QLinear::Blocks {
            matmul: QMatMul::from_arc(blocks.clone())?,
            blocks,
        })
    }

    /// `x` `(batch, n, in)` times the matrix transposed: f32 through the
    /// packed kernel, q8_0 and q4_0 through the integer kernels, other
    /// blocks through candle's (dequantized to f32 for a prefill, where
    /// its block kernels run at a fraction of a GEMM).
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (b, n, k) = x.dims3()?;
        let (blocks, matmul) = match self {
            QLinear::Packed(w) => return packed_forward(w, x),
            QLinear::Quant(w) => return quant_forward(w, x),
            QLinear::Blocks { blocks, matmul } => (blocks, matmul),
        };
        let dense = matches!(
            blocks.dtype(),
            GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16
        );
        if n == 1 || dense {
            return matmul.forward(x);
        }
        let w = blocks.dequantize(x.device())?;
        x.reshape((b * n, k))?.matmul(&w.t()?)?.reshape((b, n, ()))
    }
}

/// Row groups per task of a quantized product at least: fewer cost more
/// in the task's overhead than they gain in balance.
const GROUPS_MIN: usize = 2;

/// Multiply-adds below which a quantized product runs on the calling
/// thread: a decode step's projections (a few hundred thousand, a few
/// microseconds) cost less than waking the pool's other threads.
const SPLIT_MIN: usize = 1 << 16;

/// `x` `(batch, n, in)` times `w` transposed on the integer kernels: the
/// activations quantized once, then bands of `w`'s rows as rayon tasks
/// (each reading its share of the blocks once per four tokens), each into
/// a buffer of its own, copied into place.
fn quant_forward(w: &QMatrix, x: &Tensor) -> candle_core::Result<Tensor> {
    let (b, n, k) = x.dims3()?;
    let tokens = b * n;
    let acts = QActs::quantize(&x.flatten_all()?.to_vec1::<f32>()?, tokens, k);
    let rows = w.rows();
    let groups = w.groups();
    let tasks = if tokens * rows * k < SPLIT_MIN {
        1
    } else {
        (2 * rayon::current_num_threads()).clamp(1, groups.div_ceil(GROUPS_MIN))
    };
    let bands: Vec<std::ops::Range<usize>> = (0..tasks)
        .map(|i| groups * i / tasks..groups * (i + 1) / tasks)
        .filter(|r| !r.is_empty())
        .collect();
    let mut y = vec![0f32; tokens * rows];
    if bands.len() == 1 {
        w.product(&acts, 0..groups, &mut y);
    } else {
        let parts: Vec<(usize, usize, Vec<f32>)> = bands
            .into_par_iter()
            .map(|band| {
                let first = band.start * warpt_gemm::quant::GROUP;
                let width = (band.end * warpt_gemm::quant::GROUP).min(rows) - first;
                let mut part = vec![0f32; tokens * width];
                w.product(&acts, band, &mut part);
                (first, width, part)
            })
            .collect();
        for (first, width, part) in parts {
            for (dst, src) in y.chunks_exact_mut(rows).zip(part.chunks_exact(width)) {
                dst[first..first + width].copy_from_slice(src);
            }
        }
    }
    Tensor::from_vec(y, (b, n, rows), x.device())
}

/// `x` `(batch, n, in)` times `w` transposed on the packed kernel.
fn packed_forward(w: &PackedMatrix, x: &Tensor) -> candle_core::Result<Tensor> {
    let (b, n, _) = x.dims3()?;
    let y = w.matmul_t(&x.flatten_all()?.to_vec1::<f32>()?, b * n);
    Tensor::from_vec(y, (b, n, w.rows()), x.device())
}

/// `f` on `t`'s values: in place when `t` is contiguous f32 on the CPU
/// (a KV cache is not copied per step), else on a copy.
fn with_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> candle_core::Result<R> {
    {
        let (storage, layout) = t.storage_and_layout();
        if let (candle_core::Storage::Cpu(candle_core::CpuStorage::F32(values)), Some((a, z))) =
            (&*storage, layout.contiguous_offsets())
        {
            return Ok(f(&values[a..z]));
        }
    }
    Ok(f(&t.flatten_all()?.to_vec1::<f32>()?))
}

/// One decoder layer's weights.
struct Layer {
    attn_norm: Tensor,
    wq: QLinear,
    wk: QLinear,
    wv: QLinear,
    wo: QLinear,
    ffn_norm: Tensor,
    gate: QLinear,
    up: QLinear,
    down: QLinear,
}

/// The model: embeddings dequantized to f32 (a lookup, not a product),
/// every matrix in its stored blocks.
pub struct QLlama {
    embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QLinear,
    shape: Shape,
    eps: f32,
    cos: Tensor,
    sin: Tensor,
}

/// Keys and values of the positions seen so far, per layer.
pub struct Cache {
    kv: Vec<Option<(Tensor, Tensor)>>,
}

impl Cache {
    /// An empty cache for `model`.
    pub fn new(model: &QLlama) -> Self {
        Cache {
            kv: vec![None; model.layers.len()],
        }
    }
}

impl QLlama {
    /// The model in a GGUF stream whose header `content` was read from it,
    /// of the given `shape` (see [`crate::gguf::Info`]).
    pub fn from_gguf<R: Read + Seek>(
        content: &gguf_file::Content,
        r: &mut R,
        shape: Shape,
        device: &Device,
    ) -> candle_core::Result<Self> {
        let md_f32 = |k: &str, default: f32| {
            content
                .metadata
                .get(k)
                .and_then(|v| v.to_f32().ok())
                .unwrap_or(default)
        };
        let eps = md_f32("llama.attention.layer_norm_rms_epsilon", 1e-5);
        let theta = md_f32("llama.rope.freq_base", 10_000.0);
        let mut get = |name: &str| content.tensor(r, name, device);
        let embed_q = get("token_embd.weight")?;
        let embed = embed_q.dequantize(device)?;
        let norm = get("output_norm.weight")?.dequantize(device)?;
        // Tied embeddings: llama.cpp omits output.weight.
        let output = match get("output.weight") {
            Ok(t) => QLinear::new(t, device)?,
            Err(_) => QLinear::new(embed_q, device)?,
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let mut q = |part: &str| -> candle_core::Result<QLinear> {
                QLinear::new(
                    content.tensor(r, &format!("blk.{i}.{part}.weight"), device)?,
                    device,
                )
            };
            layers.push(Layer {
                wq: q("attn_q")?,
                wk: q("attn_k")?,
                wv: q("attn_v")?,
                wo: q("attn_output")?,
                gate: q("ffn_gate")?,
                up: q("ffn_up")?,
                down: q("ffn_down")?,
                attn_norm: content
                    .tensor(r, &format!("blk.{i}.attn_norm.weight"), device)?
                    .dequantize(device)?,
                ffn_norm: content
                    .tensor(r, &format!("blk.{i}.ffn_norm.weight"), device)?
                    .dequantize(device)?,
            });
        }
        let hd = shape.head_dim;
        let inv: Vec<f32> = (0..hd / 2)
            .map(|i| 1.0 / theta.powf(2.0 * i as f32 / hd as f32))
            .collect();
        let inv = Tensor::from_vec(inv, (1, hd / 2), device)?;
        let positions = Tensor::arange(0u32, shape.context as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((shape.context, 1))?;
        let angles = positions.matmul(&inv)?;
        Ok(QLlama {
            embed,
            layers,
            norm,
            output,
            shape,
            eps,
            cos: angles.cos()?,
            sin: angles.sin()?,
        })
    }

    /// Token ids `(batch, n)` at position `pos` onward: the logits after
    /// the last of them, `(batch, vocab)`.
    pub fn forward(
        &self,
        ids: &Tensor,
        pos: usize,
        cache: &mut Cache,
    ) -> candle_core::Result<Tensor> {
        if rayon::current_thread_index().is_some() {
            return self.forward_in_pool(ids, pos, cache);
        }
        // On one of rayon's threads, so the products' tasks split between
        // it and the others, with no thread waiting outside the pool: a
        // caller outside it would sleep and wake at every product (a
        // decode step has ~85), a third thread on the CPUs' two.
        rayon::scope(|_| self.forward_in_pool(ids, pos, cache))
    }

    /// [`Self::forward`] on a thread of rayon's pool.
    fn forward_in_pool(
        &self,
        ids: &Tensor,
        pos: usize,
        cache: &mut Cache,
    ) -> candle_core::Result<Tensor> {
        let (b, n) = ids.dims2()?;
        let s = self.shape;
        let (hd, h) = (s.head_dim, s.hidden);
        let (cos, sin) = (self.cos.narrow(0, pos, n)?, self.sin.narrow(0, pos, n)?);
        let mut x = self
            .embed
            .index_select(&ids.flatten_all()?, 0)?
            .reshape((b, n, h))?;
        for (layer, kv) in self.layers.iter().zip(cache.kv.iter_mut()) {
            let y = candle_nn::ops::rms_norm(&x, &layer.attn_norm, self.eps)?;
            let heads = |w: &QLinear, count: usize| -> candle_core::Result<Tensor> {
                w.forward(&y)?
                    .reshape((b, n, count, hd))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = candle_nn::rotary_emb::rope_i(&heads(&layer.wq, s.heads)?, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope_i(&heads(&layer.wk, s.kv_heads)?, &cos, &sin)?;
            let v = heads(&layer.wv, s.kv_heads)?;
            let (k, v) = match kv.take() {
                Some((pk, pv)) if pos > 0 => {
                    (Tensor::cat(&[&pk, &k], 2)?, Tensor::cat(&[&pv, &v], 2)?)
                }
                _ => (k, v),
            };
            *kv = Some((k.clone(), v.clone()));
            let dims = Dims {
                batch: b,
                heads: s.heads,
                kv_heads: s.kv_heads,
                queries: n,
                keys: k.dim(2)?,
                head_dim: hd,
            };
            let o = with_f32(&q, |q| {
                with_f32(&k, |k| with_f32(&v, |v| attention::causal(q, k, v, dims)))
            })???;
            let o = Tensor::from_vec(o, (b, n, h), ids.device())?;
            x = (x + layer.wo.forward(&o)?)?;
            let y = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, self.eps)?;
            let act = (candle_nn::ops::silu(&layer.gate.forward(&y)?)? * layer.up.forward(&y)?)?;
            x = (x + layer.down.forward(&act)?)?;
        }
        let last = x.i((.., n - 1, ..))?.contiguous()?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, self.eps)?;
        self.output.forward(&last.unsqueeze(1)?)?.squeeze(1)
    }
}
