//! Transposing runs into a panel's steps with AVX2 shuffles: an 8 x 8
//! block of 32-bit units (an f32, a bf16 pair, an int8 four) or a 4 x 4
//! block of 64-bit ones (an f64) per round of loads, unpacks and 128-bit
//! lane swaps, where element by element each unit would be a load and a
//! store of its own. Runs left over past the last whole block (a panel of
//! 6 or 12 columns, a narrow last one) go half a block at a time, then one
//! unit at a time.

use std::arch::x86_64::*;

/// Units of `unit` bytes (4 or 8), `groups` of them from each of `runs`
/// runs (run `j` at `src + j·stride` bytes, its units consecutive), laid
/// side by side `width` units apart: unit `q` of run `j` at `dst + (q·width
/// + j)·unit` bytes.
///
/// # Safety
/// `src + j·stride .. + groups·unit` is readable for every `j < runs`,
/// `dst .. + (groups·width)·unit` is writable and apart from the source,
/// `runs <= width`, `unit` is 4 or 8, and the CPU runs AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn transpose(
    src: *const u8,
    stride: usize,
    runs: usize,
    width: usize,
    groups: usize,
    unit: usize,
    dst: *mut u8,
) {
    // Units per block side: a 256-bit register of them.
    let side = 32 / unit;
    let whole = groups - groups % side;
    for q in (0..whole).step_by(side) {
        let mut j = 0;
        // SAFETY (every block): rows j..j + side (or half) < runs, units
        // q..q + side < groups, as the caller promised.
        while j + side <= runs {
            unsafe { block(src, stride, j, q, width, unit, dst, side) };
            j += side;
        }
        if j + side / 2 <= runs {
            unsafe { block(src, stride, j, q, width, unit, dst, side / 2) };
            j += side / 2;
        }
        for j in j..runs {
            for u in q..q + side {
                unsafe { copy_unit(src, stride, j, u, width, unit, dst) };
            }
        }
    }
    for j in 0..runs {
        for u in whole..groups {
            // SAFETY: as above.
            unsafe { copy_unit(src, stride, j, u, width, unit, dst) };
        }
    }
}

/// Unit `u` of run `j` to its place.
///
/// # Safety
/// As [`transpose`], for this `j` and `u`.
#[inline(always)]
unsafe fn copy_unit(
    src: *const u8,
    stride: usize,
    j: usize,
    u: usize,
    width: usize,
    unit: usize,
    dst: *mut u8,
) {
    // SAFETY: the caller's bounds; the two never overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(
            src.add(j * stride + u * unit),
            dst.add((u * width + j) * unit),
            unit,
        )
    }
}

/// Runs `j..j + rows` (`rows`: a whole side, or half of one), units
/// `q..q + side`, transposed into place.
///
/// # Safety
/// As [`transpose`], for these runs and units.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
unsafe fn block(
    src: *const u8,
    stride: usize,
    j: usize,
    q: usize,
    width: usize,
    unit: usize,
    dst: *mut u8,
    rows: usize,
) {
    let side = 32 / unit;
    // SAFETY: 32 bytes of run j + r from unit q, inside it (caller).
    let load = |r: usize| unsafe {
        _mm256_loadu_si256(src.add((j + r) * stride + q * unit).cast::<__m256i>())
    };
    // Where unit q + t of run j lands (its row t of the block).
    let at = |t: usize| dst.wrapping_add(((q + t) * width + j) * unit);
    // SAFETY (every store): row t of the block, `rows` units from `at(t)`,
    // is inside the destination (caller).
    if unit == 4 && rows == 8 {
        let r: [__m256i; 8] = std::array::from_fn(load);
        // Pairs, then fours, of runs side by side within each 128-bit lane.
        let t = [
            _mm256_unpacklo_epi32(r[0], r[1]),
            _mm256_unpackhi_epi32(r[0], r[1]),
            _mm256_unpacklo_epi32(r[2], r[3]),
            _mm256_unpackhi_epi32(r[2], r[3]),
            _mm256_unpacklo_epi32(r[4], r[5]),
            _mm256_unpackhi_epi32(r[4], r[5]),
            _mm256_unpacklo_epi32(r[6], r[7]),
            _mm256_unpackhi_epi32(r[6], r[7]),
        ];
        let u = [
            _mm256_unpacklo_epi64(t[0], t[2]),
            _mm256_unpackhi_epi64(t[0], t[2]),
            _mm256_unpacklo_epi64(t[1], t[3]),
            _mm256_unpackhi_epi64(t[1], t[3]),
            _mm256_unpacklo_epi64(t[4], t[6]),
            _mm256_unpackhi_epi64(t[4], t[6]),
            _mm256_unpacklo_epi64(t[5], t[7]),
            _mm256_unpackhi_epi64(t[5], t[7]),
        ];
        // u[i] holds unit i of runs 0-3 (low lane) and i + 4 (high); u[i +
        // 4] the same of runs 4-7.
        for i in 0..4 {
            let (lo, hi) = (
                _mm256_permute2x128_si256::<0x20>(u[i], u[i + 4]),
                _mm256_permute2x128_si256::<0x31>(u[i], u[i + 4]),
            );
            unsafe {
                _mm256_storeu_si256(at(i).cast(), lo);
                _mm256_storeu_si256(at(i + 4).cast(), hi);
            }
        }
    } else if unit == 4 {
        // Four runs: row t of the block is 128 bits.
        let r: [__m256i; 4] = std::array::from_fn(load);
        let t = [
            _mm256_unpacklo_epi32(r[0], r[1]),
            _mm256_unpackhi_epi32(r[0], r[1]),
            _mm256_unpacklo_epi32(r[2], r[3]),
            _mm256_unpackhi_epi32(r[2], r[3]),
        ];
        let u = [
            _mm256_unpacklo_epi64(t[0], t[2]),
            _mm256_unpackhi_epi64(t[0], t[2]),
            _mm256_unpacklo_epi64(t[1], t[3]),
            _mm256_unpackhi_epi64(t[1], t[3]),
        ];
        for (i, v) in u.into_iter().enumerate() {
            unsafe {
                _mm_storeu_si128(at(i).cast(), _mm256_castsi256_si128(v));
                _mm_storeu_si128(at(i + 4).cast(), _mm256_extracti128_si256::<1>(v));
            }
        }
    } else if rows == side {
        // 64-bit units, four runs.
        let r: [__m256i; 4] = std::array::from_fn(load);
        let t = [
            _mm256_unpacklo_epi64(r[0], r[1]),
            _mm256_unpackhi_epi64(r[0], r[1]),
            _mm256_unpacklo_epi64(r[2], r[3]),
            _mm256_unpackhi_epi64(r[2], r[3]),
        ];
        unsafe {
            _mm256_storeu_si256(at(0).cast(), _mm256_permute2x128_si256::<0x20>(t[0], t[2]));
            _mm256_storeu_si256(at(1).cast(), _mm256_permute2x128_si256::<0x20>(t[1], t[3]));
            _mm256_storeu_si256(at(2).cast(), _mm256_permute2x128_si256::<0x31>(t[0], t[2]));
            _mm256_storeu_si256(at(3).cast(), _mm256_permute2x128_si256::<0x31>(t[1], t[3]));
        }
    } else {
        // 64-bit units, two runs: row t of the block is 128 bits.
        let (t0, t1) = (
            _mm256_unpacklo_epi64(load(0), load(1)),
            _mm256_unpackhi_epi64(load(0), load(1)),
        );
        unsafe {
            _mm_storeu_si128(at(0).cast(), _mm256_castsi256_si128(t0));
            _mm_storeu_si128(at(1).cast(), _mm256_castsi256_si128(t1));
            _mm_storeu_si128(at(2).cast(), _mm256_extracti128_si256::<1>(t0));
            _mm_storeu_si128(at(3).cast(), _mm256_extracti128_si256::<1>(t1));
        }
    }
}
