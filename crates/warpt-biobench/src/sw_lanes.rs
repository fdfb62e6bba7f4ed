//! The SIMD vector of score lanes both Smith-Waterman kernels are written
//! over ([`crate::sw_striped`] and [`crate::sw_inter`]): a small trait
//! whose every operation inlines to one or a few instructions, implemented
//! for 8-bit and 16-bit lanes on AVX2 and AVX-512BW.
//!
//! The kernels are instantiated inside `target_feature` functions, so the
//! trait's `#[inline(always)]` methods compile to the ISA's instructions.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

/// The operations the kernels need, on one vector of lanes.
///
/// # Safety
/// Every method needs the CPU to run the vector's ISA; the pointer-taking
/// ones need their memory valid for the bytes they name.
pub(crate) trait Lanes: Copy {
    /// One lane's value.
    type Elem: Copy + Default + Into<i32>;
    /// Lanes per vector.
    const N: usize;
    /// Every lane `x`.
    unsafe fn splat(x: Self::Elem) -> Self;
    /// Every lane zero.
    unsafe fn zero() -> Self;
    /// `N` lanes from `p` (unaligned).
    unsafe fn load(p: *const Self::Elem) -> Self;
    /// `N` lanes to `p` (unaligned).
    unsafe fn store(p: *mut Self::Elem, v: Self);
    /// Saturating lane-wise sum.
    unsafe fn adds(a: Self, b: Self) -> Self;
    /// Saturating lane-wise difference.
    unsafe fn subs(a: Self, b: Self) -> Self;
    /// Lane-wise maximum.
    unsafe fn max(a: Self, b: Self) -> Self;
    /// Every lane moved up by one, lane 0 zero.
    unsafe fn shift_in_zero(v: Self) -> Self;
    /// Whether any lane of `a` exceeds the same lane of `b`.
    unsafe fn any_gt(a: Self, b: Self) -> bool;
    /// Lane `k` = `table[index[k]]`: `table` holds 32 bytes (read as this
    /// width's values: `u8` as they are, `i16` sign-extended from `i8`),
    /// `index` holds `N` bytes, each below 32.
    unsafe fn lookup(table: *const u8, index: *const u8) -> Self;

    /// The largest lane.
    #[inline(always)]
    unsafe fn hmax(v: Self) -> i32 {
        let mut out = [Self::Elem::default(); 64];
        // SAFETY: `out` holds 64 ≥ N lanes.
        unsafe { Self::store(out.as_mut_ptr(), v) };
        out[..Self::N].iter().map(|&x| x.into()).max().unwrap_or(0)
    }
}

macro_rules! lanes {
    ($name:ident, $t:ty, $elem:ty, $n:expr,
     splat: $splat:expr, zero: $zero:expr, load: $load:expr, store: $store:expr,
     adds: $adds:expr, subs: $subs:expr, max: $max:expr,
     shift: |$sv:ident| $shift:expr, gt: |$ga:ident, $gb:ident| $gt:expr,
     lookup: |$lt:ident, $li:ident| $lookup:expr) => {
        #[doc = concat!("`", stringify!($n), "` lanes of `", stringify!($elem), "` in one `", stringify!($t), "`.")]
        #[derive(Clone, Copy)]
        pub(crate) struct $name($t);
        impl Lanes for $name {
            type Elem = $elem;
            const N: usize = $n;
            #[inline(always)]
            unsafe fn splat(x: $elem) -> Self {
                unsafe { Self($splat(x as _)) }
            }
            #[inline(always)]
            unsafe fn zero() -> Self {
                unsafe { Self($zero()) }
            }
            #[inline(always)]
            unsafe fn load(p: *const $elem) -> Self {
                unsafe { Self($load(p.cast())) }
            }
            #[inline(always)]
            unsafe fn store(p: *mut $elem, v: Self) {
                unsafe { $store(p.cast(), v.0) }
            }
            #[inline(always)]
            unsafe fn adds(a: Self, b: Self) -> Self {
                unsafe { Self($adds(a.0, b.0)) }
            }
            #[inline(always)]
            unsafe fn subs(a: Self, b: Self) -> Self {
                unsafe { Self($subs(a.0, b.0)) }
            }
            #[inline(always)]
            unsafe fn max(a: Self, b: Self) -> Self {
                unsafe { Self($max(a.0, b.0)) }
            }
            #[inline(always)]
            unsafe fn shift_in_zero(v: Self) -> Self {
                let $sv = v.0;
                unsafe { Self($shift) }
            }
            #[inline(always)]
            unsafe fn any_gt(a: Self, b: Self) -> bool {
                let ($ga, $gb) = (a.0, b.0);
                unsafe { $gt }
            }
            #[inline(always)]
            unsafe fn lookup(table: *const u8, index: *const u8) -> Self {
                let ($lt, $li) = (table, index);
                unsafe { Self($lookup) }
            }
        }
    };
}

/// 32 bytes of `table` at 16 byte indices below 32: two in-lane shuffles
/// (one per table half) and a blend on the index's bit 4.
#[inline(always)]
unsafe fn lookup16(table: *const u8, index: __m128i) -> __m128i {
    unsafe {
        let lo = _mm_loadu_si128(table.cast());
        let hi = _mm_loadu_si128(table.add(16).cast());
        let upper = _mm_cmpgt_epi8(index, _mm_set1_epi8(15));
        _mm_blendv_epi8(
            _mm_shuffle_epi8(lo, index),
            _mm_shuffle_epi8(hi, index),
            upper,
        )
    }
}

/// As [`lookup16`], 32 indices.
#[inline(always)]
unsafe fn lookup32(table: *const u8, index: __m256i) -> __m256i {
    unsafe {
        let lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(table.cast()));
        let hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(table.add(16).cast()));
        let upper = _mm256_cmpgt_epi8(index, _mm256_set1_epi8(15));
        _mm256_blendv_epi8(
            _mm256_shuffle_epi8(lo, index),
            _mm256_shuffle_epi8(hi, index),
            upper,
        )
    }
}

lanes!(Avx2U8, __m256i, u8, 32,
    splat: _mm256_set1_epi8, zero: _mm256_setzero_si256,
    load: _mm256_loadu_si256, store: _mm256_storeu_si256,
    adds: _mm256_adds_epu8, subs: _mm256_subs_epu8, max: _mm256_max_epu8,
    shift: |v| _mm256_alignr_epi8::<15>(v, _mm256_permute2x128_si256::<0x08>(v, v)),
    gt: |a, b| { let d = _mm256_subs_epu8(a, b); _mm256_testz_si256(d, d) == 0 },
    lookup: |t, i| lookup32(t, _mm256_loadu_si256(i.cast())));
lanes!(Avx2I16, __m256i, i16, 16,
    splat: _mm256_set1_epi16, zero: _mm256_setzero_si256,
    load: _mm256_loadu_si256, store: _mm256_storeu_si256,
    adds: _mm256_adds_epi16, subs: _mm256_subs_epi16, max: _mm256_max_epi16,
    shift: |v| _mm256_alignr_epi8::<14>(v, _mm256_permute2x128_si256::<0x08>(v, v)),
    gt: |a, b| _mm256_movemask_epi8(_mm256_cmpgt_epi16(a, b)) != 0,
    lookup: |t, i| _mm256_cvtepi8_epi16(lookup16(t, _mm_loadu_si128(i.cast()))));
lanes!(Avx512U8, __m512i, u8, 64,
splat: _mm512_set1_epi8, zero: _mm512_setzero_si512,
load: _mm512_loadu_si512, store: _mm512_storeu_si512,
adds: _mm512_adds_epu8, subs: _mm512_subs_epu8, max: _mm512_max_epu8,
shift: |v| _mm512_alignr_epi8::<15>(v, _mm512_alignr_epi64::<6>(v, _mm512_setzero_si512())),
gt: |a, b| _mm512_cmpgt_epu8_mask(a, b) != 0,
lookup: |t, i| {
    let index = _mm512_loadu_si512(i.cast());
    let lo = _mm512_broadcast_i32x4(_mm_loadu_si128(t.cast()));
    let hi = _mm512_broadcast_i32x4(_mm_loadu_si128(t.add(16).cast()));
    let upper = _mm512_cmpgt_epu8_mask(index, _mm512_set1_epi8(15));
    _mm512_mask_blend_epi8(upper, _mm512_shuffle_epi8(lo, index), _mm512_shuffle_epi8(hi, index))
});
lanes!(Avx512I16, __m512i, i16, 32,
    splat: _mm512_set1_epi16, zero: _mm512_setzero_si512,
    load: _mm512_loadu_si512, store: _mm512_storeu_si512,
    adds: _mm512_adds_epi16, subs: _mm512_subs_epi16, max: _mm512_max_epi16,
    shift: |v| _mm512_alignr_epi8::<14>(v, _mm512_alignr_epi64::<6>(v, _mm512_setzero_si512())),
    gt: |a, b| _mm512_cmpgt_epi16_mask(a, b) != 0,
    lookup: |t, i| _mm512_cvtepi8_epi16(lookup32(t, _mm256_loadu_si256(i.cast()))));
