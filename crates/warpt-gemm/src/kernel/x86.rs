//! The x86-64 register tiles (`tile`'s, and bf16's and int8's own).
//! AVX-512 (32 registers): 24 accumulators,
//! 4 x 6 for fp64 (on Zen 4 a little ahead of 3 x 8: one broadcast per
//! four multiply-adds, not three) and 3 x 8 for fp32; AVX2 (16
//! registers): 2 x 6 = 12. The loads are unaligned
//! (the packed panels are contiguous; alignment costs nothing here).

use std::arch::x86_64::*;

use super::Store;

tile_kernel!(
    f32_avx512,
    f32_avx512_direct,
    "avx512f",
    f32,
    __m512,
    16,
    3,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_storeu_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    [1:3 2:2 3:1 4:1 5:1 6:1 7:1 8:1]
);
tile_kernel!(
    f32_avx512_32x12,
    f32_avx512_32x12_direct,
    "avx512f",
    f32,
    __m512,
    16,
    2,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_storeu_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    [1:4 2:2 3:2 4:1 5:1 6:1 7:1 8:1 9:1 10:1 11:1 12:1]
);
tile_kernel!(
    f64_avx2,
    f64_avx2_direct,
    "avx2,fma",
    f64,
    __m256d,
    4,
    2,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_storeu_pd,
    _mm256_add_pd,
    _mm256_sub_pd,
    [1:4 2:2 3:1 4:1 5:1 6:1]
);
tile_kernel!(
    f32_avx2,
    f32_avx2_direct,
    "avx2,fma",
    f32,
    __m256,
    8,
    2,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_storeu_ps,
    _mm256_add_ps,
    _mm256_sub_ps,
    [1:4 2:2 3:1 4:1 5:1 6:1]
);
tile_kernel!(
    f64_avx512,
    f64_avx512_direct,
    "avx512f",
    f64,
    __m512d,
    8,
    4,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_storeu_pd,
    _mm512_add_pd,
    _mm512_sub_pd,
    [1:2 2:1 3:1 4:1 5:1 6:1]
);

/// The bf16 tile (AVX512_BF16): 48 x 8 fp32 accumulators; each step takes
/// a pair of depths, `vdpbf16ps` adding both products of a pair into one
/// fp32 lane (A's micro-panel holds each row's pair side by side, B's
/// each column's, so a 32-bit broadcast of B meets 16 rows of A).
///
/// # Safety
/// As [`super::MicroKernel`] with MR 48, NR 8 and groups of 2, on a CPU
/// with AVX512_BF16.
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn bf16_avx512(
    groups: usize,
    a: *const super::Bf16,
    b: *const super::Bf16,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    store: Store,
) {
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn tile<const W: usize>(
        groups: usize,
        a: *const super::Bf16,
        b: *const super::Bf16,
        out: *mut f32,
        ldo: usize,
        store: Store,
    ) {
        const MV: usize = 3;
        const MR: usize = 16 * MV;
        // SAFETY (every transmute): __m512i and __m512bh are both 64 bytes
        // of plain bits.
        let zero: __m512bh = unsafe { std::mem::transmute(_mm512_setzero_si512()) };
        let mut acc = [[_mm512_setzero_ps(); MV]; W];
        for g in 0..groups {
            // SAFETY: g < groups: the step's MR pairs of A and W of B are
            // inside the panels the caller gave.
            let (ap, bp) = unsafe { (a.add(g * MR * 2), b.add(g * W * 2)) };
            let mut av = [zero; MV];
            for (v, x) in av.iter_mut().enumerate() {
                // SAFETY: 16 pairs (64 bytes) inside A's step.
                *x = unsafe {
                    std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(
                        ap.add(v * 32).cast(),
                    ))
                };
            }
            for (j, col) in acc.iter_mut().enumerate() {
                // SAFETY: column j's pair (4 bytes) inside B's step.
                let pair = unsafe { bp.add(j * 2).cast::<i32>().read_unaligned() };
                let bj: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi32(pair)) };
                for (c, x) in col.iter_mut().zip(av) {
                    *c = _mm512_dpbf16_ps(*c, x, bj);
                }
            }
        }
        store_tile!(
            acc,
            out,
            ldo,
            store,
            16,
            _mm512_loadu_ps,
            _mm512_storeu_ps,
            _mm512_add_ps,
            _mm512_sub_ps
        );
    }
    // SAFETY: as the caller promises, for W = cols columns.
    unsafe { by_width!(cols, tile, (groups, a, b, out, ldo, store), 1 2 3 4 5 6 7 8) }
}

/// `_mm512_loadu_si512` on an `i32` pointer.
#[inline(always)]
unsafe fn load_i32(p: *const i32) -> __m512i {
    // SAFETY: the caller's 64 bytes at p.
    unsafe { _mm512_loadu_si512(p.cast()) }
}

/// `_mm512_storeu_si512` on an `i32` pointer.
#[inline(always)]
unsafe fn store_i32(p: *mut i32, v: __m512i) {
    // SAFETY: the caller's 64 bytes at p.
    unsafe { _mm512_storeu_si512(p.cast(), v) }
}

/// The int8 tile (AVX512_VNNI): 48 x 8 i32 accumulators; each step takes
/// four depths, `vpdpbusd` adding the four products of unsigned A (stored
/// 128 too high, corrected by the driver) and signed B into one i32 lane.
///
/// # Safety
/// As [`super::MicroKernel`] with MR 48, NR 8 and groups of 4, on a CPU
/// with AVX512_VNNI.
#[target_feature(enable = "avx512f,avx512vnni")]
pub(super) unsafe fn i8_avx512vnni(
    groups: usize,
    a: *const i8,
    b: *const i8,
    cols: usize,
    out: *mut i32,
    ldo: usize,
    store: Store,
) {
    #[target_feature(enable = "avx512f,avx512vnni")]
    unsafe fn tile<const W: usize>(
        groups: usize,
        a: *const i8,
        b: *const i8,
        out: *mut i32,
        ldo: usize,
        store: Store,
    ) {
        const MV: usize = 3;
        const MR: usize = 16 * MV;
        let mut acc = [[_mm512_setzero_si512(); MV]; W];
        for g in 0..groups {
            // SAFETY: g < groups: the step's MR fours of A and W of B are
            // inside the panels the caller gave.
            let (ap, bp) = unsafe { (a.add(g * MR * 4), b.add(g * W * 4)) };
            let mut av = [_mm512_setzero_si512(); MV];
            for (v, x) in av.iter_mut().enumerate() {
                // SAFETY: 16 fours (64 bytes) inside A's step.
                *x = unsafe { _mm512_loadu_si512(ap.add(v * 64).cast()) };
            }
            for (j, col) in acc.iter_mut().enumerate() {
                // SAFETY: column j's four (4 bytes) inside B's step.
                let four = unsafe { bp.add(j * 4).cast::<i32>().read_unaligned() };
                let bj = _mm512_set1_epi32(four);
                for (c, x) in col.iter_mut().zip(av) {
                    *c = _mm512_dpbusd_epi32(*c, x, bj);
                }
            }
        }
        store_tile!(
            acc,
            out,
            ldo,
            store,
            16,
            load_i32,
            store_i32,
            _mm512_add_epi32,
            _mm512_sub_epi32
        );
    }
    // SAFETY: as the caller promises, for W = cols columns.
    unsafe { by_width!(cols, tile, (groups, a, b, out, ldo, store), 1 2 3 4 5 6 7 8) }
}
