//! A decoder's residual stream: the hidden states each layer reads
//! (normalized) and adds its attention's and its MLP's outputs to.
//!
//! On the CPU the stream is a vector of its own, and each layer's output
//! projection adds its product straight into it (the engine's `C += W·x`,
//! [`PackedMatrix::matmul_t_add`]): no output allocated and zeroed, no
//! second pass adding it, no copy. RMSNorm reads it in place
//! ([`fastmath::rms_norm`]). On a GPU the stream is a tensor and candle's
//! operations run it.
//!
//! [`PackedMatrix::matmul_t_add`]: crate::packed::PackedMatrix::matmul_t_add

use candle_core::{Device, IndexOp, Tensor};

use crate::fastmath;
use crate::qlinear::{QLinear, with_f32};
use crate::uninit::par_rows;

/// The hidden states `(batch, n, hidden)`.
pub(crate) enum Residual {
    /// In host memory, row-major.
    Host {
        values: Vec<f32>,
        batch: usize,
        n: usize,
        hidden: usize,
    },
    /// A device tensor.
    Device(Tensor),
}

impl Residual {
    /// The stream starting at `x` `(batch, n, hidden)`.
    pub(crate) fn new(x: Tensor) -> candle_core::Result<Self> {
        if !x.device().is_cpu() {
            return Ok(Residual::Device(x));
        }
        let (batch, n, hidden) = x.dims3()?;
        Ok(Residual::Host {
            values: with_f32(&x, <[f32]>::to_vec)?,
            batch,
            n,
            hidden,
        })
    }

    /// RMSNorm of every position by `weight` `(hidden)`, `eps` added to
    /// the mean square: a layer's input, `(batch, n, hidden)`.
    pub(crate) fn rms_norm(&self, weight: &Tensor, eps: f32) -> candle_core::Result<Tensor> {
        match self {
            Residual::Device(x) => candle_nn::ops::rms_norm(x, weight, eps),
            Residual::Host {
                values,
                batch,
                n,
                hidden,
            } => {
                let h = *hidden;
                let y = with_f32(weight, |w| {
                    if w.len() != h {
                        return Err(candle_core::Error::Msg(format!(
                            "an RMSNorm weight of {} for a hidden size of {h}",
                            w.len()
                        )));
                    }
                    Ok(par_rows(batch * n, h, |t, slots| {
                        fastmath::rms_norm(&values[t * h..(t + 1) * h], w, eps, slots)
                    }))
                })??;
                Tensor::from_vec(y, (*batch, *n, h), &Device::Cpu)
            }
        }
    }

    /// Adds `w`'s product of `input` `(batch, n, in)` to the stream.
    pub(crate) fn add_product(&mut self, w: &QLinear, input: &Tensor) -> candle_core::Result<()> {
        match self {
            Residual::Device(x) => {
                *x = (&*x + w.forward(input)?)?;
            }
            Residual::Host {
                values, batch, n, ..
            } => match w {
                QLinear::Packed(p) => {
                    with_f32(input, |x| p.matmul_t_add(x, *batch * *n, values))?;
                }
                _ => {
                    let y = w.forward(input)?;
                    with_f32(&y, |y| {
                        if y.len() != values.len() {
                            return Err(candle_core::Error::Msg(format!(
                                "a product of {} values added to a stream of {}",
                                y.len(),
                                values.len()
                            )));
                        }
                        fastmath::axpy(1.0, y, values);
                        Ok(())
                    })??;
                }
            },
        }
        Ok(())
    }

    /// Each sequence's last position, `(batch, hidden)`.
    pub(crate) fn last(&self) -> candle_core::Result<Tensor> {
        match self {
            Residual::Device(x) => {
                let n = x.dim(1)?;
                x.i((.., n - 1, ..))?.contiguous()
            }
            Residual::Host {
                values,
                batch,
                n,
                hidden,
            } => {
                let rows: Vec<f32> = (0..*batch)
                    .flat_map(|s| {
                        let at = (s * n + n - 1) * hidden;
                        values[at..at + hidden].iter().copied()
                    })
                    .collect();
                Tensor::from_vec(rows, (*batch, *hidden), &Device::Cpu)
            }
        }
    }
}
