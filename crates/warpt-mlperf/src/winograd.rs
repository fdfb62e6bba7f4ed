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

use warpt_models::packed::{PackedMatrix, Precision};

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

    /// The scratch [`Self::add_to`] takes for `shape`: the lengths of
    /// the transformed input and of the products.
    pub fn scratch(&self, shape: Shape) -> (usize, usize) {
        let tiles = shape.tile_count();
        (16 * tiles * self.c_in, 16 * tiles * self.c_out)
    }

    /// `out` (`n × h × w × c_out`, channels last) plus the convolution of
    /// `x` (`n × h × w × c_in`). `v` and `m` are scratch of any contents,
    /// of the lengths [`Self::scratch`] gives.
    ///
    /// # Panics
    /// If `x`, `out`, `v` or `m` is not of the length `shape` gives it.
    pub fn add_to(&self, x: &[f32], shape: Shape, out: &mut [f32], v: &mut [f32], m: &mut [f32]) {
        let (ci, co) = (self.c_in, self.c_out);
        assert_eq!(x.len(), shape.n * shape.h * shape.w * ci, "input shape");
        assert_eq!(out.len(), shape.n * shape.h * shape.w * co, "output shape");
        assert_eq!((v.len(), m.len()), self.scratch(shape), "scratch lengths");
        let tiles = shape.tile_count();
        if tiles == 0 || ci == 0 || co == 0 {
            // Nothing to add (no images, or no channels on one side).
            return;
        }
        input_transform(x, shape, ci, v);
        // The 16 products, each on every core (the engine splits rows).
        for ((u, vp), mp) in self
            .u
            .iter()
            .zip(v.chunks_exact(tiles * ci))
            .zip(m.chunks_exact_mut(tiles * co))
        {
            u.matmul_t_into(vp, tiles, mp);
        }
        output_transform(m, shape, co, out);
    }
}

/// A tile row's slices of the 16 matrices of `buf`: for each task
/// (image, tile row), its `run` values (`tw × c`) in each matrix.
fn tile_rows(buf: &mut [f32], run: usize) -> Vec<Vec<&mut [f32]>> {
    let per = buf.len() / 16;
    if run == 0 || per == 0 {
        return Vec::new();
    }
    let mut tasks: Vec<Vec<&mut [f32]>> = (0..per / run).map(|_| Vec::with_capacity(16)).collect();
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

/// `V = Bᵀ d B` of every 4×4 window `d` (zero outside the image), per
/// channel, into `v` (16 matrices of `tiles × c`).
/// `Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]`.
fn input_transform(x: &[f32], shape: Shape, c: usize, v: &mut [f32]) {
    let (th, tw) = shape.tiles();
    let (h, w) = (shape.h, shape.w);
    let zeros = vec![0f32; c];
    tile_rows(v, tw * c)
        .into_par_iter()
        .enumerate()
        .for_each(|(task, mut dst)| {
            let (img, ty) = (task / th, task % th);
            // Bᵀ d, row-major 4×4 runs of c.
            let mut t = vec![0f32; 16 * c];
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
                        r0[k] = d0[k] - d2[k];
                        r1[k] = d1[k] + d2[k];
                        r2[k] = d2[k] - d1[k];
                        r3[k] = d1[k] - d3[k];
                    }
                }
                // (Bᵀ d) B, into the tile's run of each matrix.
                for r in 0..4 {
                    let [a, b, cc, d] = quarters(&t[r * 4 * c..][..4 * c], c);
                    let [o0, o1, o2, o3] = &mut dst[r * 4..r * 4 + 4] else {
                        unreachable!("16 slices per task")
                    };
                    let [o0, o1, o2, o3] = [o0, o1, o2, o3].map(|o| &mut o[tx * c..][..c]);
                    for k in 0..c {
                        o0[k] = a[k] - cc[k];
                        o1[k] = b[k] + cc[k];
                        o2[k] = cc[k] - b[k];
                        o3[k] = b[k] - d[k];
                    }
                }
            }
        });
}

/// `out += Aᵀ m A` of every tile (the part of its 2×2 inside the image),
/// per channel, from `m` (16 matrices of `tiles × c`).
/// `Aᵀ = [1 1 1 0; 0 1 -1 -1]`.
fn output_transform(m: &[f32], shape: Shape, c: usize, out: &mut [f32]) {
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
                    let (top, bottom) = (&mut top[col * c..][..c], &mut bottom[col * c..][..c]);
                    for k in 0..c {
                        top[k] = m0[k] + m1[k] + m2[k];
                        bottom[k] = m1[k] - m2[k] - m3[k];
                    }
                }
                // (Aᵀ m) A: two columns of each row, added to the output.
                for (r, row) in t.chunks_exact(4 * c).enumerate().take(height) {
                    let [a, b, cc, d] = quarters(row, c);
                    let px = &mut rows[(r * w + 2 * tx) * c..];
                    let (left, right) = px.split_at_mut(c.min(px.len()));
                    let left = &mut left[..c];
                    for k in 0..c {
                        left[k] += a[k] + b[k] + cc[k];
                    }
                    if 2 * tx + 1 < w {
                        let right = &mut right[..c];
                        for k in 0..c {
                            right[k] += b[k] - cc[k] - d[k];
                        }
                    }
                }
            }
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
    fn an_empty_batch_adds_nothing() {
        let conv = Winograd::new(4, 3, |_, _| [1.0; 9], Precision::F32);
        let s = Shape { n: 0, h: 5, w: 5 };
        conv.add_to(&[], s, &mut [], &mut [], &mut []);
        assert_eq!(conv.scratch(s), (0, 0));
    }

    #[test]
    fn equals_the_direct_convolution() {
        // Even and odd sides (a last tile half outside), one and several
        // images, channel counts off every vector width, added to what
        // the output held; in a pool of three threads.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for (n, h, w, ci, co) in [
            (1, 4, 4, 3, 5),
            (2, 7, 5, 17, 9),
            (3, 1, 1, 8, 4),
            (1, 6, 9, 33, 70),
        ] {
            let s = Shape { n, h, w };
            let k: Vec<f64> = (0..co * ci * 9)
                .map(|i| ((i * 7) % 19) as f64 / 8.0 - 1.1)
                .collect();
            let x: Vec<f32> = (0..n * h * w * ci)
                .map(|i| ((i * 5) % 23) as f32 / 4.0 - 2.7)
                .collect();
            let start: Vec<f32> = (0..n * h * w * co).map(|i| (i % 3) as f32).collect();
            let conv = Winograd::new(
                co,
                ci,
                |o, i| std::array::from_fn(|t| k[(o * ci + i) * 9 + t]),
                Precision::F32,
            );
            let mut out = start.clone();
            let (lv, lm) = conv.scratch(s);
            let (mut v, mut m) = (vec![f32::NAN; lv], vec![f32::NAN; lm]);
            pool.install(|| conv.add_to(&x, s, &mut out, &mut v, &mut m));
            let want = direct(&x, s, ci, co, &k);
            let scale = want.iter().fold(1f64, |a, b| a.max(b.abs()));
            for (j, (got, want)) in out.iter().zip(&want).enumerate() {
                let want = want + start[j] as f64;
                assert!(
                    (*got as f64 - want).abs() <= 1e-5 * scale,
                    "{n}x{h}x{w}, {ci} -> {co}: value {j}: {got} vs {want}"
                );
            }
        }
    }
}
