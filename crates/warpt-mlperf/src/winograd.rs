//! 3×3, stride-1, padding-1 convolutions by Winograd's minimal filtering
//! F(2×2, 3×3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural
//! Networks", 2016), channels last, on warpt's GEMM engine.
//!
//! The output is cut into 2×2 tiles, each computed from the 4×4 window of
//! input around it. Per channel, a window `d` becomes `V = Bᵀ d B` and a
//! kernel `g` becomes `U = G g Gᵀ` (4×4 each); the tile is `Aᵀ (Σ U ⊙ V) A`,
//! the sum over input channels. For each of the 16 positions of the 4×4
//! that sum over channels is one GEMM, tiles × input channels times input
//! × output channels: 16 products of one depth instead of the 36 (9 taps ×
//! 4 pixels) a direct convolution multiplies per tile, 2.25 times fewer.
//! The transforms add and subtract only (the kernel's, once at load,
//! halves too): F(2×2, 3×3) loses next to nothing to rounding.
//!
//! Layout: `V` holds 16 matrices one after another, each `tiles ×
//! c_in` with tiles in (image, tile row, tile column) order; `M`, the
//! products, 16 matrices of `tiles × c_out`. A tile row of an image is a
//! run of consecutive rows in each, so both transforms go a tile row per
//! task.

use rayon::prelude::*;

use warpt_gemm::Bf16;
use warpt_gemm::simd::vectorized;
use warpt_models::packed::{PackedMatrix, Precision};

/// Tiles per task of a convolution's products at most: the 16 products of
/// a small layer are enough tasks already; a large layer's are cut so the
/// threads share them evenly.
const PRODUCT_ROWS: usize = 512;

/// A convolution's kernels, transformed and packed: one matrix per
/// position of the 4×4 transform.
pub struct Winograd {
    /// `u[p]`: `c_out × c_in`, row `o` the transformed kernels of output
    /// channel `o` at position `p` (row-major 4×4 order).
    u: Vec<PackedMatrix>,
    c_in: usize,
    c_out: usize,
}

/// The shape of one convolution call.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Images.
    pub n: usize,
    /// Height, in and out (stride 1, padding 1).
    pub h: usize,
    /// Width, in and out.
    pub w: usize,
}

impl Shape {
    /// Tile rows and columns per image.
    fn tiles(self) -> (usize, usize) {
        (self.h.div_ceil(2), self.w.div_ceil(2))
    }

    /// Tiles in all images.
    pub fn tile_count(self) -> usize {
        let (th, tw) = self.tiles();
        self.n * th * tw
    }
}

impl Winograd {
    /// The convolution whose kernel for output `o`, input `i` is
    /// `kernel(o, i)` (3×3, row-major), its products in `precision`.
    pub fn new(
        c_out: usize,
        c_in: usize,
        kernel: impl Fn(usize, usize) -> [f64; 9],
        precision: Precision,
    ) -> Self {
        // U = G g Gᵀ, G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1], in f64.
        let g_rows = |g: [f64; 3]| {
            [
                g[0],
                (g[0] + g[1] + g[2]) / 2.0,
                (g[0] - g[1] + g[2]) / 2.0,
                g[2],
            ]
        };
        let mut u = vec![vec![0f32; c_out * c_in]; 16];
        for o in 0..c_out {
            for i in 0..c_in {
                let g = kernel(o, i);
                // G g: 4 rows of 3 (column by column), then (G g) Gᵀ.
                let cols: [[f64; 4]; 3] =
                    std::array::from_fn(|c| g_rows([g[c], g[3 + c], g[6 + c]]));
                for r in 0..4 {
                    let row = g_rows([cols[0][r], cols[1][r], cols[2][r]]);
                    for (c, v) in row.into_iter().enumerate() {
                        u[r * 4 + c][o * c_in + i] = v as f32;
                    }
                }
            }
        }
        Winograd {
            u: u.iter()
                .map(|m| PackedMatrix::from_rows_in(m, c_out, c_in, precision))
                .collect(),
            c_in,
            c_out,
        }
    }

    /// `out` (`n × h × w × c_out`, channels last, overwritten) set to the
    /// convolution of `x` (`n × h × w × c_in`) with what `fused` adds
    /// around it, in `scratch`'s buffers (grown to the shape's needs and
    /// kept for the next call).
    ///
    /// # Panics
    /// If `x` or `out` is not of the length `shape` gives it, or the bias
    /// not one value per output channel.
    pub fn forward(
        &self,
        x: &[f32],
        shape: Shape,
        fused: Fused<'_>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let (ci, co) = (self.c_in, self.c_out);
        assert_eq!(x.len(), shape.n * shape.h * shape.w * ci, "input shape");
        assert_eq!(out.len(), shape.n * shape.h * shape.w * co, "output shape");
        assert_eq!(fused.bias.len(), co, "one bias per output channel");
        let tiles = shape.tile_count();
        if tiles == 0 || ci == 0 || co == 0 {
            // No products: the bias alone (no images: nothing at all).
            for px in out.chunks_exact_mut(co.max(1)) {
                px.iter_mut()
                    .zip(fused.bias)
                    .for_each(|(o, b)| *o = if fused.relu_out { b.max(0.0) } else { *b });
            }
            return;
        }
        let m = sized(&mut scratch.m, 16 * tiles * co);
        let dims = (tiles, ci, co);
        // Where the products multiply bf16, the input transform writes
        // bf16: no f32 copy of the transformed input is written and read.
        if self.u.iter().all(PackedMatrix::multiplies_bf16) {
            let v = sized(&mut scratch.v_bf16, 16 * tiles * ci);
            input_transform(x, shape, ci, fused.relu_in, v);
            products(&self.u, v, m, dims, PackedMatrix::matmul_t_into_serial_bf16);
        } else {
            let v = sized(&mut scratch.v, 16 * tiles * ci);
            input_transform(x, shape, ci, fused.relu_in, v);
            products(&self.u, v, m, dims, PackedMatrix::matmul_t_into_serial);
        }
        if fused.relu_out {
            output_transform::<true>(m, shape, fused.bias, out);
        } else {
            output_transform::<false>(m, shape, fused.bias, out);
        }
    }
}

/// The buffers a convolution transforms into, kept from call to call (a
/// fresh buffer is a fresh mapping: its page faults and zeroing cost
/// more than a small layer's products).
#[derive(Default)]
pub struct Scratch {
    /// The transformed input, in f32.
    v: Vec<f32>,
    /// The same, in bf16.
    v_bf16: Vec<Bf16>,
    /// The products.
    m: Vec<f32>,
}

/// The first `len` of `buf`, grown to hold them.
fn sized<T: Default + Clone>(buf: &mut Vec<T>, len: usize) -> &mut [T] {
    if buf.len() < len {
        buf.resize(len, T::default());
    }
    &mut buf[..len]
}

/// `m_p = v_p · u_pᵀ` for the 16 positions `p` (`dims`: tiles, input and
/// output channels), by `multiply`, as one parallel region: runs of tiles
/// of each, every run a product on one thread (one region per product made
/// 16 waits for the slowest task per convolution).
fn products<E: Sync>(
    u: &[PackedMatrix],
    v: &[E],
    m: &mut [f32],
    (tiles, ci, co): (usize, usize, usize),
    multiply: fn(&PackedMatrix, &[E], usize, &mut [f32]),
) {
    let run = tiles.div_ceil(tiles.div_ceil(PRODUCT_ROWS));
    let tasks: Vec<_> = u
        .iter()
        .zip(v.chunks_exact(tiles * ci))
        .zip(m.chunks_exact_mut(tiles * co))
        .flat_map(|((u, vp), mp)| {
            vp.chunks(run * ci)
                .zip(mp.chunks_mut(run * co))
                .map(move |(vr, mr)| (u, vr, mr))
        })
        .collect();
    tasks
        .into_par_iter()
        .for_each(|(u, vr, mr)| multiply(u, vr, vr.len() / ci, mr));
}

/// What the transformed input is held in: f32, or bf16 for products that
/// multiply bf16.
trait Held: Copy + Send + Sync {
    /// `src` into `dst` (as long), rounded to this element.
    fn put(src: &[f32], dst: &mut [Self]);
}

impl Held for f32 {
    fn put(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }
}

impl Held for Bf16 {
    fn put(src: &[f32], dst: &mut [Bf16]) {
        warpt_gemm::simd::bf16_from_f32(src, dst);
    }
}

/// What a convolution computes around its products, in the passes over
/// the data it makes anyway: a pass of its own each cost as much as a
/// small layer's products.
#[derive(Debug, Clone, Copy)]
pub struct Fused<'a> {
    /// ReLU applied to the input as it is read (the previous layer's,
    /// left to this one).
    pub relu_in: bool,
    /// Added to every output pixel, one value per output channel (a
    /// folded batch norm's shift).
    pub bias: &'a [f32],
    /// ReLU applied to the output.
    pub relu_out: bool,
}

/// A tile row's slices of the 16 matrices of `buf`: for each task
/// (image, tile row), its `run` values (`tw × c`) in each matrix.
fn tile_rows<E>(buf: &mut [E], run: usize) -> Vec<Vec<&mut [E]>> {
    let per = buf.len() / 16;
    if run == 0 || per == 0 {
        return Vec::new();
    }
    let mut tasks: Vec<Vec<&mut [E]>> = (0..per / run).map(|_| Vec::with_capacity(16)).collect();
    for matrix in buf.chunks_exact_mut(per) {
        for (task, part) in tasks.iter_mut().zip(matrix.chunks_exact_mut(run)) {
            task.push(part);
        }
    }
    tasks
}

/// The four runs of `c` values (one per column of a 4×4) that a row of
/// the transforms' scratch holds.
fn quarters(row: &[f32], c: usize) -> [&[f32]; 4] {
    std::array::from_fn(|i| &row[i * c..][..c])
}

/// `V = Bᵀ d B` of every 4×4 window `d` (zero outside the image; with
/// `relu`, of the input's positive part), per channel, into `v` (16
/// matrices of `tiles × c`).
/// `Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]`.
fn input_transform<E: Held>(x: &[f32], shape: Shape, c: usize, relu: bool, v: &mut [E]) {
    if relu {
        input_transform_as::<E, true>(x, shape, c, v);
    } else {
        input_transform_as::<E, false>(x, shape, c, v);
    }
}

/// [`input_transform`], the ReLU decided at compile time.
fn input_transform_as<E: Held, const RELU: bool>(x: &[f32], shape: Shape, c: usize, v: &mut [E]) {
    let act = |v: f32| if RELU { v.max(0.0) } else { v };
    let (th, tw) = shape.tiles();
    let (h, w) = (shape.h, shape.w);
    let zeros = vec![0f32; c];
    tile_rows(v, tw * c)
        .into_par_iter()
        .enumerate()
        .for_each(|(task, mut dst)| {
            vectorized(
                #[inline(always)]
                || {
                    let (img, ty) = (task / th, task % th);
                    // Bᵀ d, row-major 4×4 runs of c; then a row of
                    // (Bᵀ d) B, before it is put in its element.
                    let mut t = vec![0f32; 16 * c];
                    let mut q = vec![0f32; 4 * c];
                    for tx in 0..tw {
                        let pixel = |r: usize, col: usize| -> &[f32] {
                            let (y, xx) = ((2 * ty + r) as isize - 1, (2 * tx + col) as isize - 1);
                            if y < 0 || y >= h as isize || xx < 0 || xx >= w as isize {
                                &zeros
                            } else {
                                &x[((img * h + y as usize) * w + xx as usize) * c..][..c]
                            }
                        };
                        for col in 0..4 {
                            let [d0, d1, d2, d3] = [0, 1, 2, 3].map(|r| pixel(r, col));
                            let (r0, rest) = t.split_at_mut(4 * c);
                            let (r1, rest) = rest.split_at_mut(4 * c);
                            let (r2, r3) = rest.split_at_mut(4 * c);
                            let [r0, r1, r2, r3] = [r0, r1, r2, r3].map(|r| &mut r[col * c..][..c]);
                            for k in 0..c {
                                let [d0, d1, d2, d3] = [d0[k], d1[k], d2[k], d3[k]].map(act);
                                r0[k] = d0 - d2;
                                r1[k] = d1 + d2;
                                r2[k] = d2 - d1;
                                r3[k] = d1 - d3;
                            }
                        }
                        // (Bᵀ d) B, into the tile's run of each matrix.
                        for r in 0..4 {
                            let [a, b, cc, d] = quarters(&t[r * 4 * c..][..4 * c], c);
                            let (q0, rest) = q.split_at_mut(c);
                            let (q1, rest) = rest.split_at_mut(c);
                            let (q2, q3) = rest.split_at_mut(c);
                            for k in 0..c {
                                q0[k] = a[k] - cc[k];
                                q1[k] = b[k] + cc[k];
                                q2[k] = cc[k] - b[k];
                                q3[k] = b[k] - d[k];
                            }
                            for (p, part) in q.chunks_exact(c).enumerate() {
                                E::put(part, &mut dst[r * 4 + p][tx * c..][..c]);
                            }
                        }
                    }
                },
            )
        });
}

/// `out = bias + Aᵀ m A` of every tile (the part of its 2×2 inside the
/// image; with `RELU`, its positive part), per channel, from `m` (16
/// matrices of `tiles × c`, `c` the bias's length).
/// `Aᵀ = [1 1 1 0; 0 1 -1 -1]`.
fn output_transform<const RELU: bool>(m: &[f32], shape: Shape, bias: &[f32], out: &mut [f32]) {
    let c = bias.len();
    let act = |v: f32| if RELU { v.max(0.0) } else { v };
    let (th, tw) = shape.tiles();
    let (h, w) = (shape.h, shape.w);
    let tiles = shape.tile_count();
    let at = |p: usize, tile: usize| &m[(p * tiles + tile) * c..][..c];
    out.par_chunks_mut(h * w * c)
        .enumerate()
        .flat_map(|(img, image)| {
            image
                .par_chunks_mut(2 * w * c)
                .enumerate()
                .map(move |(ty, rows)| (img, ty, rows))
        })
        .for_each(|(img, ty, rows)| {
            vectorized(
                #[inline(always)]
                || {
                    let height = rows.len() / (w * c);
                    let mut t = vec![0f32; 8 * c];
                    for tx in 0..tw {
                        let tile = (img * th + ty) * tw + tx;
                        // Aᵀ m: two rows of four, into t.
                        for col in 0..4 {
                            let (m0, m1, m2, m3) = (
                                at(col, tile),
                                at(4 + col, tile),
                                at(8 + col, tile),
                                at(12 + col, tile),
                            );
                            let (top, bottom) = t.split_at_mut(4 * c);
                            let (top, bottom) =
                                (&mut top[col * c..][..c], &mut bottom[col * c..][..c]);
                            for k in 0..c {
                                top[k] = m0[k] + m1[k] + m2[k];
                                bottom[k] = m1[k] - m2[k] - m3[k];
                            }
                        }
                        // (Aᵀ m) A: two columns of each row, plus the bias.
                        for (r, row) in t.chunks_exact(4 * c).enumerate().take(height) {
                            let [a, b, cc, d] = quarters(row, c);
                            let px = &mut rows[(r * w + 2 * tx) * c..];
                            let (left, right) = px.split_at_mut(c.min(px.len()));
                            let left = &mut left[..c];
                            for k in 0..c {
                                left[k] = act(bias[k] + a[k] + b[k] + cc[k]);
                            }
                            if 2 * tx + 1 < w {
                                let right = &mut right[..c];
                                for k in 0..c {
                                    right[k] = act(bias[k] + b[k] - cc[k] - d[k]);
                                }
                            }
                        }
                    }
                },
            )
        });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The convolution by its definition, in f64.
    fn direct(x: &[f32], s: Shape, ci: usize, co: usize, k: &[f64]) -> Vec<f64> {
        let mut out = vec![0f64; s.n * s.h * s.w * co];
        for img in 0..s.n {
            for y in 0..s.h {
                for xx in 0..s.w {
                    for o in 0..co {
                        let mut acc = 0f64;
                        for ky in 0..3 {
                            for kx in 0..3 {
                                let (iy, ix) = (y as isize + ky - 1, xx as isize + kx - 1);
                                if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                    continue;
                                }
                                let px = ((img * s.h + iy as usize) * s.w + ix as usize) * ci;
                                for i in 0..ci {
                                    let tap = ((o * ci + i) * 3 + ky as usize) * 3 + kx as usize;
                                    acc += x[px + i] as f64 * k[tap];
                                }
                            }
                        }
                        out[((img * s.h + y) * s.w + xx) * co + o] = acc;
                    }
                }
            }
        }
        out
    }

    #[test]
    fn an_empty_batch_writes_nothing() {
        let conv = Winograd::new(4, 3, |_, _| [1.0; 9], Precision::F32);
        let s = Shape { n: 0, h: 5, w: 5 };
        let fused = Fused {
            relu_in: false,
            bias: &[0.5; 4],
            relu_out: true,
        };
        let mut scratch = Scratch::default();
        conv.forward(&[], s, fused, &mut [], &mut scratch);
        assert!(scratch.v.is_empty() && scratch.m.is_empty());
    }

    #[test]
    fn in_bf16_is_near_the_direct_convolution() {
        // The transformed input and kernels rounded to bf16 (8 bits):
        // within bf16's rounding of the largest output, and not equal to
        // the f32 result; on a CPU with bf16 products the input
        // transform writes bf16 itself.
        let (s, ci, co) = (Shape { n: 2, h: 7, w: 6 }, 40, 24);
        let k: Vec<f64> = (0..co * ci * 9)
            .map(|i| ((i * 7) % 19) as f64 / 8.0 - 1.1 + (i % 7) as f64 / 997.0)
            .collect();
        let x: Vec<f32> = (0..s.n * s.h * s.w * ci)
            .map(|i| ((i * 5) % 23) as f32 / 4.0 - 2.7 + (i % 11) as f32 / 1013.0)
            .collect();
        let kernel = |o: usize, i: usize| std::array::from_fn(|t| k[(o * ci + i) * 9 + t]);
        let bias = vec![0.25f32; co];
        let fused = Fused {
            relu_in: false,
            bias: &bias,
            relu_out: false,
        };
        let run = |precision| {
            let conv = Winograd::new(co, ci, kernel, precision);
            let mut out = vec![f32::NAN; s.n * s.h * s.w * co];
            let mut scratch = Scratch::default();
            conv.forward(&x, s, fused, &mut out, &mut scratch);
            let native = conv.u.iter().all(PackedMatrix::multiplies_bf16);
            assert_eq!(!scratch.v_bf16.is_empty(), native, "{precision:?}");
            assert_eq!(scratch.v.is_empty(), native, "{precision:?}");
            out
        };
        let (f32_out, bf16_out) = (run(Precision::F32), run(Precision::Bf16));
        let want = direct(&x, s, ci, co, &k);
        let scale = want.iter().fold(1f64, |a, b| a.max(b.abs()));
        let mut worst = 0f64;
        for (j, (got, want)) in bf16_out.iter().zip(&want).enumerate() {
            let err = (*got as f64 - (want + 0.25)).abs();
            assert!(err <= 2e-2 * scale, "value {j}: {got} vs {want}");
            worst = worst.max(err);
        }
        assert!(worst > 1e-5 * scale, "bf16 rounded nothing: {worst}");
        assert_ne!(f32_out, bf16_out);
    }

    #[test]
    fn equals_the_direct_convolution() {
        // Even and odd sides (a last tile half outside), one and several
        // images, channel counts off every vector width, with and without
        // the fused bias and ReLUs; in a pool of three threads.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let shapes = [
            (1, 4, 4, 3, 5),
            (2, 7, 5, 17, 9),
            (3, 1, 1, 8, 4),
            (1, 6, 9, 33, 70),
        ];
        for ((n, h, w, ci, co), relu) in shapes.into_iter().zip([false, true, false, true]) {
            let s = Shape { n, h, w };
            let k: Vec<f64> = (0..co * ci * 9)
                .map(|i| ((i * 7) % 19) as f64 / 8.0 - 1.1)
                .collect();
            let x: Vec<f32> = (0..n * h * w * ci)
                .map(|i| ((i * 5) % 23) as f32 / 4.0 - 2.7)
                .collect();
            let bias: Vec<f32> = (0..co).map(|i| (i % 3) as f32 - 1.0).collect();
            let conv = Winograd::new(
                co,
                ci,
                |o, i| std::array::from_fn(|t| k[(o * ci + i) * 9 + t]),
                Precision::F32,
            );
            let mut out = vec![f32::NAN; n * h * w * co];
            // Scratch left dirty by a larger call.
            let mut scratch = Scratch {
                v: vec![f32::NAN; 20_000],
                v_bf16: Vec::new(),
                m: vec![f32::NAN; 20_000],
            };
            let fused = Fused {
                relu_in: relu,
                bias: &bias,
                relu_out: relu,
            };
            pool.install(|| conv.forward(&x, s, fused, &mut out, &mut scratch));
            let act = |v: f32| if relu { v.max(0.0) } else { v };
            let xr: Vec<f32> = x.iter().map(|&v| act(v)).collect();
            let want = direct(&xr, s, ci, co, &k);
            let scale = want.iter().fold(1f64, |a, b| a.max(b.abs()));
            let mut clipped = 0;
            for (j, (got, want)) in out.iter().zip(&want).enumerate() {
                let want = want + bias[j % co] as f64;
                let want = if relu { want.max(0.0) } else { want };
                clipped += usize::from(relu && want == 0.0);
                assert!(
                    (*got as f64 - want).abs() <= 1e-5 * scale,
                    "{n}x{h}x{w}, {ci} -> {co}, relu {relu}: value {j}: {got} vs {want}"
                );
            }
            // The ReLUs had something to clip.
            assert!(!relu || clipped > 0, "{n}x{h}x{w}: nothing clipped");
        }
    }
}
