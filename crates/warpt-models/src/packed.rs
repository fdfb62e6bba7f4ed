//! f32 weight matrices packed once, at load, for warpt's GEMM engine, and
//! the product every linear layer computes: `x · wᵀ + bias`.
//!
//! A matrix `w` (`n × k`, row-major, `n` output features) is the engine's
//! left operand, packed once ([`PackedA`]): each slice of the input
//! features holds the output features in micro-panels as the engine's
//! register tile reads them. A call's activations `x` (`rows × k`) are the
//! right operand `xᵀ`, its result `(x · wᵀ)ᵀ` stored column-major, which
//! is `rows × n` row-major. One layout serves both products an LLM runs:
//!
//! - a decode step (a few activation rows) is bound by reading the
//!   weights: the engine streams each slice's panels once, its tile only
//!   as wide as the rows there are;
//! - a prefill or an encoder batch (hundreds of rows) is bound by
//!   arithmetic: the weights are already in the kernel's panels, so only
//!   the activations are packed per call.
//!
//! General GEMMs (the `gemm` crate under candle) pack the weights again on
//! every call; holding them pre-packed, on the engine's AVX-512 tiles where
//! the CPU has them, is what lets one kernel keep up with PyTorch's MKL at
//! both ends (see docs/pepbench.md).

use warpt_gemm::{MatMut, MatRef, PackedA, gemm_packed};

/// A weight matrix packed for the engine (see the module doc).
pub struct PackedMatrix {
    /// The `n × k` weights.
    w: PackedA<f32>,
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
        Self::from_row_fn(n, k, |r, row| row.copy_from_slice(&w[r * k..][..k]))
    }

    /// The `n × k` matrix whose row `r` `row(r, buf)` writes into `buf`
    /// (`k` values), packed: for weights stored some other way, such as
    /// quantized blocks, unpacked a micro-panel of rows at a time.
    pub fn from_row_fn(n: usize, k: usize, row: impl Fn(usize, &mut [f32]) + Sync) -> Self {
        PackedMatrix {
            w: PackedA::from_row_fn(n, k, row),
            bias: None,
        }
    }

    /// The matrix whose transpose `wt` (`k × n`, row-major: one row per
    /// input feature) is, packed: what `x · wt` needs, as attention's
    /// product of probabilities with values does.
    ///
    /// # Panics
    /// If `wt.len() != n * k`.
    pub fn from_cols(wt: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(wt.len(), n * k, "a {k} x {n} matrix");
        // Row r of the matrix is column r of wt: stride 1 down, n across.
        let view = MatRef::new(wt, n, k, 1, n).expect("wt holds k rows of n");
        PackedMatrix {
            w: PackedA::new(view),
            bias: None,
        }
    }

    /// The same matrix adding `bias` (one value per output feature) to
    /// every row of its products, as a linear layer with a bias does.
    ///
    /// # Panics
    /// If `bias.len()` is not the matrix's output features.
    pub fn with_bias(mut self, bias: &[f32]) -> Self {
        assert_eq!(bias.len(), self.w.rows(), "one bias per output feature");
        self.bias = Some(bias.to_vec());
        self
    }

    /// Output features.
    pub fn rows(&self) -> usize {
        self.w.rows()
    }

    /// `x` (`rows × k`, row-major) times the matrix transposed: `rows × n`,
    /// row-major, on every core.
    ///
    /// # Panics
    /// If `x.len() != rows * k`.
    pub fn matmul_t(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.product(x, rows, 0)
    }

    /// [`Self::matmul_t`] on the calling thread alone: for small products
    /// that callers already run many of in parallel (attention's, one per
    /// sequence and head).
    pub fn matmul_t_serial(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.product(x, rows, 1)
    }

    /// The product on `threads` threads (0: all).
    fn product(&self, x: &[f32], rows: usize, threads: usize) -> Vec<f32> {
        let (n, k) = (self.w.rows(), self.w.cols());
        assert_eq!(x.len(), rows * k, "{rows} rows of {k}");
        // The bias is C's start (beta 1); without one C is not read.
        let (mut out, beta) = match &self.bias {
            Some(bias) => (bias.repeat(rows), 1.0),
            None => (vec![0f32; rows * n], 0.0),
        };
        if rows == 0 || n == 0 {
            return out;
        }
        // Cᵀ (n × rows, column-major) is the result row-major; B = xᵀ
        // (k × rows) reads x's rows as its columns.
        let c = MatMut::new(&mut out, n, rows, 1, n).expect("out holds rows x n");
        let b = MatRef::new(x, k, rows, 1, k).expect("x holds rows x k (asserted)");
        gemm_packed(c, 1.0, &self.w, b, beta, threads)
            .expect("C (n x rows) = W (n x k) · xᵀ (k x rows) chains");
        out
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
                for got in [packed.matmul_t(&x, rows), packed.matmul_t_serial(&x, rows)] {
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
}
