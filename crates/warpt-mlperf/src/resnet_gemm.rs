//! ResNet-50 inference with activations channels-last (NHWC) and every
//! convolution GEMMs on warpt's engine, weights packed once at load
//! (warpt-models' [`PackedMatrix`]: 1×1 convolutions directly, 3×3 stride-1
//! ones by Winograd's F(4×4, 3×3) ([`crate::winograd`], 36 GEMMs), strided
//! 3×3 and the 7×7 stem through an im2col in the (ky, kx, channel) order
//! the weights are laid out in), batch norms folded into the weights and
//! biases. Each GEMM adds its bias (and a block's last one the shortcut
//! and its ReLU) to each tile of its result as the tile is finished (the
//! engine's epilogue: no pass over the output of its own), and layer
//! buffers are reused from batch to batch.
//! candle's NCHW convolution ran at 6 images/s on a Zen 4 host where
//! the first version of this ran at 18 (docs/mlperf.md has today's
//! figures, f32 and bf16, against PyTorch).

use std::sync::Mutex;

use rayon::prelude::*;

use warpt_gemm::simd::vectorized;
use warpt_models::packed::{PackedMatrix, Precision, Then};

use crate::lines::{Lines, Pool};

use crate::resnet::{self, CLASSES, ConvSpec, Weights};
use crate::winograd::{self, PIECE_BYTES, Winograd};

/// Activations: `n` images of `h × w × c`, channels last.
#[derive(Clone)]
pub struct Nhwc {
    n: usize,
    h: usize,
    w: usize,
    c: usize,
    v: Lines,
}

/// Outputs from this size on are written with streaming stores (by the
/// GEMMs; the Winograd output transform stores as usual): larger than the
/// cores' L2s together (2 MiB on the Zen 4 host measured), they reach
/// memory before the next layer reads them, and an ordinary store first
/// reads each line it writes. Zen 4, two threads, a batch of 8: the 1×1
/// convolutions into 256 channels at 56² 21.1 → 17.6 ms a batch (three
/// with the shortcut), the stem 12.9 → 12.1, all convolutions about 2%
/// faster; from 4 MiB (the 6.4 MB layers too) or from 8 MiB, level.
const STREAM_MIN_BYTES: usize = 4 << 20;

/// Output pixels an im2col's piece has at least, however deep its
/// receptive fields: enough columns for the engine's tiles to be whole.
const PIECE_ROWS_MIN: usize = 48;

/// Output pixels in each piece of an im2col of `rows` pixels with
/// `width` values each, the pieces' count a multiple of `threads` so no
/// thread is left with one piece more than the others.
fn piece_rows(rows: usize, width: usize, threads: usize) -> usize {
    let most = (PIECE_BYTES / (width * size_of::<f32>()).max(1)).max(PIECE_ROWS_MIN);
    let pieces = rows.div_ceil(most).next_multiple_of(threads.max(1));
    rows.div_ceil(pieces).max(1)
}

/// How a convolution multiplies.
enum Method {
    /// One GEMM (after an im2col unless 1×1, stride 1) on its weights:
    /// `c_out × (k·k·c_in)`, each row in (ky, kx, channel) order, packed.
    Gemm(PackedMatrix),
    /// 3×3, stride 1: Winograd's F(4×4, 3×3) or F(2×2, 3×3).
    Winograd(Winograd),
}

/// How the 3×3, stride-1 convolutions run (`conv3x3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conv3x3 {
    /// Winograd's F(4×4, 3×3): 4 times fewer multiplications.
    Winograd,
    /// Winograd's F(2×2, 3×3): 2.25 times fewer, transforms that only add
    /// (the rounding of a direct convolution).
    Winograd2x2,
    /// An im2col and one GEMM, as every other convolution.
    Im2col,
}

impl Conv3x3 {
    /// The names the parameter takes.
    pub const NAMES: &[&str] = &["winograd", "winograd2x2", "im2col"];

    /// The method a parameter names.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "winograd" => Ok(Conv3x3::Winograd),
            "winograd2x2" => Ok(Conv3x3::Winograd2x2),
            "im2col" => Ok(Conv3x3::Im2col),
            other => Err(format!("'{other}' is not winograd, winograd2x2 or im2col")),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Conv3x3::Winograd => "winograd",
            Conv3x3::Winograd2x2 => "winograd2x2",
            Conv3x3::Im2col => "im2col",
        }
    }

    /// The Winograd filtering it runs, if it is one.
    fn tile(self) -> Option<winograd::Tile> {
        match self {
            Conv3x3::Winograd => Some(winograd::Tile::F4),
            Conv3x3::Winograd2x2 => Some(winograd::Tile::F2),
            Conv3x3::Im2col => None,
        }
    }
}

/// A convolution with its batch norm folded in.
struct Conv {
    method: Method,
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
    fn new(
        w: &Weights,
        c: &ConvSpec,
        precision: Precision,
        conv3x3: Conv3x3,
    ) -> Result<Self, String> {
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
        let tap = |o: usize, i: usize, ky: usize, kx: usize| {
            kernel[((o * ci + i) * k + ky) * k + kx] as f64 * scale[o]
        };
        let winograd = conv3x3
            .tile()
            .filter(|_| k == 3 && c.stride == 1 && c.pad == 1);
        let method = if let Some(tile) = winograd {
            Method::Winograd(Winograd::with_tile(
                tile,
                c.c_out,
                ci,
                |o, i| std::array::from_fn(|t| tap(o, i, t / 3, t % 3)),
                precision,
            ))
        } else {
            // Row o: the kernel in (ky, kx, channel) order, scaled.
            let width = k * k * ci;
            let mut weights = vec![0f32; c.c_out * width];
            weights
                .chunks_exact_mut(width)
                .enumerate()
                .for_each(|(o, row)| {
                    for ky in 0..k {
                        for kx in 0..k {
                            for i in 0..ci {
                                row[(ky * k + kx) * ci + i] = tap(o, i, ky, kx) as f32;
                            }
                        }
                    }
                });
            Method::Gemm(
                PackedMatrix::from_rows_in(&weights, c.c_out, width, precision).with_bias(&bias),
            )
        };
        Ok(Conv {
            method,
            bias,
            k,
            stride: c.stride,
            pad: c.pad,
            c_in: ci,
        })
    }

    /// The convolution of `x` (of its positive part when `relu_in`),
    /// plus `shortcut` when given (a block's last convolution), its ReLU
    /// applied when `relu_out`. The ReLUs ride on passes the convolution
    /// makes anyway where it can (an im2col's or Winograd's transforms).
    fn forward(
        &self,
        x: &Nhwc,
        relu_in: bool,
        shortcut: Option<&Nhwc>,
        relu_out: bool,
        pool: &mut Pool,
    ) -> Nhwc {
        debug_assert_eq!(x.c, self.c_in);
        let (k, s, p) = (self.k, self.stride, self.pad);
        let oh = (x.h + 2 * p - k) / s + 1;
        let ow = (x.w + 2 * p - k) / s + 1;
        let rows = x.n * oh * ow;
        let n_out = self.bias.len();
        let mut v = pool.take(rows * n_out);
        // A GEMM's output this large is written past the caches.
        let stream = rows * n_out * size_of::<f32>() >= STREAM_MIN_BYTES;
        // The output's ReLU, when no pass of the convolution's applied it.
        let relu_left;
        match &self.method {
            Method::Winograd(wg) => {
                let shape = winograd::Shape {
                    n: x.n,
                    h: x.h,
                    w: x.w,
                };
                // A shortcut (none in ResNet-50: no 3×3 ends a block) is
                // added after the output transform, the ReLU after it.
                let fused = winograd::Fused {
                    relu_in,
                    bias: &self.bias,
                    relu_out: relu_out && shortcut.is_none(),
                };
                wg.forward(&x.v, shape, fused, &mut v, &mut pool.winograd);
                relu_left = relu_out && shortcut.is_some();
                if let Some(add) = shortcut {
                    v.par_chunks_mut(1 << 14)
                        .zip(add.v.par_chunks(1 << 14))
                        .for_each(|(o, a)| {
                            vectorized(
                                #[inline(always)]
                                || o.iter_mut().zip(a).for_each(|(o, a)| *o += a),
                            )
                        });
                }
            }
            // The bias, the shortcut and the ReLU are the product's
            // epilogue: each tile finished while it is in cache.
            Method::Gemm(weights) if k == 1 && s == 1 => {
                let then = Then {
                    add: shortcut.map(|s| &s.v[..]),
                    relu: relu_out,
                    stream,
                };
                relu_left = false;
                if relu_in {
                    let mut positive = pool.take(x.v.len());
                    positive
                        .par_chunks_mut(1 << 14)
                        .zip(x.v.par_chunks(1 << 14))
                        .for_each(|(o, i)| {
                            vectorized(
                                #[inline(always)]
                                || o.iter_mut().zip(i).for_each(|(o, i)| *o = i.max(0.0)),
                            )
                        });
                    weights.matmul_t_then(&positive, rows, &mut v, then);
                    pool.give(positive);
                } else {
                    weights.matmul_t_then(&x.v, rows, &mut v, then);
                }
            }
            // An im2col in pieces: each task gathers its pixels'
            // receptive fields into a buffer of its thread's that stays in
            // the core's cache and multiplies them there (the whole batch's
            // im2col first was a buffer of up to 59 MB written to memory
            // and read back: the stem took 17 ms a batch of 8 that way, 12
            // in pieces, on a Zen 4 host).
            Method::Gemm(weights) => {
                relu_left = false;
                let width = k * k * x.c;
                let pieces = pool.pieces(rayon::current_num_threads());
                let piece = piece_rows(rows, width, pieces.len());
                v.par_chunks_mut(piece * n_out)
                    .enumerate()
                    .for_each(|(i, out)| {
                        let (first, len) = (i * piece, out.len() / n_out);
                        let add = shortcut.map(|s| &s.v[first * n_out..][..out.len()]);
                        let mine = rayon::current_thread_index().unwrap_or(0) % pieces.len();
                        let mut cols = pieces[mine].lock().unwrap_or_else(|e| e.into_inner());
                        if cols.len() < len * width {
                            cols.resize(len * width, 0.0);
                        }
                        let cols = &mut cols[..len * width];
                        if relu_in {
                            self.im2col::<true>(x, oh, ow, first, cols);
                        } else {
                            self.im2col::<false>(x, oh, ow, first, cols);
                        }
                        let then = Then {
                            add,
                            relu: relu_out,
                            stream,
                        };
                        weights.matmul_t_then_serial(cols, len, out, then);
                    });
            }
        }
        if relu_left {
            relu(&mut v);
        }
        Nhwc {
            n: x.n,
            h: oh,
            w: ow,
            c: n_out,
            v,
        }
    }

    /// The receptive fields of the output pixels from `first` on, one a
    /// row of `cols` (`k·k·c_in` values in (ky, kx, channel) order, zeros
    /// for the padding; with `RELU`, of the positive part of `x`).
    fn im2col<const RELU: bool>(
        &self,
        x: &Nhwc,
        oh: usize,
        ow: usize,
        first: usize,
        cols: &mut [f32],
    ) {
        let (k, s, p) = (self.k, self.stride, self.pad);
        cols.chunks_exact_mut(k * k * x.c)
            .zip(first..)
            .for_each(|(row, r)| {
                vectorized(
                    #[inline(always)]
                    || {
                        let (img, oy, ox) = (r / (oh * ow), (r / ow) % oh, r % ow);
                        // The taps of one kernel row are consecutive pixels of
                        // one input row: one copy for those inside the image,
                        // zeros for the padding either side.
                        let kx0 = p.saturating_sub(ox * s).min(k);
                        let kx1 = (x.w + p).saturating_sub(ox * s).clamp(kx0, k);
                        for (ky, span) in row.chunks_exact_mut(k * x.c).enumerate() {
                            let iy = (oy * s + ky) as isize - p as isize;
                            if iy < 0 || iy >= x.h as isize || kx0 == kx1 {
                                span.fill(0.0);
                                continue;
                            }
                            let ix0 = ox * s + kx0 - p;
                            let src = ((img * x.h + iy as usize) * x.w + ix0) * x.c;
                            let (before, rest) = span.split_at_mut(kx0 * x.c);
                            let (inside, after) = rest.split_at_mut((kx1 - kx0) * x.c);
                            before.fill(0.0);
                            let from = &x.v[src..src + inside.len()];
                            if RELU {
                                inside
                                    .iter_mut()
                                    .zip(from)
                                    .for_each(|(o, i)| *o = i.max(0.0));
                            } else {
                                inside.copy_from_slice(from);
                            }
                            after.fill(0.0);
                        }
                    },
                )
            });
    }
}

/// `x`'s negative values zeroed.
fn relu(x: &mut [f32]) {
    x.par_chunks_mut(1 << 14).for_each(|c| {
        vectorized(
            #[inline(always)]
            || c.iter_mut().for_each(|v| *v = v.max(0.0)),
        )
    });
}

/// 3×3, stride 2, padding 1 (of ReLU outputs, so padding never wins).
fn max_pool(x: &Nhwc, pool: &mut Pool) -> Nhwc {
    let (oh, ow) = ((x.h - 1) / 2 + 1, (x.w - 1) / 2 + 1);
    let mut v = pool.take(x.n * oh * ow * x.c);
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
    blocks: Vec<resnet::Block<Conv>>,
    /// The classifier, its bias included.
    fc: PackedMatrix,
    precision: Precision,
    conv3x3: Conv3x3,
    /// Activation and im2col buffers, reused from batch to batch.
    pool: Mutex<Pool>,
}

impl GemmNet {
    /// The network of weights `w`, batch norms folded, its products in
    /// `precision`, its 3×3 stride-1 convolutions by `conv3x3`.
    pub fn new(w: &Weights, precision: Precision, conv3x3: Conv3x3) -> Result<Self, String> {
        // F(4×4, 3×3) in f32 only: its transforms scale values by up to a
        // hundred and back, which bf16's and f16's rounding of the
        // transformed values does not survive (F(2×2)'s only add).
        let conv3x3 = match (conv3x3, precision) {
            (Conv3x3::Winograd, Precision::Bf16 | Precision::F16) => Conv3x3::Winograd2x2,
            (method, _) => method,
        };
        let conv = |c: &ConvSpec| Conv::new(w, c, precision, conv3x3);
        let blocks = resnet::build_blocks(conv)?;
        Ok(GemmNet {
            stem: conv(&resnet::stem())?,
            blocks,
            fc: PackedMatrix::from_rows_in(get(w, "fc.weight")?, CLASSES, 2048, precision)
                .with_bias(get(w, "fc.bias")?),
            precision,
            conv3x3,
            pool: Mutex::default(),
        })
    }

    /// The precision its products run in.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// How its 3×3 stride-1 convolutions run.
    pub fn conv3x3(&self) -> Conv3x3 {
        self.conv3x3
    }

    /// Logits (`n × 1000`, row-major) of `n` normalised images given
    /// channels-first (`n × 3 × size × size`, as the library holds them).
    pub fn forward(&self, nchw: &[f32], n: usize, size: usize) -> Vec<f32> {
        // A batch that found the pool taken (only when two threads share
        // the network) works with buffers of its own.
        let mut guard = self.pool.try_lock().ok();
        let mut own = Pool::default();
        let pool = guard.as_deref_mut().unwrap_or(&mut own);
        let plane = size * size;
        let mut v = pool.take(nchw.len());
        v.par_chunks_mut(3).enumerate().for_each(|(r, px)| {
            let (img, pos) = (r / plane, r % plane);
            for (c, p) in px.iter_mut().enumerate() {
                *p = nchw[(img * 3 + c) * plane + pos];
            }
        });
        let input = Nhwc {
            n,
            h: size,
            w: size,
            c: 3,
            v,
        };
        let stem = self.stem.forward(&input, false, None, true, pool);
        let mut x = max_pool(&stem, pool);
        pool.give(input.v);
        pool.give(stem.v);
        for ([a, b, c], down) in &self.blocks {
            // a's ReLU is left to b, the 3×3, whose im2col or Winograd
            // input transform reads every value anyway; b's is fused in
            // its Winograd output transform when it has one.
            let y1 = a.forward(&x, false, None, false, pool);
            let y2 = b.forward(&y1, true, None, true, pool);
            pool.give(y1.v);
            let shortcut = down
                .as_ref()
                .map(|d| d.forward(&x, false, None, false, pool));
            let y3 = c.forward(
                &y2,
                false,
                Some(shortcut.as_ref().unwrap_or(&x)),
                true,
                pool,
            );
            pool.give(y2.v);
            if let Some(s) = shortcut {
                pool.give(s.v);
            }
            pool.give(std::mem::replace(&mut x, y3).v);
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
        pool.give(x.v);
        self.fc.matmul_t(&pooled, n)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn im2col_pieces_fit_the_cache_and_share_out_evenly() {
        // ResNet-50's im2col convolutions at batch 8 and one image, and
        // a depth so large that one pixel's fields exceed the budget.
        for (rows, width) in [
            (100_352, 147),
            (6272, 1152),
            (392, 4608),
            (256, 147),
            (64, 1 << 20),
        ] {
            for threads in [1, 2, 3, 16] {
                let piece = piece_rows(rows, width, threads);
                let pieces = rows.div_ceil(piece);
                assert!(
                    piece * width * 4 <= PIECE_BYTES || piece <= PIECE_ROWS_MIN,
                    "{rows} x {width} on {threads}: {piece} rows a piece"
                );
                if rows >= PIECE_ROWS_MIN * threads {
                    assert_eq!(
                        pieces % threads,
                        0,
                        "{rows} x {width} on {threads}: {pieces} pieces"
                    );
                }
            }
        }
    }
}
