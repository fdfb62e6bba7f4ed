//! The f32 product of a few activation rows with a weight matrix, `x ·
//! wᵀ`: what every linear layer does in a decode step of a small batch.
//!
//! General GEMM kernels (the `gemm` crate under candle) pack both operands
//! for large products and reach a third of their speed at eight rows; a
//! decode step is bound by reading the weights, so this kernel streams the
//! weights once, in tiles of a few weight rows by a few activation rows
//! held in registers (the activation rows stay in L1), and splits the
//! weight rows across cores.

use rayon::prelude::*;

/// Most activation rows this kernel is used for; above, a GEMM's packing
/// pays for itself.
pub const MAX_ROWS: usize = 16;

/// Weight rows per parallel task.
const CHUNK: usize = 64;

/// `x` (`rows × k`, row-major) times `w` (`n × k`, row-major) transposed:
/// `rows × n`, row-major.
pub fn matmul_t(x: &[f32], rows: usize, w: &[f32], n: usize, k: usize) -> Vec<f32> {
    debug_assert!(x.len() == rows * k && w.len() == n * k);
    // Column-major result first (each task owns whole weight rows), then
    // transposed: rows × n is small.
    let mut cols = vec![0f32; n * rows];
    cols.par_chunks_mut(CHUNK * rows)
        .zip(w.par_chunks(CHUNK * k))
        .for_each(|(out, w)| {
            dots(x, rows, w, out);
        });
    let mut out = vec![0f32; rows * n];
    for (c, col) in cols.chunks_exact(rows).enumerate() {
        for (r, v) in col.iter().enumerate() {
            out[r * n + c] = *v;
        }
    }
    out
}

/// `out[c * rows + r] = x[r] · w[c]` for every activation row `r` and
/// every weight row `c` of `w` (a task's share of the weight rows).
fn dots(x: &[f32], rows: usize, w: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { avx2::dots(x, rows, w, out) };
        return;
    }
    let k = x.len() / rows;
    for (c, wrow) in w.chunks_exact(k).enumerate() {
        for (r, xrow) in x.chunks_exact(k).enumerate() {
            out[c * rows + r] = xrow.iter().zip(wrow).map(|(a, b)| a * b).sum();
        }
    }
}

/// The AVX2 + FMA kernel: tiles of up to 3 activation rows by 4 weight
/// rows, twelve 8-lane accumulators in registers, so each loaded vector
/// feeds three or four fused multiply-adds.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Activation rows per tile.
    const R: usize = 3;
    /// Weight rows per tile.
    const C: usize = 4;

    /// See [`super::dots`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots(x: &[f32], rows: usize, w: &[f32], out: &mut [f32]) {
        let k = x.len() / rows;
        let n = w.len() / k;
        let mut c = 0;
        while c < n {
            let cs = (n - c).min(C);
            let mut r = 0;
            while r < rows {
                let rs = (rows - r).min(R);
                // SAFETY (all arms): r + rs <= rows and c + cs <= n, so
                // every row the tile reads lies inside x and w.
                unsafe {
                    match (rs, cs) {
                        (3, 4) => tile::<3, 4>(x, w, k, r, c, rows, out),
                        (2, 4) => tile::<2, 4>(x, w, k, r, c, rows, out),
                        (1, 4) => tile::<1, 4>(x, w, k, r, c, rows, out),
                        (3, _) => tile_cols::<3>(x, w, k, r, c, cs, rows, out),
                        (2, _) => tile_cols::<2>(x, w, k, r, c, cs, rows, out),
                        _ => tile_cols::<1>(x, w, k, r, c, cs, rows, out),
                    }
                }
                r += rs;
            }
            c += cs;
        }
    }

    /// Weight rows one at a time, for the last few of a task.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_cols<const RS: usize>(
        x: &[f32],
        w: &[f32],
        k: usize,
        r: usize,
        c: usize,
        cs: usize,
        rows: usize,
        out: &mut [f32],
    ) {
        for j in c..c + cs {
            // SAFETY: as in `dots`, one weight row at a time.
            unsafe { tile::<RS, 1>(x, w, k, r, j, rows, out) };
        }
    }

    /// The dot products of activation rows `r..r + RS` with weight rows
    /// `c..c + CS`, written to `out[(c + j) * rows + r + i]`.
    ///
    /// # Safety
    /// The rows must exist: `(r + RS) * k <= x.len()`, `(c + CS) * k <=
    /// w.len()`, `(c + CS) * rows <= out.len()`; the CPU must have AVX2
    /// and FMA.
    #[target_feature(enable = "avx2,fma")]
    // Indices over the const-sized tile read as the algebra and unroll
    // fully; iterators over two arrays at once would not.
    #[allow(clippy::needless_range_loop)]
    unsafe fn tile<const RS: usize, const CS: usize>(
        x: &[f32],
        w: &[f32],
        k: usize,
        r: usize,
        c: usize,
        rows: usize,
        out: &mut [f32],
    ) {
        let xp = x.as_ptr();
        let wp = w.as_ptr();
        let mut acc = [[_mm256_setzero_ps(); CS]; RS];
        let main = k - k % 8;
        let mut i = 0;
        while i < main {
            // SAFETY: i + 8 <= k and the rows exist (the caller's contract).
            unsafe {
                let mut xv = [_mm256_setzero_ps(); RS];
                for (a, v) in xv.iter_mut().enumerate() {
                    *v = _mm256_loadu_ps(xp.add((r + a) * k + i));
                }
                for b in 0..CS {
                    let wv = _mm256_loadu_ps(wp.add((c + b) * k + i));
                    for a in 0..RS {
                        acc[a][b] = _mm256_fmadd_ps(xv[a], wv, acc[a][b]);
                    }
                }
            }
            i += 8;
        }
        for a in 0..RS {
            for b in 0..CS {
                let mut sum = hsum(acc[a][b]);
                for t in main..k {
                    sum += x[(r + a) * k + t] * w[(c + b) * k + t];
                }
                out[(c + b) * rows + r + a] = sum;
            }
        }
    }

    /// The sum of a vector's eight lanes.
    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_plain_product() {
        // Sizes off every tile: 1, 5 and 8 rows (tiles of 3, 2 and 1),
        // k = 37 (a tail past the 8-lane vectors), n = 131 (a tail past
        // the 4-row tiles and the 64-row tasks). Small integers: every
        // order of summation gives the same float.
        let (k, n) = (37, 131);
        for rows in [1, 5, 8] {
            let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
            let got = matmul_t(&x, rows, &w, n, k);
            for r in 0..rows {
                for c in 0..n {
                    let want: f32 = (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum();
                    assert_eq!(got[r * n + c], want, "{rows} rows: row {r} column {c}");
                }
            }
        }
    }
}
