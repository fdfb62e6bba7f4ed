//! ResNet-50 inference with activations channels-last (NHWC) and every
//! convolution one f32 GEMM on faer (1×1 convolutions directly, 3×3 and
//! the 7×7 stem through an im2col in the (ky, kx, channel) order the
//! weights are laid out in), batch norms folded into the weights and
//! biases. candle's NCHW convolution ran at 6 images/s here; pepbench's
//! packed kernel, written for an LLM's shapes, at 14; faer's GEMM, tuned
//! for large products like these, at about 16 (docs/mlperf.md).

use rayon::prelude::*;

use crate::resnet::{self, CLASSES, ConvSpec, Weights};

/// Activations: `n` images of `h × w × c`, channels last.
#[derive(Clone)]
pub struct Nhwc {
    n: usize,
    h: usize,
    w: usize,
    c: usize,
    v: Vec<f32>,
}

/// `x` (`rows × k`, row-major) times `w` (`n × k`, row-major) transposed,
/// plus `bias` on every row: `rows × n`, row-major, on faer's GEMM.
fn gemm(x: &[f32], rows: usize, k: usize, w: &[f32], n: usize, bias: &[f32]) -> Vec<f32> {
    use faer::linalg::matmul::matmul;
    use faer::{Accum, MatMut, MatRef, Par};
    let mut out = vec![0f32; rows * n];
    let lhs = MatRef::from_row_major_slice(x, rows, k);
    let rhs = MatRef::from_row_major_slice(w, n, k).transpose();
    let dst = MatMut::from_row_major_slice_mut(&mut out, rows, n);
    matmul(dst, Accum::Replace, lhs, rhs, 1.0f32, Par::rayon(0));
    out.par_chunks_mut(n)
        .for_each(|row| row.iter_mut().zip(bias).for_each(|(o, b)| *o += b));
    out
}

/// A convolution with its batch norm folded in, as the GEMM's matrix.
struct Conv {
    /// `c_out × (k·k·c_in)`, each row in (ky, kx, channel) order.
    weights: Vec<f32>,
    bias: Vec<f32>,
    k: usize,
    stride: usize,
    pad: usize,
    c_in: usize,
}

fn get<'w>(w: &'w Weights, name: &str) -> Result<&'w [f32], String> {
    w.get(name)
        .map(|t| t.1.as_slice())
        .ok_or_else(|| format!("missing tensor {name}"))
}

impl Conv {
    fn new(w: &Weights, c: &ConvSpec) -> Result<Self, String> {
        let kernel = get(w, &format!("{}.weight", c.conv))?;
        let p = |s: &str| get(w, &format!("{}.{s}", c.bn));
        let (gamma, beta, mean, var) = (
            p("weight")?,
            p("bias")?,
            p("running_mean")?,
            p("running_var")?,
        );
        let scale: Vec<f64> = (0..c.c_out)
            .map(|o| gamma[o] as f64 / (var[o] as f64 + 1e-5).sqrt())
            .collect();
        let bias: Vec<f32> = (0..c.c_out)
            .map(|o| (beta[o] as f64 - mean[o] as f64 * scale[o]) as f32)
            .collect();
        let (k, ci) = (c.k, c.c_in);
        // Row o: the kernel in (ky, kx, channel) order, scaled.
        let fill = |o: usize, row: &mut [f32]| {
            for ky in 0..k {
                for kx in 0..k {
                    for i in 0..ci {
                        let v = kernel[((o * ci + i) * k + ky) * k + kx] as f64 * scale[o];
                        row[(ky * k + kx) * ci + i] = v as f32;
                    }
                }
            }
        };
        let width = k * k * ci;
        let mut weights = vec![0f32; c.c_out * width];
        weights
            .chunks_exact_mut(width)
            .enumerate()
            .for_each(|(o, r)| fill(o, r));
        Ok(Conv {
            weights,
            bias,
            k,
            stride: c.stride,
            pad: c.pad,
            c_in: ci,
        })
    }

    fn forward(&self, x: &Nhwc) -> Nhwc {
        debug_assert_eq!(x.c, self.c_in);
        let (k, s, p) = (self.k, self.stride, self.pad);
        let oh = (x.h + 2 * p - k) / s + 1;
        let ow = (x.w + 2 * p - k) / s + 1;
        let rows = x.n * oh * ow;
        let n_out = self.bias.len();
        let v = if k == 1 && s == 1 {
            gemm(&x.v, rows, x.c, &self.weights, n_out, &self.bias)
        } else {
            let width = k * k * x.c;
            let mut cols = vec![0f32; rows * width];
            cols.par_chunks_mut(width).enumerate().for_each(|(r, row)| {
                let (img, oy, ox) = (r / (oh * ow), (r / ow) % oh, r % ow);
                for ky in 0..k {
                    let iy = (oy * s + ky) as isize - p as isize;
                    if iy < 0 || iy >= x.h as isize {
                        continue;
                    }
                    for kx in 0..k {
                        let ix = (ox * s + kx) as isize - p as isize;
                        if ix < 0 || ix >= x.w as isize {
                            continue;
                        }
                        let src = ((img * x.h + iy as usize) * x.w + ix as usize) * x.c;
                        row[(ky * k + kx) * x.c..][..x.c].copy_from_slice(&x.v[src..src + x.c]);
                    }
                }
            });
            gemm(&cols, rows, width, &self.weights, n_out, &self.bias)
        };
        Nhwc {
            n: x.n,
            h: oh,
            w: ow,
            c: n_out,
            v,
        }
    }
}

fn relu(mut x: Nhwc) -> Nhwc {
    x.v.par_chunks_mut(1 << 14)
        .for_each(|c| c.iter_mut().for_each(|v| *v = v.max(0.0)));
    x
}

/// 3×3, stride 2, padding 1 (of ReLU outputs, so padding never wins).
fn max_pool(x: &Nhwc) -> Nhwc {
    let (oh, ow) = ((x.h - 1) / 2 + 1, (x.w - 1) / 2 + 1);
    let mut v = vec![0f32; x.n * oh * ow * x.c];
    v.par_chunks_mut(x.c).enumerate().for_each(|(r, out)| {
        let (img, oy, ox) = (r / (oh * ow), (r / ow) % oh, r % ow);
        out.fill(f32::NEG_INFINITY);
        for ky in 0..3 {
            let iy = (oy * 2 + ky) as isize - 1;
            if iy < 0 || iy >= x.h as isize {
                continue;
            }
            for kx in 0..3 {
                let ix = (ox * 2 + kx) as isize - 1;
                if ix < 0 || ix >= x.w as isize {
                    continue;
                }
                let src = &x.v[((img * x.h + iy as usize) * x.w + ix as usize) * x.c..][..x.c];
                out.iter_mut().zip(src).for_each(|(o, s)| *o = o.max(*s));
            }
        }
    });
    Nhwc {
        n: x.n,
        h: oh,
        w: ow,
        c: x.c,
        v,
    }
}

/// ResNet-50 as a chain of GEMMs.
pub struct GemmNet {
    stem: Conv,
    blocks: Vec<([Conv; 3], Option<Conv>)>,
    fc: Vec<f32>,
    fc_bias: Vec<f32>,
}

impl GemmNet {
    /// The network of weights `w`, batch norms folded.
    pub fn new(w: &Weights) -> Result<Self, String> {
        let blocks = resnet::blocks()
            .iter()
            .map(|b| {
                let [a, c2, c3] = &b.convs;
                Ok((
                    [Conv::new(w, a)?, Conv::new(w, c2)?, Conv::new(w, c3)?],
                    b.down.as_ref().map(|d| Conv::new(w, d)).transpose()?,
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(GemmNet {
            stem: Conv::new(w, &resnet::stem())?,
            blocks,
            fc: get(w, "fc.weight")?.to_vec(),
            fc_bias: get(w, "fc.bias")?.to_vec(),
        })
    }

    /// Logits (`n × 1000`, row-major) of `n` normalised images given
    /// channels-first (`n × 3 × size × size`, as the library holds them).
    pub fn forward(&self, nchw: &[f32], n: usize, size: usize) -> Vec<f32> {
        let plane = size * size;
        let mut v = vec![0f32; nchw.len()];
        v.par_chunks_mut(3).enumerate().for_each(|(r, px)| {
            let (img, pos) = (r / plane, r % plane);
            for (c, p) in px.iter_mut().enumerate() {
                *p = nchw[(img * 3 + c) * plane + pos];
            }
        });
        let x = Nhwc {
            n,
            h: size,
            w: size,
            c: 3,
            v,
        };
        let mut x = max_pool(&relu(self.stem.forward(&x)));
        for ([a, b, c], down) in &self.blocks {
            let y = relu(a.forward(&x));
            let y = relu(b.forward(&y));
            let mut y = c.forward(&y);
            let shortcut = match down {
                Some(d) => d.forward(&x),
                None => x,
            };
            y.v.par_chunks_mut(1 << 14)
                .zip(shortcut.v.par_chunks(1 << 14))
                .for_each(|(a, s)| {
                    a.iter_mut()
                        .zip(s)
                        .for_each(|(a, s)| *a = (*a + s).max(0.0))
                });
            x = y;
        }
        // Global average pool, then the classifier.
        let hw = x.h * x.w;
        let pooled: Vec<f32> = (0..x.n)
            .flat_map(|img| {
                let x = &x;
                (0..x.c).map(move |c| {
                    (0..hw)
                        .map(|p| x.v[(img * hw + p) * x.c + c] as f64)
                        .sum::<f64>() as f32
                        / hw as f32
                })
            })
            .collect();
        gemm(&pooled, n, 2048, &self.fc, CLASSES, &self.fc_bias)
    }
}

/// The index of the largest of each row of `classes` logits.
pub fn argmax(logits: &[f32], classes: usize) -> Vec<u32> {
    logits
        .chunks_exact(classes)
        .map(|row| {
            row.iter()
                .enumerate()
                .fold(
                    (0, f32::NEG_INFINITY),
                    |b, (i, &v)| if v > b.1 { (i, v) } else { b },
                )
                .0 as u32
        })
        .collect()
}
