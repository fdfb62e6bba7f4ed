//! One call's product, `out = x · wᵀ + start`, split into rayon tasks:
//! bands of output features for a few activation rows (a decode step),
//! chunks of rows for many (a prefill, an encoder batch).

use rayon::prelude::*;
use warpt_gemm::{Element, Epilogue, MatMut, MatRef, PackedA, gemm_packed_rows_then};

use super::Banded;

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
    /// The bias in every row, added to each tile of the product by the
    /// thread that computed it, as the engine's epilogue (written into C
    /// before the product it cost a pass over the whole result: most of
    /// the 8% a bf16 encoder spent in memmove, then still a pass a task).
    Bias(&'a [f32]),
    /// What `out` holds plus the bias (`matmul_t_add` of a matrix with a
    /// bias: a residual stream).
    OutBias(&'a [f32]),
}

impl<'a> Start<'a> {
    /// The engine's beta: C read (1) or not (0).
    fn beta(self) -> f32 {
        match self {
            Start::Zero | Start::Bias(_) => 0.0,
            Start::Out | Start::OutBias(_) => 1.0,
        }
    }

    /// The bias the epilogue adds, if any.
    fn bias(self) -> Option<&'a [f32]> {
        match self {
            Start::Zero | Start::Out => None,
            Start::Bias(b) | Start::OutBias(b) => Some(b),
        }
    }
}

/// What each element of the result gets after the product and its bias,
/// in the engine's epilogue: a matrix of the result's shape added (a
/// residual block's shortcut) and a ReLU; and how the result is written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Then<'a> {
    /// `rows × n`, row-major, as the result.
    pub add: Option<&'a [f32]>,
    /// Negative values set to zero, last.
    pub relu: bool,
    /// The result written with streaming stores, past the caches, where
    /// its layout allows ([`Epilogue::stream`]: the result's start on a
    /// cache line, `n` a multiple of 16): for a result larger than the
    /// caches that is read only later. The same values either way.
    pub stream: bool,
}

/// One call's product: `out = x · wᵀ + start` for `x` of `rows × k`.
pub(super) struct Product<'a> {
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) rows: usize,
    pub(super) start: Start<'a>,
    pub(super) then: Then<'a>,
    /// As rayon tasks (bands of features for a few rows, chunks of rows
    /// for many), or on the calling thread.
    pub(super) parallel: bool,
}

impl Product<'_> {
    /// The product on `m`, `x` already in its element.
    pub(super) fn run<T: Element<Acc = f32>>(&self, m: &Banded<T>, x: &[T], out: &mut [f32]) {
        let (n, k, rows) = (self.n, self.k, self.rows);
        if let Some(add) = self.then.add {
            assert_eq!(add.len(), rows * n, "the added matrix: {rows} rows of {n}");
        }
        if rows == 0 || n == 0 || k == 0 {
            self.without_product(out);
            return;
        }
        let tasks = if self.parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        if tasks == 1 {
            self.rows_into(&m.w, 0..n, out, n, x, rows, self.then.add.map(|a| (a, n)));
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
                    let add = self.then.add.map(|a| (&a[band.start..], n));
                    self.rows_into(&m.w, band.clone(), &mut c, band.len(), x, rows, add);
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
                .enumerate()
                .for_each(|(i, (o, xs))| {
                    let add = self.then.add.map(|a| (&a[i * chunk * n..][..o.len()], n));
                    self.rows_into(&m.w, 0..n, o, n, xs, o.len() / n, add)
                });
        }
    }

    /// The result of a product with nothing to multiply (no depth): its
    /// start, the added matrix and the ReLU.
    fn without_product(&self, out: &mut [f32]) {
        let n = self.n.max(1);
        for (r, row) in out.chunks_exact_mut(n).enumerate() {
            match self.start {
                Start::Zero => row.fill(0.0),
                Start::Out => {}
                Start::Bias(b) => row.copy_from_slice(b),
                Start::OutBias(b) => row.iter_mut().zip(b).for_each(|(o, b)| *o += b),
            }
            if let Some(add) = self.then.add {
                row.iter_mut().zip(&add[r * n..]).for_each(|(o, a)| *o += a);
            }
            if self.then.relu {
                row.iter_mut().for_each(|o| *o = o.max(0.0));
            }
        }
    }

    /// Output features `features` (rows of `w`) of the product of `x`'s
    /// `rows` rows into `c` (row `r` at `c[r * ldc..]`, holding C's start
    /// when it is read), on this thread; `add`: the added matrix's values
    /// from this call's first, and its rows' length.
    #[allow(clippy::too_many_arguments)]
    fn rows_into<T: Element<Acc = f32>>(
        &self,
        w: &PackedA<T>,
        features: std::ops::Range<usize>,
        c: &mut [f32],
        ldc: usize,
        x: &[T],
        rows: usize,
        add: Option<(&[f32], usize)>,
    ) {
        let (len, k) = (features.len(), self.k);
        // Cᵀ (len × rows, column-major) is the features' columns of the
        // result, row-major; B = xᵀ (k × rows) reads x's rows as its
        // columns.
        let view = MatMut::new(c, len, rows, 1, ldc).expect("c holds rows of ldc from the band");
        let b = MatRef::new(x, k, rows, 1, k).expect("x holds rows x k (asserted)");
        let epilogue = Epilogue {
            row_bias: self.start.bias().map(|bias| &bias[features.clone()]),
            add: add.map(|(a, ld)| {
                MatRef::new(a, len, rows, 1, ld).expect("the added matrix is the result's shape")
            }),
            relu: self.then.relu,
            stream: self.then.stream,
        };
        gemm_packed_rows_then(view, 1.0, w, features, b, self.start.beta(), epilogue, 1)
            .expect("C (len x rows) = W (len x k) · xᵀ (k x rows) chains, bands start on panels");
    }
}
