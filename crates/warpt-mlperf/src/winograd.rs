//! 3×3, stride-1, padding-1 convolutions by Winograd's minimal filtering
//! F(2×2, 3×3) or F(4×4, 3×3) (Lavin and Gray, "Fast Algorithms for
//! Convolutional Neural Networks", 2016), channels last, on warpt's GEMM
//! engine. F(2×2, 3×3) is described below; F(4×4, 3×3) is the same with
//! 6×6 windows, 36 positions and 4×4 output tiles: 36 products of one
//! depth for 16 pixels (2.25 a pixel, against 4 for F(2×2) and 9 for a
//! direct convolution), its transforms multiplying by small integers
//! (`f4.rs`) and its kernels' by fractions, which costs a few bits of
//! rounding (`Tile`).
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
//!
//! A convolution whose transformed kernels stay in the last-level cache
//! runs in pieces: each task transforms a few tile rows of one image into
//! buffers of its thread's, multiplies them and transforms them back while
//! they are in its L2 (ResNet-50's 64- to 256-channel layers); a larger
//! one runs each step over the whole batch, as the products then read the
//! kernels once (`transform.rs` holds the transforms of both).

use std::sync::Mutex;

use rayon::prelude::*;

use warpt_gemm::Bf16;
use warpt_gemm::simd::vectorized;
use warpt_models::packed::{PackedMatrix, Precision};

use transform::{RowScratch, input_row, input_transform, output_row, output_transform, tile_rows};

mod f4;
mod transform;

/// Tiles per task of a convolution's products at most: the 16 products of
/// a small layer are enough tasks already; a large layer's are cut so the
/// threads share them evenly.
const PRODUCT_ROWS: usize = 512;

/// Bytes a piece of a convolution holds at most (its transformed input
/// and products here, an im2col's receptive fields in `resnet_gemm`):
/// half a Zen 4 core's L2, where they are made and used without going to
/// memory. On the stem's im2col larger pieces measured the same, pieces of
/// a quarter of this slower on a 3×3 at 1152 deep.
pub(crate) const PIECE_BYTES: usize = 512 << 10;

/// Bytes of transformed kernels at most for a convolution to run in
/// pieces: a share of the last-level cache they can stay in while every
/// piece reads them.
const KERNELS_IN_PIECES: usize = 4 << 20;

/// Which minimal filtering a convolution runs: the output tile it
/// computes from each window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tile {
    /// F(2×2, 3×3): 4×4 windows, 16 products a tile, 2.25 times fewer
    /// multiplications than the direct convolution; the transforms add
    /// and subtract only (the kernel's halves).
    F2,
    /// F(4×4, 3×3): 6×6 windows, 36 products a tile, 4 times fewer; the
    /// transforms multiply by up to 8 and the kernel's by sixths and
    /// twenty-fourths, so its results carry about ten times F(2×2)'s
    /// rounding (ResNet-50's validation holds it to 1e-4 of the largest
    /// logit).
    F4,
}

impl Tile {
    /// The output tile's side.
    fn out(self) -> usize {
        match self {
            Tile::F2 => 2,
            Tile::F4 => 4,
        }
    }

    /// The window's side.
    fn side(self) -> usize {
        self.out() + 2
    }

    /// The window's positions: products a tile.
    fn positions(self) -> usize {
        self.side() * self.side()
    }

    /// Values a channel the output transform's scratch holds (`Aᵀ m`).
    fn out_scratch(self) -> usize {
        self.out() * self.side()
    }

    /// Row `r` of `G` (the kernel's transform, `side × 3`).
    fn g(self, r: usize) -> [f64; 3] {
        const F2: [[f64; 3]; 4] = [
            [1.0, 0.0, 0.0],
            [0.5, 0.5, 0.5],
            [0.5, -0.5, 0.5],
            [0.0, 0.0, 1.0],
        ];
        const F4: [[f64; 3]; 6] = [
            [0.25, 0.0, 0.0],
            [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
            [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
            [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
            [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
            [0.0, 0.0, 1.0],
        ];
        match self {
            Tile::F2 => F2[r],
            Tile::F4 => F4[r],
        }
    }
}

/// A convolution's kernels, transformed and packed: one matrix per
/// position of the window's transform.
pub struct Winograd {
    /// `u[p]`: `c_out × c_in`, row `o` the transformed kernels of output
    /// channel `o` at position `p` (row-major order of the window).
    u: Vec<PackedMatrix>,
    c_in: usize,
    c_out: usize,
    tile: Tile,
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

/// A call's shape cut into a filtering's tiles.
#[derive(Debug, Clone, Copy)]
struct Grid {
    n: usize,
    h: usize,
    w: usize,
    tile: Tile,
}

impl Grid {
    /// Tile rows and columns per image.
    fn tiles(self) -> (usize, usize) {
        let out = self.tile.out();
        (self.h.div_ceil(out), self.w.div_ceil(out))
    }

    /// Tiles in all images.
    fn tile_count(self) -> usize {
        let (th, tw) = self.tiles();
        self.n * th * tw
    }
}

impl Winograd {
    /// The convolution whose kernel for output `o`, input `i` is
    /// `kernel(o, i)` (3×3, row-major), by F(2×2, 3×3), its products in
    /// `precision`.
    pub fn new(
        c_out: usize,
        c_in: usize,
        kernel: impl Fn(usize, usize) -> [f64; 9],
        precision: Precision,
    ) -> Self {
        Self::with_tile(Tile::F2, c_out, c_in, kernel, precision)
    }

    /// [`Self::new`] by the filtering `tile`.
    pub fn with_tile(
        tile: Tile,
        c_out: usize,
        c_in: usize,
        kernel: impl Fn(usize, usize) -> [f64; 9],
        precision: Precision,
    ) -> Self {
        // U = G g Gᵀ, in f64.
        let side = tile.side();
        let g_rows = |g: [f64; 3]| -> Vec<f64> {
            (0..side)
                .map(|r| {
                    let row = tile.g(r);
                    row[0] * g[0] + row[1] * g[1] + row[2] * g[2]
                })
                .collect()
        };
        let mut u = vec![vec![0f32; c_out * c_in]; tile.positions()];
        for o in 0..c_out {
            for i in 0..c_in {
                let g = kernel(o, i);
                // G g: `side` rows of 3 (column by column), then (G g) Gᵀ.
                let cols: [Vec<f64>; 3] =
                    std::array::from_fn(|c| g_rows([g[c], g[3 + c], g[6 + c]]));
                for r in 0..side {
                    let row = g_rows([cols[0][r], cols[1][r], cols[2][r]]);
                    for (c, v) in row.into_iter().enumerate() {
                        u[r * side + c][o * c_in + i] = v as f32;
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
            tile,
        }
    }

    /// The filtering it runs.
    pub fn tile(&self) -> Tile {
        self.tile
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
        self.forward_as(x, shape, fused, out, scratch, self.in_pieces());
    }

    /// [`Self::forward`], in pieces or not as told.
    fn forward_as(
        &self,
        x: &[f32],
        shape: Shape,
        fused: Fused<'_>,
        out: &mut [f32],
        scratch: &mut Scratch,
        in_pieces: bool,
    ) {
        let (ci, co) = (self.c_in, self.c_out);
        assert_eq!(x.len(), shape.n * shape.h * shape.w * ci, "input shape");
        assert_eq!(out.len(), shape.n * shape.h * shape.w * co, "output shape");
        assert_eq!(fused.bias.len(), co, "one bias per output channel");
        let shape = Grid {
            n: shape.n,
            h: shape.h,
            w: shape.w,
            tile: self.tile,
        };
        let positions = self.tile.positions();
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
        if in_pieces {
            let pieces = scratch.pieces(rayon::current_num_threads());
            if self.u.iter().all(PackedMatrix::multiplies_bf16) {
                self.forward_in_pieces(
                    x,
                    shape,
                    fused,
                    out,
                    pieces,
                    PackedMatrix::matmul_t_into_serial_bf16,
                );
            } else {
                self.forward_in_pieces(
                    x,
                    shape,
                    fused,
                    out,
                    pieces,
                    PackedMatrix::matmul_t_into_serial,
                );
            }
            return;
        }
        let whole = &mut scratch.whole;
        let m = sized(&mut whole.m, positions * tiles * co);
        let dims = (tiles, ci, co);
        // Where the products multiply bf16, the input transform writes
        // bf16: no f32 copy of the transformed input is written and read.
        if self.u.iter().all(PackedMatrix::multiplies_bf16) {
            let v = sized(&mut whole.v_bf16, positions * tiles * ci);
            input_transform(x, shape, ci, fused.relu_in, v);
            products(&self.u, v, m, dims, PackedMatrix::matmul_t_into_serial_bf16);
        } else {
            let v = sized(&mut whole.v, positions * tiles * ci);
            input_transform(x, shape, ci, fused.relu_in, v);
            products(&self.u, v, m, dims, PackedMatrix::matmul_t_into_serial);
        }
        if fused.relu_out {
            output_transform::<true>(m, shape, fused.bias, out);
        } else {
            output_transform::<false>(m, shape, fused.bias, out);
        }
    }

    /// Whether the convolution runs a few tile rows at a time, each
    /// piece's transforms and products in its thread's cache, or a whole
    /// batch a step (the transformed input and the products, 64 bytes a
    /// tile and channel each, written to memory and read back). Each piece
    /// reads the 16 transformed kernels again: worth it while they stay in
    /// the last-level cache ([`KERNELS_IN_PIECES`]). ResNet-50 at batch 8 on
    /// a Zen 4 host, milliseconds a batch for its 3×3 layers whole / in
    /// pieces: 64 channels at 56² 35.7 / 24.5, 128 at 28² 24.6 / 18.1,
    /// 256 at 14² 30.2 / 25.4, 512 at 7² (16 MB of kernels) 13.3 / 13.9.
    fn in_pieces(&self) -> bool {
        self.tile.positions() * self.c_in * self.c_out * size_of::<f32>() <= KERNELS_IN_PIECES
    }

    /// [`Self::forward`] a few tile rows of an image a task, each task's
    /// transformed input and products in `pieces[its thread]`.
    fn forward_in_pieces<E: Held>(
        &self,
        x: &[f32],
        shape: Grid,
        fused: Fused<'_>,
        out: &mut [f32],
        pieces: &[Mutex<Buffers>],
        multiply: fn(&PackedMatrix, &[E], usize, &mut [f32]),
    ) {
        let (ci, co) = (self.c_in, self.c_out);
        let (th, tw) = shape.tiles();
        let (h, w) = (shape.h, shape.w);
        let (tile, positions, side_out) = (self.tile, self.tile.positions(), self.tile.out());
        // Tile rows a piece: as many as the budget holds, at least one.
        let bytes_per_row = positions * size_of::<f32>() * tw * (ci + co);
        let rows = (PIECE_BYTES / bytes_per_row.max(1)).clamp(1, th.max(1));
        out.par_chunks_mut(h * w * co)
            .enumerate()
            .flat_map(|(img, image)| {
                image
                    .par_chunks_mut(side_out * rows * w * co)
                    .enumerate()
                    .map(move |(i, part)| (img, i * rows, part))
            })
            .for_each(|(img, ty0, part)| {
                let here = rows.min(th - ty0);
                let tiles = here * tw;
                let mine = rayon::current_thread_index().unwrap_or(0) % pieces.len();
                let mut guard = pieces[mine].lock().unwrap_or_else(|e| e.into_inner());
                let Buffers { v, v_bf16, m } = &mut *guard;
                let v = sized(E::held(v, v_bf16), positions * tiles * ci);
                let m = sized(m, positions * tiles * co);
                vectorized(
                    #[inline(always)]
                    || {
                        let mut rs = RowScratch::new(ci, tile);
                        let tile_rows = tile_rows(v, positions, tw * ci);
                        for (r, mut dst) in tile_rows.into_iter().enumerate() {
                            if fused.relu_in {
                                input_row::<E, true>(x, shape, ci, img, ty0 + r, &mut dst, &mut rs);
                            } else {
                                input_row::<E, false>(
                                    x,
                                    shape,
                                    ci,
                                    img,
                                    ty0 + r,
                                    &mut dst,
                                    &mut rs,
                                );
                            }
                        }
                        let mut t = vec![0f32; tile.out_scratch() * co];
                        for ((u, vp), mp) in self
                            .u
                            .iter()
                            .zip(v.chunks_exact(tiles * ci))
                            .zip(m.chunks_exact_mut(tiles * co))
                        {
                            multiply(u, vp, tiles, mp);
                        }
                        for (r, out_rows) in part.chunks_mut(side_out * w * co).enumerate() {
                            if fused.relu_out {
                                output_row::<true>(
                                    tile,
                                    m,
                                    tiles,
                                    r * tw,
                                    w,
                                    fused.bias,
                                    out_rows,
                                    &mut t,
                                );
                            } else {
                                output_row::<false>(
                                    tile,
                                    m,
                                    tiles,
                                    r * tw,
                                    w,
                                    fused.bias,
                                    out_rows,
                                    &mut t,
                                );
                            }
                        }
                    },
                )
            });
    }
}

/// The buffers a convolution transforms into, kept from call to call (a
/// fresh buffer is a fresh mapping: its page faults and zeroing cost
/// more than a small layer's products).
#[derive(Default)]
pub struct Scratch {
    /// A whole batch's.
    whole: Buffers,
    /// A piece's, one per thread.
    pieces: Vec<Mutex<Buffers>>,
}

impl Scratch {
    /// One piece's buffers for each of `threads` threads.
    fn pieces(&mut self, threads: usize) -> &[Mutex<Buffers>] {
        self.pieces.resize_with(threads.max(1), Mutex::default);
        &self.pieces
    }
}

/// A convolution's transformed input and products.
#[derive(Default)]
struct Buffers {
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

/// `m_p = v_p · u_pᵀ` for each position `p` of the window (`dims`: tiles,
/// input and output channels), by `multiply`, as one parallel region:
/// runs of tiles of each, every run a product on one thread (one region
/// per product made 16 waits for the slowest task per convolution).
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
trait Held: Copy + Send + Sync + Default {
    /// `src` into `dst` (as long), rounded to this element.
    fn put(src: &[f32], dst: &mut [Self]);

    /// Of a piece's two buffers for the transformed input, the one of
    /// this element.
    fn held<'a>(f32s: &'a mut Vec<f32>, bf16s: &'a mut Vec<Bf16>) -> &'a mut Vec<Self>;
}

impl Held for f32 {
    fn put(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }

    fn held<'a>(f32s: &'a mut Vec<f32>, _: &'a mut Vec<Bf16>) -> &'a mut Vec<f32> {
        f32s
    }
}

impl Held for Bf16 {
    fn put(src: &[f32], dst: &mut [Bf16]) {
        warpt_gemm::simd::bf16_from_f32(src, dst);
    }

    fn held<'a>(_: &'a mut Vec<f32>, bf16s: &'a mut Vec<Bf16>) -> &'a mut Vec<Bf16> {
        bf16s
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

#[cfg(test)]
mod tests;
