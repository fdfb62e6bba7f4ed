//! One call's product, `out = x · wᵀ + start`, split into rayon tasks:
//! bands of output features for a few activation rows (a decode step),
//! chunks of rows for many (a prefill, an encoder batch).

use rayon::prelude::*;
use warpt_gemm::{Element, MatMut, MatRef, PackedA, gemm_packed_rows};

use super::Banded;
use crate::fastmath;

/// Activation rows per task at least for a product to split its rows
/// rather than its bands: enough for the engine's tiles to be full.
const ROWS_PER_TASK: usize = 16;

/// What C holds before the product is added to it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Start<'a> {
    /// Nothing: C is overwritten, never read.
    Zero,
    /// What `out` holds (a shortcut, a folded batch norm's shift).
    Out,
    /// The bias in every row, written by the task that computes the row,
    /// just before its product reads it (a pass over the whole result on
    /// one thread beforehand was most of the 8% a bf16 encoder spent
    /// in memmove).
    Bias(&'a [f32]),
    /// What `out` holds plus the bias, added by each task to its own rows
    /// (`matmul_t_add` of a matrix with a bias: a residual stream).
    OutBias(&'a [f32]),
}

impl Start<'_> {
    /// The engine's beta: C read (1) or not (0).
    fn beta(self) -> f32 {
        match self {
            Start::Zero => 0.0,
            Start::Out | Start::Bias(_) | Start::OutBias(_) => 1.0,
        }
    }

    /// Rows of `c` (`ldc` apart) made ready for a product of the
    /// `features` columns: the bias's share written, else untouched.
    fn prepare(self, c: &mut [f32], ldc: usize, features: std::ops::Range<usize>) {
        match self {
            Start::Zero | Start::Out => {}
            Start::Bias(bias) => {
                for row in c.chunks_mut(ldc) {
                    row[..features.len()].copy_from_slice(&bias[features.clone()]);
                }
            }
            Start::OutBias(bias) => {
                for row in c.chunks_mut(ldc) {
                    fastmath::axpy(1.0, &bias[features.clone()], &mut row[..features.len()]);
                }
            }
        }
    }
}

/// One call's product: `out = x · wᵀ + start` for `x` of `rows × k`.
pub(super) struct Product<'a> {
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) rows: usize,
    pub(super) start: Start<'a>,
    /// As rayon tasks (bands of features for a few rows, chunks of rows
    /// for many), or on the calling thread.
    pub(super) parallel: bool,
}

impl Product<'_> {
    /// The product on `m`, `x` already in its element.
    pub(super) fn run<T: Element<Acc = f32>>(&self, m: &Banded<T>, x: &[T], out: &mut [f32]) {
        let (n, k, rows) = (self.n, self.k, self.rows);
        if rows == 0 || n == 0 || k == 0 {
            match self.start {
                Start::Zero => out.fill(0.0),
                Start::Out => {}
                Start::Bias(_) | Start::OutBias(_) => self.start.prepare(out, n, 0..n),
            }
            return;
        }
        let tasks = if self.parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        if tasks == 1 {
            self.start.prepare(out, n, 0..n);
            self.rows_into(&m.w, 0..n, out, n, x, rows);
        } else if rows < ROWS_PER_TASK * tasks {
            // A decode step: the weights' bands in parallel (each reads
            // its share of them once), each into a buffer of its own.
            let parts: Vec<Vec<f32>> = m
                .bands
                .par_iter()
                .map(|band| {
                    // C's start, where the product reads it.
                    let mut c: Vec<f32> = match self.start {
                        Start::Out | Start::OutBias(_) => out
                            .chunks_exact(n)
                            .flat_map(|row| &row[band.clone()])
                            .copied()
                            .collect(),
                        Start::Zero | Start::Bias(_) => vec![0.0; band.len() * rows],
                    };
                    self.start.prepare(&mut c, band.len(), band.clone());
                    self.rows_into(&m.w, band.clone(), &mut c, band.len(), x, rows);
                    c
                })
                .collect();
            for (band, part) in m.bands.iter().zip(&parts) {
                for (dst, src) in out.chunks_exact_mut(n).zip(part.chunks_exact(band.len())) {
                    dst[band.clone()].copy_from_slice(src);
                }
            }
        } else {
            // A prefill or a batch: chunks of rows in parallel, each one
            // product with the whole matrix (its activations packed once).
            let chunk = rows.div_ceil(2 * tasks);
            out.par_chunks_mut(chunk * n)
                .zip(x.par_chunks(chunk * k))
                .for_each(|(o, xs)| {
                    self.start.prepare(o, n, 0..n);
                    self.rows_into(&m.w, 0..n, o, n, xs, o.len() / n)
                });
        }
    }

    /// Output features `features` (rows of `w`) of the product of `x`'s
    /// `rows` rows into `c` (row `r` at `c[r * ldc..]`, holding C's start
    /// when it is read), on this thread.
    fn rows_into<T: Element<Acc = f32>>(
        &self,
        w: &PackedA<T>,
        features: std::ops::Range<usize>,
        c: &mut [f32],
        ldc: usize,
        x: &[T],
        rows: usize,
    ) {
        let (len, k) = (features.len(), self.k);
        // Cᵀ (len × rows, column-major) is the features' columns of the
        // result, row-major; B = xᵀ (k × rows) reads x's rows as its
        // columns.
        let view = MatMut::new(c, len, rows, 1, ldc).expect("c holds rows of ldc from the band");
        let b = MatRef::new(x, k, rows, 1, k).expect("x holds rows x k (asserted)");
        gemm_packed_rows(view, 1.0, w, features, b, self.start.beta(), 1)
            .expect("C (len x rows) = W (len x k) · xᵀ (k x rows) chains, bands start on panels");
    }
}
