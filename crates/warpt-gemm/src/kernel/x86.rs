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
    _mm512_stream_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    _mm512_max_ps,
    [1:3 2:2 3:1 4:1 5:1 6:1 7:1 8:1],
    short: [1 2],
    8:1
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
    _mm512_stream_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    _mm512_max_ps,
    [1:4 2:2 3:2 4:1 5:1 6:1 7:1 8:1 9:1 10:1 11:1 12:1],
    short: [1],
    12:1
);
/// The value at `p` (a pair's B, [`pair_kernel!`]).
///
/// # Safety
/// `p` is readable.
#[inline(always)]
unsafe fn value(p: *const f32) -> f32 {
    // SAFETY: the caller's promise.
    unsafe { *p }
}

// The AVX-512 fp32 tiles two at a time for one column (decode steps):
// 2 x 3 accumulators in 3 sets, 2 x 2 in 4, as their single tiles (one
// set over B in place).
pair_kernel!(
    f32_avx512_pair,
    "avx512f",
    f32,
    f32,
    __m512,
    16,
    3,
    3,
    1,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    value,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    super::f32_avx512
);
pair_kernel!(
    f32_avx512_32x12_pair,
    "avx512f",
    f32,
    f32,
    __m512,
    16,
    2,
    4,
    1,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    value,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    super::f32_avx512_32x12
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
    _mm256_stream_pd,
    _mm256_add_pd,
    _mm256_sub_pd,
    _mm256_max_pd,
    [1:4 2:2 3:1 4:1 5:1 6:1],
    short: [1],
    6:1
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
    _mm256_stream_ps,
    _mm256_add_ps,
    _mm256_sub_ps,
    _mm256_max_ps,
    [1:4 2:2 3:1 4:1 5:1 6:1],
    short: [1],
    6:1
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
    _mm512_stream_pd,
    _mm512_add_pd,
    _mm512_sub_pd,
    _mm512_max_pd,
    [1:2 2:1 3:1 4:1 5:1 6:1],
    short: [1 2 3],
    6:1
);

/// `__m512h` helpers on `half::f16` (the intrinsics' own `f16` scalar is
/// not stable): loads, stores and broadcasts move the bits.
mod ph {
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) fn zero() -> __m512h {
        _mm512_setzero_ph()
    }

    /// # Safety
    /// 32 values at `p`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) unsafe fn load(p: *const half::f16) -> __m512h {
        // SAFETY: the caller's 64 bytes.
        _mm512_castsi512_ph(unsafe { _mm512_loadu_si512(p.cast()) })
    }

    /// # Safety
    /// Room for 32 values at `p`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) unsafe fn store(p: *mut half::f16, v: __m512h) {
        // SAFETY: the caller's 64 bytes.
        unsafe { _mm512_storeu_si512(p.cast(), _mm512_castph_si512(v)) }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) fn set1(x: half::f16) -> __m512h {
        _mm512_castsi512_ph(_mm512_set1_epi16(x.to_bits() as i16))
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) fn fma(a: __m512h, b: __m512h, c: __m512h) -> __m512h {
        _mm512_fmadd_ph(a, b, c)
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) fn add(a: __m512h, b: __m512h) -> __m512h {
        _mm512_add_ph(a, b)
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) fn sub(a: __m512h, b: __m512h) -> __m512h {
        _mm512_sub_ph(a, b)
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub(super) fn max(a: __m512h, b: __m512h) -> __m512h {
        _mm512_max_ph(a, b)
    }
}
use ph::{add as add_ph, fma as fma_ph, load as load_ph, set1 as set1_ph, store as store_ph};
use ph::{max as max_ph, sub as sub_ph, zero as zero_ph};

// 64 x 12: two vectors of 32 fp16 rows by 12 columns.
tile_kernel!(
    f16_avx512fp16,
    f16_avx512fp16_direct,
    "avx512f,avx512bw,avx512fp16",
    half::f16,
    __m512h,
    32,
    2,
    zero_ph,
    load_ph,
    set1_ph,
    fma_ph,
    store_ph,
    store_ph,
    add_ph,
    sub_ph,
    max_ph,
    [1:4 2:2 3:2 4:1 5:1 6:1 7:1 8:1 9:1 10:1 11:1 12:1],
    short: [1],
    12:1
);

/// A tile of dot-product steps (bf16's and int8's): each step takes a
/// group of 4 bytes of depth per row and column (a bf16 pair, an int8
/// four), A's micro-panel holding each row's group side by side and B's
/// each column's, so one 32-bit broadcast of B meets 16 rows of A in a
/// 64-byte load, and `$dot` adds the group's products into one 32-bit
/// lane. `$mv` vectors of A (MR = 16·`$mv`), up to `$nr` columns, and at
/// `$nr` tiles of `$short` vectors of rows (each below `$mv`) for a last
/// panel of rows that fills fewer; `$stream` its streaming store
/// (`store_tile!`).
macro_rules! dot_kernel {
    ($name:ident, $feat:literal, $t:ty, $acc:ty, $av:ty, $mv:literal,
     $czero:ident, $as_a:expr, $dot:ident, $load:ident, $put:ident, $stream:ident, $add:ident,
     $sub:ident,
     [$($w:literal)*], short: [$($short:literal)*], $nr:literal) => {
        /// # Safety
        /// As [`super::MicroKernel`] with this kernel's MR and NR and
        /// groups of 4 bytes, on a CPU with the target feature.
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        pub(super) unsafe fn $name(
            groups: usize,
            a: *const $t,
            b: *const $t,
            rows: usize,
            cols: usize,
            out: *mut $acc,
            ldo: usize,
            store: Store,
        ) {
            // V of the MV vectors of rows computed and stored.
            #[target_feature(enable = $feat)]
            unsafe fn tile<const W: usize, const V: usize>(
                groups: usize,
                a: *const $t,
                b: *const $t,
                out: *mut $acc,
                ldo: usize,
                store: Store,
            ) {
                // Bytes of one step of A's micro-panel and of one column's
                // group of B.
                const STEP: usize = 64 * $mv;
                let (a, b) = (a.cast::<u8>(), b.cast::<u8>());
                let mut acc = [[$czero(); V]; W];
                for g in 0..groups {
                    // SAFETY: g < groups: the step's MR groups of A and W of
                    // B are inside the panels the caller gave.
                    let (ap, bp) = unsafe { (a.add(g * STEP), b.add(g * W * 4)) };
                    let mut av: [$av; V] = [$as_a(_mm512_setzero_si512()); V];
                    for (v, x) in av.iter_mut().enumerate() {
                        // SAFETY: 16 groups (64 bytes) inside A's step.
                        *x = $as_a(unsafe { _mm512_loadu_si512(ap.add(v * 64).cast()) });
                    }
                    for (j, col) in acc.iter_mut().enumerate() {
                        // SAFETY: column j's group (4 bytes) inside B's step.
                        let group = unsafe { bp.add(j * 4).cast::<i32>().read_unaligned() };
                        let bj = $as_a(_mm512_set1_epi32(group));
                        for (c, x) in col.iter_mut().zip(av) {
                            *c = $dot(*c, x, bj);
                        }
                    }
                }
                store_tile!(acc, out, ldo, store, 16, $load, $put, $stream, $add, $sub);
            }
            let vecs = rows.div_ceil(16);
            if cols == $nr && vecs < $mv {
                // SAFETY: as the caller promises, for NR columns; the
                // first `vecs` vectors hold every row asked for.
                unsafe { by_vecs!(vecs, tile, (groups, a, b, out, ldo, store), $nr, $($short)*) }
            } else {
                // SAFETY: as the caller promises, for W = cols columns.
                unsafe { by_width!(cols, tile, (groups, a, b, out, ldo, store), $mv; $($w)*) }
            }
        }
    };
}

/// An `__m512i`'s bits as 32 bf16 (both are 64 bytes of plain bits).
#[inline(always)]
fn as_bh(v: __m512i) -> __m512bh {
    // SAFETY: same size, any bits are a value of either.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}

/// `_mm512_dpbf16_ps` for the dot tile.
#[inline]
#[target_feature(enable = "avx512f,avx512bf16")]
fn dot_bf16(c: __m512, a: __m512bh, b: __m512bh) -> __m512 {
    _mm512_dpbf16_ps(c, a, b)
}

/// `_mm512_dpbusd_epi32` for the dot tile: unsigned A (stored 128 too
/// high, corrected by the driver) times signed B.
#[inline]
#[target_feature(enable = "avx512f,avx512vnni")]
fn dot_i8(c: __m512i, a: __m512i, b: __m512i) -> __m512i {
    _mm512_dpbusd_epi32(c, a, b)
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

/// A bf16 tile (AVX512_BF16, fp32 accumulators) of `$mv` vectors of rows.
macro_rules! bf16_kernel {
    ($name:ident, $mv:literal, $widths:tt, short: $short:tt, $nr:literal) => {
        dot_kernel!(
            $name,
            "avx512f,avx512bf16",
            super::Bf16,
            f32,
            __m512bh,
            $mv,
            _mm512_setzero_ps,
            as_bh,
            dot_bf16,
            _mm512_loadu_ps,
            _mm512_storeu_ps,
            _mm512_stream_ps,
            _mm512_add_ps,
            _mm512_sub_ps,
            $widths,
            short: $short,
            $nr
        );
    };
}

/// An int8 tile (AVX512_VNNI, i32 accumulators) of `$mv` vectors of rows.
macro_rules! i8_kernel {
    ($name:ident, $mv:literal, $widths:tt, short: $short:tt, $nr:literal) => {
        dot_kernel!(
            $name,
            "avx512f,avx512vnni",
            i8,
            i32,
            __m512i,
            $mv,
            _mm512_setzero_si512,
            std::convert::identity,
            dot_i8,
            load_i32,
            store_i32,
            store_i32,
            _mm512_add_epi32,
            _mm512_sub_epi32,
            $widths,
            short: $short,
            $nr
        );
    };
}

// 24 accumulators each: 48 x 8, or for rows a multiple of 32 but not of
// 48, 32 x 12.
bf16_kernel!(bf16_avx512, 3, [1 2 3 4 5 6 7 8], short: [1 2], 8);
bf16_kernel!(bf16_avx512_32x12, 2, [1 2 3 4 5 6 7 8 9 10 11 12], short: [1], 12);
i8_kernel!(i8_avx512vnni, 3, [1 2 3 4 5 6 7 8], short: [1 2], 8);
i8_kernel!(i8_avx512vnni_32x12, 2, [1 2 3 4 5 6 7 8 9 10 11 12], short: [1], 12);
