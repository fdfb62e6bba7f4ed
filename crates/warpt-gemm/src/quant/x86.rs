//! The quantized product's x86-64 tiles: AVX-512 VNNI (`vpdpbusd`, the
//! record's sixteen rows in one register) and AVX2 (`vpmaddubsw`, eight
//! rows a register). Both compute what `portable` computes, to the bit:
//! each block's exact integer dot product, converted, then one fused
//! multiply-add by the product of the scales.

// Register tiles are arrays indexed by unrolled constant loops: the
// indices are the point.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

use super::{GROUP, Panel, QActs, QType, Span, Tile, avx2_pair};

/// Four consecutive activation values as one i32, for a broadcast.
///
/// # Safety
/// `q + at .. q + at + 4` is readable.
#[inline(always)]
unsafe fn quad(q: *const i8, at: usize) -> i32 {
    // SAFETY: the caller's.
    unsafe { std::ptr::read_unaligned(q.add(at).cast::<i32>()) }
}

/// The activations of rows `t0..t0 + T` for block `b`: scales, offset
/// corrections (`-offset · sum`) and values.
#[inline(always)]
fn rows<const T: usize>(
    acts: &QActs,
    t0: usize,
    b: usize,
    offset: i32,
) -> ([f32; T], [i32; T], [*const i8; T]) {
    let (mut d, mut c, mut q) = ([0f32; T], [0i32; T], [std::ptr::null(); T]);
    for t in 0..T {
        let (dt, st, qt) = acts.block(t0 + t, b);
        d[t] = dt;
        c[t] = -offset * st;
        q[t] = qt.as_ptr();
    }
    (d, c, q)
}

/// Groups `g..g + rg` (1 or 2; up to 4 for one row) against rows
/// `t0..t0 + tn` (1 to 4) into `tile`, on AVX-512 VNNI.
///
/// # Safety
/// The CPU runs AVX-512F and AVX512_VNNI; the groups are in the panel and
/// the rows in `acts`.
#[target_feature(enable = "avx512f,avx512vnni")]
pub(super) unsafe fn vnni_tile(span: Span, tile: &mut Tile) {
    let (panel, acts) = (span.panel, span.acts);
    let (g, rg, t0, tn) = (span.g, span.rg, span.t0, span.tn);
    macro_rules! pick {
        ($($rg:literal $tn:literal),*) => {
            match (panel.qtype, rg, tn) {
                $(
                    (QType::Q8_0, $rg, $tn) => vnni::<false, $rg, $tn>(panel, g, acts, t0, tile),
                    (QType::Q4_0, $rg, $tn) => vnni::<true, $rg, $tn>(panel, g, acts, t0, tile),
                )*
                _ => unreachable!("a tile of {rg} groups by {tn} rows"),
            }
        };
    }
    // SAFETY: the caller's.
    unsafe { pick!(1 1, 1 2, 1 3, 1 4, 2 1, 2 2, 2 3, 2 4, 3 1, 4 1) }
}

/// [`vnni_tile`] for `RG` groups and `T` rows.
#[target_feature(enable = "avx512f,avx512vnni")]
#[inline]
unsafe fn vnni<const Q4: bool, const RG: usize, const T: usize>(
    panel: &Panel,
    g: usize,
    acts: &QActs,
    t0: usize,
    tile: &mut Tile,
) {
    let offset = panel.qtype.offset();
    let low = _mm512_set1_epi8(0x0f);
    let mut y = [[_mm512_setzero_ps(); T]; RG];
    for b in 0..panel.blocks {
        let (d, c, q) = rows::<T>(acts, t0, b, offset);
        let rec: [*const u8; RG] = std::array::from_fn(|i| panel.record(g + i, b).as_ptr());
        let mut acc = [[_mm512_setzero_si512(); T]; RG];
        for t in 0..T {
            let init = _mm512_set1_epi32(c[t]);
            for a in acc.iter_mut() {
                a[t] = init;
            }
        }
        // SAFETY: every record is `2 · GROUP` scale bytes and then 512
        // (q8_0) or 256 (q4_0) weight bytes; every block of activations
        // 32 values.
        unsafe {
            if Q4 {
                for p in 0..4 {
                    let mut lo = [_mm512_setzero_si512(); RG];
                    let mut hi = [_mm512_setzero_si512(); RG];
                    for i in 0..RG {
                        let v = _mm512_loadu_si512(rec[i].add(2 * GROUP + 64 * p).cast());
                        lo[i] = _mm512_and_si512(v, low);
                        hi[i] = _mm512_and_si512(_mm512_srli_epi32::<4>(v), low);
                    }
                    for t in 0..T {
                        let xl = _mm512_set1_epi32(quad(q[t], 4 * p));
                        let xh = _mm512_set1_epi32(quad(q[t], 4 * (p + 4)));
                        for i in 0..RG {
                            acc[i][t] = _mm512_dpbusd_epi32(acc[i][t], lo[i], xl);
                            acc[i][t] = _mm512_dpbusd_epi32(acc[i][t], hi[i], xh);
                        }
                    }
                }
            } else {
                for p in 0..8 {
                    let w: [__m512i; RG] = std::array::from_fn(|i| {
                        _mm512_loadu_si512(rec[i].add(2 * GROUP + 64 * p).cast())
                    });
                    for t in 0..T {
                        let x = _mm512_set1_epi32(quad(q[t], 4 * p));
                        for i in 0..RG {
                            acc[i][t] = _mm512_dpbusd_epi32(acc[i][t], w[i], x);
                        }
                    }
                }
            }
            for i in 0..RG {
                let dw = _mm512_cvtph_ps(_mm256_loadu_si256(rec[i].cast()));
                for t in 0..T {
                    let s = _mm512_mul_ps(dw, _mm512_set1_ps(d[t]));
                    y[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[i][t]), s, y[i][t]);
                }
            }
        }
    }
    for t in 0..T {
        for i in 0..RG {
            // SAFETY: a tile row holds `MAX_GROUPS · 16 >= RG · 16` values.
            unsafe { _mm512_storeu_ps(tile[t].as_mut_ptr().add(GROUP * i), y[i][t]) };
        }
    }
}

/// Groups `g..g + rg` against rows `t0..t0 + tn` into `tile`, on AVX2:
/// one group by two rows at a time.
///
/// # Safety
/// The CPU runs AVX2, FMA and F16C; the groups are in the panel and the
/// rows in `acts`; on q8_0, no weight is -128 (`vpsignb` cannot negate it).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn avx2_tile(span: Span, tile: &mut Tile) {
    let (panel, acts) = (span.panel, span.acts);
    let (g, rg, t0, tn) = (span.g, span.rg, span.t0, span.tn);
    super::by_pairs(rg, tn, |i, t, two| {
        let (g, t0, col) = (g + i, t0 + t, GROUP * i);
        // SAFETY: the caller's.
        unsafe {
            match (panel.qtype, two) {
                (QType::Q8_0, false) => avx2::<false, 1>(panel, g, acts, t0, tile, t, col),
                (QType::Q4_0, false) => avx2::<true, 1>(panel, g, acts, t0, tile, t, col),
                (QType::Q8_0, true) => avx2::<false, 2>(panel, g, acts, t0, tile, t, col),
                (QType::Q4_0, true) => avx2::<true, 2>(panel, g, acts, t0, tile, t, col),
            }
        }
    });
}

/// [`avx2_tile`] for group `g` and `T` rows from `t0`, stored at `tile`'s
/// row `at` on, column `col` on.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn avx2<const Q4: bool, const T: usize>(
    panel: &Panel,
    g: usize,
    acts: &QActs,
    t0: usize,
    tile: &mut Tile,
    at: usize,
    col: usize,
) {
    if T == 2 && panel.blocks > 0 {
        let x = [
            avx2_pair::Token::of(acts, t0, 0),
            avx2_pair::Token::of(acts, t0 + 1, 0),
        ];
        let (rec, zero) = (panel.record(g, 0).as_ptr(), [[_mm256_setzero_ps(); 2]; 2]);
        // SAFETY: the caller's: the group's records are consecutive, as
        // are each row's blocks; `blocks > 0`.
        let y = unsafe {
            if Q4 {
                avx2_pair::q4_0(rec, panel.blocks, [&x[0], &x[1]], zero)
            } else {
                avx2_pair::q8_0(rec, panel.blocks, [&x[0], &x[1]], zero)
            }
        };
        for t in 0..2 {
            for h in 0..2 {
                // SAFETY: as below.
                unsafe { _mm256_storeu_ps(tile[at + t].as_mut_ptr().add(col + 8 * h), y[h][t]) };
            }
        }
        return;
    }
    // q8_0's weights are made signed again here (the sign trick needs
    // them so), so only q4_0's offset is taken back.
    let offset = if Q4 { panel.qtype.offset() } else { 0 };
    let low = _mm256_set1_epi8(0x0f);
    let flip = _mm256_set1_epi8(-128);
    let ones = _mm256_set1_epi16(1);
    let mut y = [[_mm256_setzero_ps(); T]; 2];
    for b in 0..panel.blocks {
        let (d, c, q) = rows::<T>(acts, t0, b, offset);
        let rec = panel.record(g, b).as_ptr();
        let mut acc = [[_mm256_setzero_si256(); T]; 2];
        for t in 0..T {
            acc[0][t] = _mm256_set1_epi32(c[t]);
            acc[1][t] = acc[0][t];
        }
        // SAFETY: as in `vnni`; each 64-byte vector is two of 32 here.
        unsafe {
            if Q4 {
                for p in 0..4 {
                    let v: [__m256i; 2] = std::array::from_fn(|h| {
                        _mm256_loadu_si256(rec.add(2 * GROUP + 64 * p + 32 * h).cast())
                    });
                    let lo = v.map(|v| _mm256_and_si256(v, low));
                    let hi = v.map(|v| _mm256_and_si256(_mm256_srli_epi32::<4>(v), low));
                    for t in 0..T {
                        let xl = _mm256_set1_epi32(quad(q[t], 4 * p));
                        let xh = _mm256_set1_epi32(quad(q[t], 4 * (p + 4)));
                        for h in 0..2 {
                            // Nibble x value pairs fit an i16: 2 · 15 · 127.
                            let s = _mm256_add_epi16(
                                _mm256_maddubs_epi16(lo[h], xl),
                                _mm256_maddubs_epi16(hi[h], xh),
                            );
                            acc[h][t] = _mm256_add_epi32(acc[h][t], _mm256_madd_epi16(s, ones));
                        }
                    }
                }
            } else {
                for p in 0..8 {
                    let w: [__m256i; 2] = std::array::from_fn(|h| {
                        _mm256_xor_si256(
                            _mm256_loadu_si256(rec.add(2 * GROUP + 64 * p + 32 * h).cast()),
                            flip,
                        )
                    });
                    for t in 0..T {
                        let x = _mm256_set1_epi32(quad(q[t], 4 * p));
                        let ax = _mm256_abs_epi8(x);
                        for h in 0..2 {
                            // |x| times w with x's sign: pairs fit an i16
                            // (2 · 127 · 127) while no value is -128.
                            let s = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(w[h], x));
                            acc[h][t] = _mm256_add_epi32(acc[h][t], _mm256_madd_epi16(s, ones));
                        }
                    }
                }
            }
            for h in 0..2 {
                let dw = _mm256_cvtph_ps(_mm_loadu_si128(rec.add(16 * h).cast()));
                for t in 0..T {
                    let s = _mm256_mul_ps(dw, _mm256_set1_ps(d[t]));
                    y[h][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[h][t]), s, y[h][t]);
                }
            }
        }
    }
    for t in 0..T {
        for h in 0..2 {
            // SAFETY: `at + t < MAX_TOKENS` and `col + 16 <= MAX_GROUPS · 16`.
            unsafe { _mm256_storeu_ps(tile[at + t].as_mut_ptr().add(col + 8 * h), y[h][t]) };
        }
    }
}
