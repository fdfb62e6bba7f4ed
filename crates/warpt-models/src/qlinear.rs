//! The forward pass's products by a weight matrix, whatever its storage:
//! f32, bf16 and f16 packed for warpt's engine ([`crate::packed`]), q8_0 and q4_0
//! repacked for its integer kernels ([`warpt_gemm::quant`]: the
//! activations quantized to 8-bit blocks per call, as llama.cpp does, and
//! no f32 copy of a weight ever made), other GGML block types on candle's
//! kernels.

use std::ops::Range;
use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};
use rayon::prelude::*;
use warpt_gemm::quant::{GROUP, QActs, QMatrix, QType};

use crate::packed::{PackedMatrix, Precision};

/// A weight matrix `[out, in]`: f32 packed for warpt's kernel, q8_0 and
/// q4_0 repacked for its integer kernels, anything else in its GGUF
/// blocks.
pub(crate) enum QLinear {
    /// f32, bf16 or f16 weights on the CPU ([`crate::packed`]).
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
    /// The instruction set of warpt's kernel it multiplies on, `None` on
    /// candle's.
    pub(crate) fn isa(&self) -> Option<&'static str> {
        match self {
            QLinear::Packed(w) => Some(w.precision().isa()),
            QLinear::Quant(m) => Some(m.kernel().isa().name()),
            QLinear::Blocks { .. } => None,
        }
    }

    /// The matrix `t` as the forward pass multiplies by it.
    pub(crate) fn new(t: QTensor, device: &Device) -> candle_core::Result<Self> {
        let dense = match t.dtype() {
            GgmlDType::F32 => Some(Precision::F32),
            GgmlDType::BF16 => Some(Precision::Bf16),
            GgmlDType::F16 => Some(Precision::F16),
            _ => None,
        };
        if let (Some(precision), true) = (dense, device.is_cpu()) {
            let (out, inp) = t.shape().dims2()?;
            // bf16 and f16 widen to f32 exactly, and pack back to the
            // same values.
            let w = t.dequantize(device)?.flatten_all()?.to_vec1::<f32>()?;
            return Ok(QLinear::Packed(PackedMatrix::from_rows_in(
                &w, out, inp, precision,
            )));
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
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
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

/// `x` `(batch, n, in)` times `w` transposed on the integer kernels.
fn quant_forward(w: &QMatrix, x: &Tensor) -> candle_core::Result<Tensor> {
    let (b, n, k) = x.dims3()?;
    let y = with_f32(x, |x| quant_products(&[w], x, b * n, k))?;
    let y = y.into_iter().next().unwrap_or_default();
    Tensor::from_vec(y, (b, n, w.rows()), x.device())
}

/// `x` (`tokens × k`) times each of `ws` transposed on the integer
/// kernels: the activations quantized once for all of them, then bands of
/// the matrices' rows as rayon tasks (each reading its share of the
/// blocks once per four tokens), one fork and join for all.
fn quant_products(ws: &[&QMatrix], x: &[f32], tokens: usize, k: usize) -> Vec<Vec<f32>> {
    let acts = QActs::quantize(x, tokens, k);
    let groups: usize = ws.iter().map(|w| w.groups()).sum();
    let work: usize = ws.iter().map(|w| w.rows()).sum::<usize>() * tokens * k;
    let tasks = if work < SPLIT_MIN {
        1
    } else {
        (2 * rayon::current_num_threads()).clamp(1, groups.div_ceil(GROUPS_MIN))
    };
    // Each matrix's share of the tasks, by its groups; at least one.
    let mut bands = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let g = w.groups();
        let parts = (tasks * g).div_ceil(groups.max(1)).clamp(1, g.max(1));
        bands.extend((0..parts).map(|p| (i, g * p / parts..g * (p + 1) / parts)));
    }
    let product = |(i, band): (usize, Range<usize>)| {
        let w = ws[i];
        let first = band.start * GROUP;
        let width = (band.end * GROUP).min(w.rows()).saturating_sub(first);
        let mut part = vec![0f32; tokens * width];
        w.product(&acts, band, &mut part);
        (i, first, width, part)
    };
    let parts: Vec<_> = if tasks == 1 {
        bands.into_iter().map(product).collect()
    } else {
        bands.into_par_iter().map(product).collect()
    };
    let mut outs: Vec<Vec<f32>> = ws.iter().map(|_| Vec::new()).collect();
    for (i, first, width, part) in parts {
        let rows = ws[i].rows();
        if width == rows {
            outs[i] = part;
            continue;
        }
        if outs[i].is_empty() {
            outs[i] = vec![0f32; tokens * rows];
        }
        for (dst, src) in outs[i].chunks_exact_mut(rows).zip(part.chunks_exact(width)) {
            dst[first..first + width].copy_from_slice(src);
        }
    }
    outs
}

/// `x` `(batch, n, in)` times each of `ws` transposed: on the integer
/// kernels in one go when all are q8_0 or q4_0 ([`quant_products`]: the
/// query, key and value projections, or the gate and the up projection,
/// read the same activations), else one by one.
pub(crate) fn forward_shared(ws: &[&QLinear], x: &Tensor) -> candle_core::Result<Vec<Tensor>> {
    let quant: Option<Vec<&QMatrix>> = ws
        .iter()
        .map(|w| match w {
            QLinear::Quant(m) => Some(m),
            _ => None,
        })
        .collect();
    let Some(quant) = quant else {
        return ws.iter().map(|w| w.forward(x)).collect();
    };
    let (b, n, k) = x.dims3()?;
    let ys = with_f32(x, |x| quant_products(&quant, x, b * n, k))?;
    ys.into_iter()
        .zip(&quant)
        .map(|(y, w)| Tensor::from_vec(y, (b, n, w.rows()), x.device()))
        .collect()
}

/// `x` `(batch, n, in)` times `w` transposed on the packed kernel.
pub(crate) fn packed_forward(w: &PackedMatrix, x: &Tensor) -> candle_core::Result<Tensor> {
    let (b, n, _) = x.dims3()?;
    let y = with_f32(x, |x| w.matmul_t(x, b * n))?;
    Tensor::from_vec(y, (b, n, w.rows()), x.device())
}

/// `f` on `t`'s values: in place when `t` is contiguous f32 on the CPU
/// (a KV cache is not copied per step), else on a copy.
pub(crate) fn with_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> candle_core::Result<R> {
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
