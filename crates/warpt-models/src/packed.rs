//! f32 weight matrices packed once, at load, for warpt's GEMM engine, and
//! the product every linear layer computes: `x · wᵀ + bias`.
//!
//! A matrix `w` (`n × k`, row-major, `n` output features) is cut into
//! bands of output features, each the engine's left operand packed once
//! ([`PackedA`]: every slice of the input features holding the band's
//! features in micro-panels as the engine's register tile reads them). A
//! call's activations `x` (`rows × k`) are the right operand `xᵀ`, and
//! each band's result `(x · w_bandᵀ)ᵀ`, stored column-major, is its
//! columns of the `rows × n` row-major result. One layout serves both
//! products an LLM runs:
//!
//! - a decode step (a few activation rows) is bound by reading the
//!   weights: the engine streams each slice's panels once, its tile only
//!   as wide as the rows there are;
//! - a prefill or an encoder batch (hundreds of rows) is bound by
//!   arithmetic: the weights are already in the kernel's panels, so only
//!   the activations are packed per call.
//!
//! The bands run as rayon tasks, each an engine product on one thread:
//! the model's own parallel work (candle's, attention's) runs on the same
//! rayon pool, so the process never has more threads wanting the CPUs
//! than there are CPUs (the engine's own team, spinning between products,
//! made three on two: docs/gemm.md).

use rayon::prelude::*;
use warpt_gemm::{MatMut, MatRef, PackedA, gemm_packed};

/// The engine every [`PackedMatrix`] multiplies on, as results name it
/// (`details.engine`).
pub const ENGINE: &str = "warpt-gemm";

/// The instruction set the engine's f32 tiles use on this CPU, as results
/// name it (`details.isa`: `avx512f`, `avx2+fma`, `neon`, `portable`).
pub fn isa() -> &'static str {
    warpt_gemm::Kernel::<f32>::best().isa.name()
}

/// Output features per band at least: bands thinner than this cost more
/// in per-product overhead than they gain in balance.
const BAND_MIN: usize = 64;

/// Activation rows per task at least for a product to split its rows
/// rather than its bands: enough for the engine's tiles to be full.
const ROWS_PER_TASK: usize = 16;

/// A band of output features, packed.
struct Band {
    /// Its first output feature.
    first: usize,
    /// Its `len × k` weights.
    w: PackedA<f32>,
}

/// A weight matrix packed for the engine (see the module doc).
pub struct PackedMatrix {
    /// Output features.
    n: usize,
    /// Input features.
    k: usize,
    /// The bands, in order of their features.
    bands: Vec<Band>,
    /// The bias added to every row of a product.
    bias: Option<Vec<f32>>,
}

impl PackedMatrix {
    /// `w` (`n × k`, row-major: one row per output feature, as PyTorch,
    /// safetensors and GGUF store a linear layer), packed.
    ///
    /// # Panics
    /// If `w.len() != n * k`.
    pub fn from_rows(w: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(w.len(), n * k, "a {n} x {k} matrix");
        Self::pack(n, k, |first, len| {
            let view = MatRef::row_major(&w[first * k..][..len * k], len, k)
                .expect("len rows of k (asserted above)");
            PackedA::new(view)
        })
    }

    /// The `n × k` matrix whose row `r` `row(r, buf)` writes into `buf`
    /// (`k` values), packed: for weights stored some other way, such as
    /// quantized blocks, unpacked a band at a time.
    pub fn from_row_fn(n: usize, k: usize, row: impl Fn(usize, &mut [f32]) + Sync) -> Self {
        Self::pack(n, k, |first, len| {
            let mut buf = vec![0f32; len * k];
            for (r, dst) in buf.chunks_exact_mut(k.max(1)).enumerate() {
                row(first + r, dst);
            }
            let view = MatRef::row_major(&buf, len, k).expect("a buffer of len rows of k");
            PackedA::new(view)
        })
    }

    /// The matrix whose transpose `wt` (`k × n`, row-major: one row per
    /// input feature) is, packed: what `x · wt` needs, as attention's
    /// product of probabilities with values does.
    ///
    /// # Panics
    /// If `wt.len() != n * k`.
    pub fn from_cols(wt: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(wt.len(), n * k, "a {k} x {n} matrix");
        Self::pack(n, k, |first, len| {
            // Row r of the band is column first + r of wt: stride 1 down,
            // n across.
            let view = MatRef::new(&wt[first.min(wt.len())..], len, k, 1, n)
                .expect("wt holds k rows of n (asserted above)");
            PackedA::new(view)
        })
    }

    /// The bands of an `n × k` matrix, each packed by `band(first, len)`,
    /// across cores.
    fn pack(n: usize, k: usize, band: impl Fn(usize, usize) -> PackedA<f32> + Sync) -> Self {
        let count = (2 * rayon::current_num_threads()).clamp(1, n.div_ceil(BAND_MIN).max(1));
        let cuts: Vec<(usize, usize)> = (0..count)
            .map(|b| (b * n / count, (b + 1) * n / count - b * n / count))
            .collect();
        let bands = cuts
            .into_par_iter()
            .map(|(first, len)| Band {
                first,
                w: band(first, len),
            })
            .collect();
        PackedMatrix {
            n,
            k,
            bands,
            bias: None,
        }
    }

    /// The same matrix adding `bias` (one value per output feature) to
    /// every row of its products, as a linear layer with a bias does.
    ///
    /// # Panics
    /// If `bias.len()` is not the matrix's output features.
    pub fn with_bias(mut self, bias: &[f32]) -> Self {
        assert_eq!(bias.len(), self.n, "one bias per output feature");
        self.bias = Some(bias.to_vec());
        self
    }

    /// Output features.
    pub fn rows(&self) -> usize {
        self.n
    }

    /// `x` (`rows × k`, row-major) times the matrix transposed: `rows × n`,
    /// row-major, on every core.
    ///
    /// # Panics
    /// If `x.len() != rows * k`.
    pub fn matmul_t(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.product(x, rows, true)
    }

    /// [`Self::matmul_t`] on the calling thread alone: for small products
    /// that callers already run many of in parallel (attention's, one per
    /// sequence and head).
    pub fn matmul_t_serial(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.product(x, rows, false)
    }

    /// `out` (`rows × n`, row-major) plus `x` (`rows × k`, row-major)
    /// times the matrix transposed (and its bias, when it has one), on
    /// every core: for a layer whose output starts from something else (a
    /// shortcut, a folded batch norm's shift).
    ///
    /// # Panics
    /// If `x.len() != rows * k` or `out.len() != rows * n`.
    pub fn matmul_t_add(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        assert_eq!(out.len(), rows * self.n, "{rows} rows of {}", self.n);
        if let Some(bias) = &self.bias {
            for row in out.chunks_exact_mut(self.n) {
                row.iter_mut().zip(bias).for_each(|(o, b)| *o += b);
            }
        }
        self.product_into(x, rows, out, 1.0, true);
    }

    /// The product into a new matrix: on the calling thread, or as rayon
    /// tasks when `parallel`.
    fn product(&self, x: &[f32], rows: usize, parallel: bool) -> Vec<f32> {
        // The bias is C's start (beta 1); without one C is not read.
        let (mut out, beta) = match &self.bias {
            Some(bias) => (bias.repeat(rows), 1.0),
            None => (vec![0f32; rows * self.n], 0.0),
        };
        self.product_into(x, rows, &mut out, beta, parallel);
        out
    }

    /// `out = x · wᵀ + beta · out`: on the calling thread, or as rayon
    /// tasks when `parallel` (bands of features for a few rows, chunks of
    /// rows for many).
    fn product_into(&self, x: &[f32], rows: usize, out: &mut [f32], beta: f32, parallel: bool) {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), rows * k, "{rows} rows of {k}");
        if rows == 0 || n == 0 || k == 0 {
            if beta == 0.0 {
                out.fill(0.0);
            }
            return;
        }
        let tasks = if parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        if tasks == 1 {
            self.rows_into(out, x, beta);
        } else if rows < ROWS_PER_TASK * tasks {
            // A decode step: the weights' bands in parallel (each reads
            // its share of them once), each into a buffer of its own.
            let parts: Vec<Vec<f32>> = self
                .bands
                .par_iter()
                .map(|band| {
                    let len = band.w.rows();
                    let mut c: Vec<f32> = out
                        .chunks_exact(n)
                        .flat_map(|row| &row[band.first..][..len])
                        .copied()
                        .collect();
                    self.band_into(band, &mut c, len, x, rows, beta);
                    c
                })
                .collect();
            for (band, part) in self.bands.iter().zip(&parts) {
                let len = band.w.rows();
                for (dst, src) in out.chunks_exact_mut(n).zip(part.chunks_exact(len)) {
                    dst[band.first..][..len].copy_from_slice(src);
                }
            }
        } else {
            // A prefill or a batch: chunks of rows in parallel, each
            // written in place by every band in turn.
            let chunk = rows.div_ceil(2 * tasks);
            out.par_chunks_mut(chunk * n)
                .zip(x.par_chunks(chunk * k))
                .for_each(|(o, xs)| self.rows_into(o, xs, beta));
        }
    }

    /// `out` (`x`'s rows of the result, row-major, holding C's start)
    /// gets the product of `x`'s rows, band by band, on this thread.
    fn rows_into(&self, out: &mut [f32], x: &[f32], beta: f32) {
        let rows = out.len() / self.n;
        for band in &self.bands {
            self.band_into(band, &mut out[band.first..], self.n, x, rows, beta);
        }
    }

    /// `band`'s columns of the product of `x`'s `rows` rows into `c` (row
    /// `r` at `c[r * ldc..]`, holding C's start times `beta`), on this
    /// thread.
    fn band_into(&self, band: &Band, c: &mut [f32], ldc: usize, x: &[f32], rows: usize, beta: f32) {
        let (len, k) = (band.w.rows(), self.k);
        // Cᵀ (len × rows, column-major) is the band's columns of the
        // result, row-major; B = xᵀ (k × rows) reads x's rows as its
        // columns.
        let view = MatMut::new(c, len, rows, 1, ldc).expect("c holds rows of ldc from the band");
        let b = MatRef::new(x, k, rows, 1, k).expect("x holds rows x k (asserted)");
        gemm_packed(view, 1.0, &band.w, b, beta, 1)
            .expect("C (len x rows) = W (len x k) · xᵀ (k x rows) chains");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn equals_the_plain_product() {
        // Sizes off every tile: rows 1, 7, 13, 40 and 400 (tiles of every
        // width), n = 75 (a padded last panel), k = 37 and 900 (one and
        // several slices of the depth), with and without a bias, on one
        // thread and all. Small integers: every order of summation gives
        // the same float.
        let n = 75;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for k in [37, 900] {
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
            let bias: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
            let plain = PackedMatrix::from_rows(&w, n, k);
            let biased = PackedMatrix::from_rows(&w, n, k).with_bias(&bias);
            for (packed, rows) in [&plain, &biased]
                .into_iter()
                .flat_map(|p| [1, 7, 13, 40, 400].map(|r| (p, r)))
            {
                let b = |c: usize| packed.bias.as_ref().map_or(0.0, |_| bias[c]);
                let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
                // In a pool of three threads whatever the host: rows 1-40
                // take the bands in parallel, 400 chunks of rows.
                let parallel = pool.install(|| packed.matmul_t(&x, rows));
                for got in [parallel, packed.matmul_t_serial(&x, rows)] {
                    for r in 0..rows {
                        for c in 0..n {
                            let want: f32 =
                                b(c) + (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum::<f32>();
                            assert_eq!(
                                got[r * n + c],
                                want,
                                "k {k}, {rows} rows, bias {}: row {r} column {c}",
                                packed.bias.is_some()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_transpose_packs_to_the_same_matrix() {
        let (n, k, rows) = (45, 70, 9);
        let w: Vec<f32> = (0..n * k).map(|i| (i % 17) as f32 - 8.0).collect();
        let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
        let x: Vec<f32> = (0..rows * k).map(|i| (i % 5) as f32).collect();
        let (a, b) = (
            PackedMatrix::from_rows(&w, n, k),
            PackedMatrix::from_cols(&wt, n, k),
        );
        assert_eq!(a.matmul_t(&x, rows), b.matmul_t(&x, rows));
        assert_eq!(a.rows(), n);
    }

    #[test]
    fn an_empty_batch_gives_an_empty_result() {
        let m = PackedMatrix::from_rows(&[1.0; 6], 2, 3).with_bias(&[1.0, 2.0]);
        assert!(m.matmul_t(&[], 0).is_empty());
    }

    #[test]
    fn no_input_features_give_the_bias() {
        // 40 rows would be split into chunks of rows: of zero inputs each.
        let m = PackedMatrix::from_rows(&[], 2, 0).with_bias(&[1.0, 2.0]);
        assert_eq!(m.matmul_t(&[], 40), [1.0, 2.0].repeat(40));
    }

    #[test]
    fn matmul_t_add_adds_to_what_is_there() {
        // A residual's start plus the product and the bias, for a few rows
        // (bands) and many (chunks of rows), in a pool of three threads.
        let (n, k) = (70, 40);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
        let bias: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
        for with_bias in [false, true] {
            let mut m = PackedMatrix::from_rows(&w, n, k);
            if with_bias {
                m = m.with_bias(&bias);
            }
            for rows in [3, 300] {
                let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 9) as f32 - 4.0).collect();
                let start: Vec<f32> = (0..rows * n).map(|i| (i % 11) as f32).collect();
                let mut out = start.clone();
                pool.install(|| m.matmul_t_add(&x, rows, &mut out));
                for r in 0..rows {
                    for c in 0..n {
                        let b = if with_bias { bias[c] } else { 0.0 };
                        let dot: f32 = (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum();
                        assert_eq!(
                            out[r * n + c],
                            start[r * n + c] + b + dot,
                            "row {r} col {c}"
                        );
                    }
                }
            }
        }
    }
}
