//! Several projections of the same activations, as a decoder layer runs
//! them: the query, key and value projections, or the MLP's gate and up
//! projections.
//!
//! f32 and bf16 matrices on the CPU are stacked at load into one packed
//! matrix (the rows of each, one after the other), so a prefill's
//! activations are converted (to bf16) and packed once per layer input,
//! not once per projection, and each task's product is as wide as the
//! three or two together; the outputs are columns of one result. Their
//! consumers read them in place: [`Outputs::heads`] scatters the query,
//! key and value columns straight into the attention's per-head layout,
//! and [`Outputs::swiglu`] computes the MLP's activation from the gate and
//! up columns in one vectorized pass (candle's SiLU called libm's `expf`
//! per element, then multiplied in a second pass). Other storage (q8_0
//! and q4_0 share the activations' quantization their own way, GPU
//! tensors) keeps one matrix per projection.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use crate::fastmath;
use crate::packed::{PackedMatrix, Precision};
use crate::qlinear::{QLinear, forward_shared, packed_forward, with_f32};
use crate::uninit::{copy, par_rows};

/// Rotary position embeddings, as candle's `rope_i` applies them
/// (interleaved pairs): `cos` and `sin` `(n, head_dim / 2)`, for the
/// first `outputs` outputs of [`Outputs::heads`] (the queries and keys).
#[derive(Clone, Copy)]
pub(crate) struct Rope<'a> {
    /// How many outputs, from the first, are rotated.
    pub(crate) outputs: usize,
    /// The cosines, a row per position.
    pub(crate) cos: &'a Tensor,
    /// The sines, a row per position.
    pub(crate) sin: &'a Tensor,
}

/// The projections of one input.
pub(crate) enum Projections {
    /// One packed matrix holding every projection's rows, and each one's
    /// output width (its rows), in order.
    Stacked(Box<PackedMatrix>, Vec<usize>),
    /// One matrix per projection.
    Each(Vec<QLinear>),
}

/// What [`Projections::forward`] returns: each projection's output
/// `(batch, n, width)`, as columns of one tensor or as tensors of their
/// own.
pub(crate) enum Outputs {
    /// One `(batch, n, Σ widths)` tensor and the widths, in order.
    Columns(Tensor, Vec<usize>),
    /// One tensor per projection.
    Each(Vec<Tensor>),
}

impl Projections {
    /// The projections by `parts` (`[out, in]` matrices of the same input
    /// width): stacked when all are f32, all bf16 or all f16, on the CPU.
    pub(crate) fn new(parts: Vec<QTensor>, device: &Device) -> candle_core::Result<Self> {
        let dtype = parts.first().map(QTensor::dtype);
        let dense = match dtype {
            Some(GgmlDType::F32) => Some(Precision::F32),
            Some(GgmlDType::BF16) => Some(Precision::Bf16),
            Some(GgmlDType::F16) => Some(Precision::F16),
            _ => None,
        };
        let same = parts.iter().all(|p| Some(p.dtype()) == dtype);
        let (Some(precision), true, true, true) = (dense, same, device.is_cpu(), parts.len() > 1)
        else {
            return Ok(Projections::Each(
                parts
                    .into_iter()
                    .map(|p| QLinear::new(p, device))
                    .collect::<candle_core::Result<_>>()?,
            ));
        };
        let mut rows = Vec::new();
        let mut widths = Vec::with_capacity(parts.len());
        let mut inp = None;
        for p in &parts {
            let (out, k) = p.shape().dims2()?;
            if inp.is_some_and(|i| i != k) {
                return Err(candle_core::Error::Msg(format!(
                    "projections of one input of different widths ({} and {k})",
                    inp.unwrap_or(k)
                )));
            }
            inp = Some(k);
            rows.extend(p.dequantize(device)?.flatten_all()?.to_vec1::<f32>()?);
            widths.push(out);
        }
        let n = widths.iter().sum();
        let k = inp.unwrap_or(0);
        Ok(Projections::Stacked(
            Box::new(PackedMatrix::from_rows_in(&rows, n, k, precision)),
            widths,
        ))
    }

    /// Every projection of `x` `(batch, n, in)`.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Outputs> {
        Ok(match self {
            Projections::Stacked(w, widths) => {
                Outputs::Columns(packed_forward(w, x)?, widths.clone())
            }
            Projections::Each(ws) => {
                Outputs::Each(forward_shared(&ws.iter().collect::<Vec<_>>(), x)?)
            }
        })
    }
}

/// One output's place in host memory: its values, the row stride, its
/// first column and its width.
#[derive(Clone, Copy)]
struct Place<'a> {
    values: &'a [f32],
    stride: usize,
    first: usize,
    width: usize,
}

impl<'a> Place<'a> {
    /// All of `values`, rows `width` long.
    fn whole(values: &'a [f32], width: usize) -> Self {
        Place {
            values,
            stride: width,
            first: 0,
            width,
        }
    }

    /// Output `i` of the columns `widths` (in order) of `values`.
    fn column(values: &'a [f32], widths: &[usize], i: usize) -> Self {
        Place {
            values,
            stride: widths.iter().sum(),
            first: widths[..i].iter().sum(),
            width: widths[i],
        }
    }

    /// Token `t`'s row of this output.
    fn row(&self, t: usize) -> &'a [f32] {
        let at = t * self.stride + self.first;
        &self.values[at..at + self.width]
    }
}

impl Outputs {
    /// How many outputs there are.
    fn len(&self) -> usize {
        match self {
            Outputs::Columns(_, widths) => widths.len(),
            Outputs::Each(ts) => ts.len(),
        }
    }

    /// `f` on output `i`'s place in host memory (in place when its tensor
    /// is contiguous f32 on the CPU, else on a copy).
    fn with_place<R>(&self, i: usize, f: impl FnOnce(Place<'_>) -> R) -> candle_core::Result<R> {
        match self {
            Outputs::Columns(t, widths) => with_f32(t, |v| f(Place::column(v, widths, i))),
            Outputs::Each(ts) => {
                let width = ts[i].dims().last().copied().unwrap_or(0);
                with_f32(&ts[i], |v| f(Place::whole(v, width)))
            }
        }
    }

    /// The outputs as attention heads: output `i` `(batch, n, counts[i] ·
    /// head_dim)` becomes `(batch, counts[i], n, head_dim)`, contiguous,
    /// the first `rope.outputs` of them rotated by `rope`.
    pub(crate) fn heads(
        &self,
        (b, n): (usize, usize),
        counts: &[usize],
        head_dim: usize,
        rope: Rope<'_>,
        device: &Device,
    ) -> candle_core::Result<Vec<Tensor>> {
        if counts.len() != self.len() {
            return Err(candle_core::Error::Msg(format!(
                "{} outputs, {} head counts",
                self.len(),
                counts.len()
            )));
        }
        if let (false, Outputs::Each(ts)) = (device.is_cpu(), self) {
            return ts
                .iter()
                .zip(counts)
                .enumerate()
                .map(|(i, (t, &count))| {
                    let t = t
                        .reshape((b, n, count, head_dim))?
                        .transpose(1, 2)?
                        .contiguous()?;
                    match i < rope.outputs {
                        true => candle_nn::rotary_emb::rope_i(&t, rope.cos, rope.sin),
                        false => Ok(t),
                    }
                })
                .collect();
        }
        with_f32(rope.cos, |cos| {
            with_f32(rope.sin, |sin| {
                counts
                    .iter()
                    .enumerate()
                    .map(|(i, &count)| {
                        let turn = (i < rope.outputs).then_some((cos, sin));
                        let values = self.with_place(i, |place| {
                            to_heads(place, (b, n), count, head_dim, turn)
                        })??;
                        Tensor::from_vec(values, (b, count, n, head_dim), device)
                    })
                    .collect()
            })
        })??
    }

    /// `silu(gate) · up` of the two outputs (gate first), `(batch, n,
    /// width)`: a Llama MLP's activation.
    pub(crate) fn swiglu(&self, device: &Device) -> candle_core::Result<Tensor> {
        let (b, n, act) = match self {
            Outputs::Each(ts) if !device.is_cpu() => {
                let [gate, up] = ts.as_slice() else {
                    return Err(swiglu_arity(ts.len()));
                };
                return candle_nn::ops::silu(gate)? * up;
            }
            Outputs::Columns(t, widths) => {
                let (b, n, _) = t.dims3()?;
                if widths.len() != 2 {
                    return Err(swiglu_arity(widths.len()));
                }
                let act = with_f32(t, |v| {
                    silu_mul(Place::column(v, widths, 0), Place::column(v, widths, 1))
                })??;
                (b, n, act)
            }
            Outputs::Each(ts) => {
                let [gate, up] = ts.as_slice() else {
                    return Err(swiglu_arity(ts.len()));
                };
                let (b, n, width) = gate.dims3()?;
                let act = with_f32(gate, |g| {
                    with_f32(up, |u| {
                        silu_mul(Place::whole(g, width), Place::whole(u, up.dim(2)?))
                    })
                })???;
                (b, n, act)
            }
        };
        let width = act.len() / (b * n).max(1);
        Tensor::from_vec(act, (b, n, width), device)
    }
}

/// The error of a SwiGLU of `count` outputs.
fn swiglu_arity(count: usize) -> candle_core::Error {
    candle_core::Error::Msg(format!(
        "SwiGLU of {count} outputs, not a gate and an up projection"
    ))
}

/// `silu(gate) · up`, row by row.
fn silu_mul(gate: Place<'_>, up: Place<'_>) -> candle_core::Result<Vec<f32>> {
    if gate.width != up.width {
        return Err(candle_core::Error::Msg(format!(
            "gate {} and up {} projections of different widths",
            gate.width, up.width
        )));
    }
    let tokens = gate.values.len() / gate.stride.max(1);
    Ok(par_rows(tokens, gate.width, |t, slots| {
        fastmath::silu_mul(gate.row(t), up.row(t), slots)
    }))
}

/// One output's `(b, n, count · head_dim)` columns as `(b, count, n,
/// head_dim)` values, each head's pairs `(x₂ⱼ, x₂ⱼ₊₁)` at token `i`
/// rotated by the angle whose cosine and sine are `turn`'s `[i · head_dim
/// / 2 + j]` when given (in the same pass, not a second one).
fn to_heads(
    place: Place<'_>,
    (b, n): (usize, usize),
    count: usize,
    head_dim: usize,
    turn: Option<(&[f32], &[f32])>,
) -> candle_core::Result<Vec<f32>> {
    if place.width != count * head_dim {
        return Err(candle_core::Error::Msg(format!(
            "an output {} wide is not {count} heads of {head_dim}",
            place.width
        )));
    }
    let half = head_dim / 2;
    if let Some((cos, sin)) = turn
        && (!head_dim.is_multiple_of(2) || cos.len() != n * half || sin.len() != n * half)
    {
        return Err(candle_core::Error::Msg(format!(
            "RoPE tables of {} and {} for {n} positions of {head_dim}",
            cos.len(),
            sin.len()
        )));
    }
    // One row a (sequence, head, token): head_dim values.
    Ok(par_rows(b * count * n, head_dim, |r, slots| {
        let (seq, head, i) = (r / (count * n), r / n % count, r % n);
        let src = &place.row(seq * n + i)[head * head_dim..(head + 1) * head_dim];
        match turn {
            None => copy(slots, src),
            Some((cos, sin)) => fastmath::rope_pairs(
                src,
                &cos[i * half..(i + 1) * half],
                &sin[i * half..(i + 1) * half],
                slots,
            ),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded `[out, in]` matrix of small values.
    fn matrix(out: usize, inp: usize, seed: usize) -> Vec<f32> {
        (0..out * inp)
            .map(|i| (((i * 7919 + seed * 104_729) % 997) as f32 - 498.0) / 2000.0)
            .collect()
    }

    fn qtensor(values: &[f32], out: usize, inp: usize, dtype: GgmlDType) -> QTensor {
        let t = Tensor::from_vec(values.to_vec(), (out, inp), &Device::Cpu).expect("tensor");
        QTensor::quantize(&t, dtype).expect("quantize")
    }

    /// `x · wᵀ` in f64, `(tokens, out)`.
    fn product(x: &[f32], w: &[f32], tokens: usize, out: usize, inp: usize) -> Vec<f64> {
        let mut y = vec![0f64; tokens * out];
        for t in 0..tokens {
            for o in 0..out {
                y[t * out + o] = (0..inp)
                    .map(|i| f64::from(x[t * inp + i]) * f64::from(w[o * inp + i]))
                    .sum();
            }
        }
        y
    }

    /// Stacked f32 projections (the packed path) and q8_0 ones (one matrix
    /// each) both give the heads and the SwiGLU an f64 computation gives.
    #[test]
    fn heads_and_swiglu_match_f64_stacked_and_each() {
        let (b, n, inp, hd) = (2, 5, 64, 8);
        let counts = [4, 2, 2];
        let widths: Vec<usize> = counts.iter().map(|c| c * hd).collect();
        let ws: Vec<Vec<f32>> = widths
            .iter()
            .enumerate()
            .map(|(i, &w)| matrix(w, inp, i))
            .collect();
        let x = matrix(b * n, inp, 9);
        let xt = Tensor::from_vec(x.clone(), (b, n, inp), &Device::Cpu).expect("x");
        for (dtype, tol) in [(GgmlDType::F32, 1e-5), (GgmlDType::Q8_0, 2e-2)] {
            let parts = |ws: &[Vec<f32>]| {
                ws.iter()
                    .map(|w| qtensor(w, w.len() / inp, inp, dtype))
                    .collect::<Vec<_>>()
            };
            let qkv = Projections::new(parts(&ws), &Device::Cpu).expect("projections");
            assert_eq!(
                matches!(qkv, Projections::Stacked(..)),
                dtype == GgmlDType::F32,
                "{dtype:?}: f32 matrices stack, q8_0 ones do not"
            );
            // Angles of position i and pair j: i · (j + 1) / 3.
            let angle = |i: usize, j: usize| (i * (j + 1)) as f64 / 3.0;
            let table = |f: fn(f64) -> f64| {
                let v: Vec<f32> = (0..n * hd / 2)
                    .map(|ij| f(angle(ij / (hd / 2), ij % (hd / 2))) as f32)
                    .collect();
                Tensor::from_vec(v, (n, hd / 2), &Device::Cpu).expect("table")
            };
            let (cos, sin) = (table(f64::cos), table(f64::sin));
            let rope = Rope {
                outputs: 2,
                cos: &cos,
                sin: &sin,
            };
            let heads = qkv
                .forward(&xt)
                .expect("forward")
                .heads((b, n), &counts, hd, rope, &Device::Cpu)
                .expect("heads");
            for (o, ((w, &count), got)) in ws.iter().zip(&counts).zip(&heads).enumerate() {
                let want = product(&x, w, b * n, count * hd, inp);
                let got: Vec<f32> = got.flatten_all().and_then(|t| t.to_vec1()).expect("values");
                for seq in 0..b {
                    for h in 0..count {
                        for i in 0..n {
                            for d in 0..hd {
                                let g = got[((seq * count + h) * n + i) * hd + d];
                                let at = (seq * n + i) * count * hd + h * hd;
                                let (x0, x1) = (want[at + (d & !1)], want[at + (d | 1)]);
                                let (c, s) = (angle(i, d / 2).cos(), angle(i, d / 2).sin());
                                let e = match (o < 2, d % 2) {
                                    (false, _) => want[at + d],
                                    (true, 0) => x0 * c - x1 * s,
                                    (true, _) => x0 * s + x1 * c,
                                };
                                assert!(
                                    (f64::from(g) - e).abs() <= tol,
                                    "{dtype:?} head {h} of sequence {seq}, token {i}: {g} vs {e}"
                                );
                            }
                        }
                    }
                }
            }
            let gate_up = Projections::new(parts(&ws[1..]), &Device::Cpu).expect("gate, up");
            let act = gate_up
                .forward(&xt)
                .expect("forward")
                .swiglu(&Device::Cpu)
                .expect("swiglu");
            assert_eq!(act.dims(), &[b, n, widths[1]]);
            let act: Vec<f32> = act.flatten_all().and_then(|t| t.to_vec1()).expect("values");
            let gate = product(&x, &ws[1], b * n, widths[1], inp);
            let up = product(&x, &ws[2], b * n, widths[2], inp);
            for (i, got) in act.iter().enumerate() {
                let want = gate[i] / (1.0 + (-gate[i]).exp()) * up[i];
                assert!(
                    (f64::from(*got) - want).abs() <= tol,
                    "{dtype:?} SwiGLU element {i}: {got} vs {want}"
                );
            }
        }
    }

    /// Projections of different input widths are refused, not stacked.
    #[test]
    fn stacking_refuses_different_input_widths() {
        let parts = vec![
            qtensor(&matrix(8, 32, 1), 8, 32, GgmlDType::F32),
            qtensor(&matrix(8, 64, 2), 8, 64, GgmlDType::F32),
        ];
        let err = Projections::new(parts, &Device::Cpu)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("different widths"), "{err}");
    }
}
