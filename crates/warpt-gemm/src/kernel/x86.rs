//! The x86-64 register tiles. Each keeps an `MR x NR` tile of C in
//! `MR / lanes x NR` vector registers; per step of `k` it loads the
//! `MR / lanes` vectors of A's micro-panel once and, for each of the `NR`
//! columns, broadcasts one element of B and fuses a multiply-add into each
//! accumulator of that column. AVX-512 (32 registers): 24 accumulators,
//! 4 x 6 for fp64 (on Zen 4 a little ahead of 3 x 8: one broadcast per
//! four multiply-adds, not three) and 3 x 8 for fp32; AVX2 (16
//! registers): 2 x 6 = 12. The loads are unaligned
//! (the packed panels are contiguous; alignment costs nothing here).

use std::arch::x86_64::*;

/// One tile kernel: `$name`, target feature `$feat`, vector type `$v`
/// of `$lanes` elements of `$t`, `$mv` vectors of A, `$nr` columns.
macro_rules! tile_kernel {
    ($name:ident, $feat:literal, $t:ty, $v:ty, $lanes:literal, $mv:literal, $nr:literal,
     $zero:ident, $load:ident, $set1:ident, $fma:ident, $store:ident) => {
        /// # Safety
        /// As [`super::MicroKernel`], with this kernel's MR and NR, on a CPU
        /// with the target feature.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn $name(k: usize, a: *const $t, b: *const $t, out: *mut $t) {
            const MR: usize = $lanes * $mv;
            let mut acc: [[$v; $mv]; $nr] = [[$zero(); $mv]; $nr];
            for p in 0..k {
                // SAFETY: p < k, so the MR elements at p * MR and the NR at
                // p * NR are inside the panels the caller gave.
                let (ap, bp) = unsafe { (a.add(p * MR), b.add(p * $nr)) };
                let mut av: [$v; $mv] = [$zero(); $mv];
                for (v, x) in av.iter_mut().enumerate() {
                    // SAFETY: inside A's step (v * lanes + lanes <= MR).
                    *x = unsafe { $load(ap.add(v * $lanes)) };
                }
                for (j, col) in acc.iter_mut().enumerate() {
                    // SAFETY: j < NR, inside B's step.
                    let bj = $set1(unsafe { *bp.add(j) });
                    for (c, x) in col.iter_mut().zip(av) {
                        *c = $fma(x, bj, *c);
                    }
                }
            }
            for (j, col) in acc.iter().enumerate() {
                for (v, c) in col.iter().enumerate() {
                    // SAFETY: out has room for MR x NR, column j at j * MR.
                    unsafe { $store(out.add(j * MR + v * $lanes), *c) };
                }
            }
        }
    };
}

tile_kernel!(
    f32_avx512,
    "avx512f",
    f32,
    __m512,
    16,
    3,
    8,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_storeu_ps
);
tile_kernel!(
    f64_avx2,
    "avx2,fma",
    f64,
    __m256d,
    4,
    2,
    6,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_storeu_pd
);
tile_kernel!(
    f32_avx2,
    "avx2,fma",
    f32,
    __m256,
    8,
    2,
    6,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_storeu_ps
);
tile_kernel!(
    f64_avx512,
    "avx512f",
    f64,
    __m512d,
    8,
    4,
    6,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_storeu_pd
);
