//! F(4×4, 3×3)'s transforms (Lavin and Gray's, interpolating at 0, ±1,
//! ±2 and infinity): 6×6 input windows into 36 values, the 36 products of
//! each tile back into its 4×4 output. The kernel's `G` is in
//! [`super::Tile::g`].
//!
//! ```text
//! Bᵀ = [4  0 -5  0 1 0        Aᵀ = [1 1  1 1  1 0
//!       0 -4 -4  1 1 0              0 1 -1 2 -2 0
//!       0  4 -4 -1 1 0              0 1  1 4  4 0
//!       0 -2 -1  2 1 0              0 1 -1 8 -8 1]
//!       0  2 -1 -2 1 0
//!       0  4  0 -5 0 1]
//! ```

use super::transform::{RowScratch, runs, window_pixel};
use super::{Grid, Held};

/// Side of a window.
const SIDE: usize = 6;

/// Side of an output tile.
const OUT: usize = 4;

/// `Bᵀ` applied to one column (or row) of a window, channel `k` of each
/// of its six runs, into the six runs of `out`.
#[inline(always)]
fn b_t(d: [&[f32]; SIDE], out: &mut [f32], c: usize, act: impl Fn(f32) -> f32) {
    let (o0, rest) = out.split_at_mut(c);
    let (o1, rest) = rest.split_at_mut(c);
    let (o2, rest) = rest.split_at_mut(c);
    let (o3, rest) = rest.split_at_mut(c);
    let (o4, o5) = rest.split_at_mut(c);
    let o5 = &mut o5[..c];
    for k in 0..c {
        let [d0, d1, d2, d3, d4, d5] =
            [d[0][k], d[1][k], d[2][k], d[3][k], d[4][k], d[5][k]].map(&act);
        o0[k] = 4.0 * d0 - 5.0 * d2 + d4;
        o1[k] = d3 + d4 - 4.0 * (d1 + d2);
        o2[k] = 4.0 * (d1 - d2) - d3 + d4;
        o3[k] = 2.0 * (d3 - d1) - d2 + d4;
        o4[k] = 2.0 * (d1 - d3) - d2 + d4;
        o5[k] = 4.0 * d1 - 5.0 * d3 + d5;
    }
}

/// `V = Bᵀ d B` of the windows of tile row `ty` of image `img`, into
/// `dst`: the row's run of each of the 36 matrices, `tw × c` values each
/// (as [`super::transform::input_row`]).
#[inline(always)]
pub(super) fn input_row<E: Held, const RELU: bool>(
    x: &[f32],
    shape: Grid,
    c: usize,
    img: usize,
    ty: usize,
    dst: &mut [&mut [E]],
    scratch: &mut RowScratch,
) {
    let act = |v: f32| if RELU { v.max(0.0) } else { v };
    let (_, tw) = shape.tiles();
    let RowScratch { t, q, zeros } = scratch;
    let zeros = &zeros[..];
    let pixel = |tx: usize, r: usize, col: usize| {
        window_pixel(x, shape, c, img, (OUT * ty + r, OUT * tx + col), zeros)
    };
    for tx in 0..tw {
        // Bᵀ d, a column of the window at a time into t (row-major 6×6
        // runs of c: column col of row r at (r·6 + col)·c).
        for col in 0..SIDE {
            let d: [&[f32]; SIDE] = std::array::from_fn(|r| pixel(tx, r, col));
            b_t(d, q, c, act);
            for r in 0..SIDE {
                t[(r * SIDE + col) * c..][..c].copy_from_slice(&q[r * c..][..c]);
            }
        }
        // (Bᵀ d) B, a row at a time, into the tile's run of each matrix.
        for r in 0..SIDE {
            let row: [&[f32]; SIDE] = runs(&t[r * SIDE * c..][..SIDE * c], c);
            b_t(row, q, c, |v| v);
            for (p, part) in q.chunks_exact(c).enumerate() {
                E::put(part, &mut dst[r * SIDE + p][tx * c..][..c]);
            }
        }
    }
}

/// `Aᵀ` applied to one column (or row) of a tile's products, channel `k`
/// of each of its six runs: the four outputs.
#[inline(always)]
fn a_t(m: [&[f32]; SIDE], k: usize) -> [f32; OUT] {
    let [m0, m1, m2, m3, m4, m5] = [m[0][k], m[1][k], m[2][k], m[3][k], m[4][k], m[5][k]];
    let (s12, d12) = (m1 + m2, m1 - m2);
    let (s34, d34) = (m3 + m4, m3 - m4);
    [
        m0 + s12 + s34,
        d12 + 2.0 * d34,
        s12 + 4.0 * s34,
        d12 + 8.0 * d34 + m5,
    ]
}

/// `out = bias + Aᵀ m A` of one tile row (as
/// [`super::transform::output_row`]): its tiles from `first` on in `m`'s
/// 36 matrices (`tiles` rows each), into `rows` (up to four rows of `w`
/// pixels); `t` (`24·c` at least) scratch.
#[inline(always)]
pub(super) fn output_row<const RELU: bool>(
    m: &[f32],
    tiles: usize,
    first: usize,
    w: usize,
    bias: &[f32],
    rows: &mut [f32],
    t: &mut [f32],
) {
    let c = bias.len();
    let act = |v: f32| if RELU { v.max(0.0) } else { v };
    let at = |p: usize, tile: usize| &m[(p * tiles + tile) * c..][..c];
    let height = rows.len() / (w * c);
    let t = &mut t[..OUT * SIDE * c];
    for tx in 0..w.div_ceil(OUT) {
        let tile = first + tx;
        // Aᵀ m: four rows of six, into t (row r's column col at
        // (r·6 + col)·c).
        for col in 0..SIDE {
            let column: [&[f32]; SIDE] = std::array::from_fn(|r| at(r * SIDE + col, tile));
            for k in 0..c {
                for (r, v) in a_t(column, k).into_iter().enumerate() {
                    t[(r * SIDE + col) * c + k] = v;
                }
            }
        }
        // (Aᵀ m) A: the four columns of each row inside the image, plus
        // the bias.
        let across = (w - OUT * tx).min(OUT);
        for (r, row) in t.chunks_exact(SIDE * c).enumerate().take(height) {
            let row: [&[f32]; SIDE] = runs(row, c);
            let px = &mut rows[(r * w + OUT * tx) * c..][..across * c];
            for k in 0..c {
                let out = a_t(row, k);
                for (j, v) in out.into_iter().take(across).enumerate() {
                    px[j * c + k] = act(bias[k] + v);
                }
            }
        }
    }
}
