//! The transforms around a Winograd convolution's products: each input
//! window into its values (`Bᵀ d B`), a tile row at a time, and the
//! products of each tile back into its output (`Aᵀ m A`). F(2×2, 3×3)'s
//! here (4×4 windows, 16 values, 2×2 outputs); F(4×4, 3×3)'s in `f4`.

use rayon::prelude::*;

use warpt_gemm::simd::vectorized;

use super::{Grid, Held, Tile, f4};

/// A tile row's slices of the `positions` matrices of `buf`: for each
/// task (image, tile row), its `run` values (`tw × c`) in each matrix.
pub(super) fn tile_rows<E>(buf: &mut [E], positions: usize, run: usize) -> Vec<Vec<&mut [E]>> {
    let per = buf.len() / positions;
    if run == 0 || per == 0 {
        return Vec::new();
    }
    let mut tasks: Vec<Vec<&mut [E]>> = (0..per / run)
        .map(|_| Vec::with_capacity(positions))
        .collect();
    for matrix in buf.chunks_exact_mut(per) {
        for (task, part) in tasks.iter_mut().zip(matrix.chunks_exact_mut(run)) {
            task.push(part);
        }
    }
    tasks
}

/// The runs of `c` values (one per column of a window) that a row of the
/// transforms' scratch holds.
pub(super) fn runs<const N: usize>(row: &[f32], c: usize) -> [&[f32]; N] {
    std::array::from_fn(|i| &row[i * c..][..c])
}

/// `V = Bᵀ d B` of every window `d` (zero outside the image; with
/// `relu`, of the input's positive part), per channel, into `v` (one
/// matrix of `tiles × c` per position of the window).
pub(super) fn input_transform<E: Held>(x: &[f32], shape: Grid, c: usize, relu: bool, v: &mut [E]) {
    if relu {
        input_transform_as::<E, true>(x, shape, c, v);
    } else {
        input_transform_as::<E, false>(x, shape, c, v);
    }
}

/// [`input_transform`], the ReLU decided at compile time.
fn input_transform_as<E: Held, const RELU: bool>(x: &[f32], shape: Grid, c: usize, v: &mut [E]) {
    let (th, tw) = shape.tiles();
    tile_rows(v, shape.tile.positions(), tw * c)
        .into_par_iter()
        .enumerate()
        .for_each(|(task, mut dst)| {
            vectorized(
                #[inline(always)]
                || {
                    let mut rs = RowScratch::new(c, shape.tile);
                    input_row::<E, RELU>(x, shape, c, task / th, task % th, &mut dst, &mut rs);
                },
            )
        });
}

/// The input transform's scratch for one tile row of `c` channels.
pub(super) struct RowScratch {
    /// `Bᵀ d`, a run of `c` per position of the window.
    pub(super) t: Vec<f32>,
    /// A row of `(Bᵀ d) B`, a run of `c` per column of the window.
    pub(super) q: Vec<f32>,
    /// A pixel outside the image.
    pub(super) zeros: Vec<f32>,
}

impl RowScratch {
    pub(super) fn new(c: usize, tile: Tile) -> Self {
        RowScratch {
            t: vec![0.0; tile.positions() * c],
            q: vec![0.0; tile.side() * c],
            zeros: vec![0.0; c],
        }
    }
}

/// `V = Bᵀ d B` of the windows of tile row `ty` of image `img` (see
/// [`input_transform`]), into `dst`: the row's run of each of the
/// window's matrices, `tw × c` values each.
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
    match shape.tile {
        Tile::F2 => input_row2::<E, RELU>(x, shape, c, img, ty, dst, scratch),
        Tile::F4 => f4::input_row::<E, RELU>(x, shape, c, img, ty, dst, scratch),
    }
}

/// The `c` channels of the pixel at row `y - 1`, column `x - 1` of image
/// `img` (a window's position, the padding's one row and column before
/// the image's first), or `zeros` where that is outside the image.
#[inline(always)]
pub(super) fn window_pixel<'a>(
    x: &'a [f32],
    shape: Grid,
    c: usize,
    img: usize,
    (y, xx): (usize, usize),
    zeros: &'a [f32],
) -> &'a [f32] {
    let (h, w) = (shape.h, shape.w);
    if y == 0 || y > h || xx == 0 || xx > w {
        zeros
    } else {
        &x[((img * h + y - 1) * w + xx - 1) * c..][..c]
    }
}

/// [`input_row`] of F(2×2, 3×3):
/// `Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]`.
#[inline(always)]
fn input_row2<E: Held, const RELU: bool>(
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
        window_pixel(x, shape, c, img, (2 * ty + r, 2 * tx + col), zeros)
    };
    for tx in 0..tw {
        // Bᵀ d, row-major 4×4 runs of c; then a row of (Bᵀ d) B, before
        // it is put in its element.
        for col in 0..4 {
            let [d0, d1, d2, d3] = [0, 1, 2, 3].map(|r| pixel(tx, r, col));
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
            let [a, b, cc, d] = runs(&t[r * 4 * c..][..4 * c], c);
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
}

/// `out = bias + Aᵀ m A` of every tile (the part of its output inside
/// the image; with `RELU`, its positive part), per channel, from `m` (a
/// matrix of `tiles × c` per position of the window, `c` the bias's
/// length).
pub(super) fn output_transform<const RELU: bool>(
    m: &[f32],
    shape: Grid,
    bias: &[f32],
    out: &mut [f32],
) {
    let c = bias.len();
    let (th, tw) = shape.tiles();
    let (h, w) = (shape.h, shape.w);
    let tiles = shape.tile_count();
    let out_side = shape.tile.out();
    out.par_chunks_mut(h * w * c)
        .enumerate()
        .flat_map(|(img, image)| {
            image
                .par_chunks_mut(out_side * w * c)
                .enumerate()
                .map(move |(ty, rows)| (img, ty, rows))
        })
        .for_each(|(img, ty, rows)| {
            vectorized(
                #[inline(always)]
                || {
                    let mut t = vec![0f32; shape.tile.out_scratch() * c];
                    let first = (img * th + ty) * tw;
                    output_row::<RELU>(shape.tile, m, tiles, first, w, bias, rows, &mut t);
                },
            )
        });
}

/// [`output_transform`] of one tile row: its tiles from `first` on in
/// `m`'s matrices (`tiles` rows each), into `rows` (its rows of `w`
/// pixels, up to the tile's side); `t` scratch
/// ([`Tile::out_scratch`]` · c` at least).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn output_row<const RELU: bool>(
    tile: Tile,
    m: &[f32],
    tiles: usize,
    first: usize,
    w: usize,
    bias: &[f32],
    rows: &mut [f32],
    t: &mut [f32],
) {
    match tile {
        Tile::F2 => output_row2::<RELU>(m, tiles, first, w, bias, rows, t),
        Tile::F4 => f4::output_row::<RELU>(m, tiles, first, w, bias, rows, t),
    }
}

/// [`output_row`] of F(2×2, 3×3): `Aᵀ = [1 1 1 0; 0 1 -1 -1]`.
#[inline(always)]
fn output_row2<const RELU: bool>(
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
    let t = &mut t[..8 * c];
    for tx in 0..w.div_ceil(2) {
        let tile = first + tx;
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
        // (Aᵀ m) A: two columns of each row, plus the bias.
        for (r, row) in t.chunks_exact(4 * c).enumerate().take(height) {
            let [a, b, cc, d] = runs(row, c);
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
}
