//! Packing with AVX2 shuffles, where element by element each would be a
//! load and a store of its own:
//!
//! - [`transpose`]: runs into a panel's steps, an 8 x 8 block of 32-bit
//!   units (an f32, a bf16 pair, an int8 four) or a 4 x 4 block of 64-bit
//!   ones (an f64) per round of loads, unpacks and 128-bit lane swaps.
//!   Runs left over past the last whole block (a panel of 6 or 12
//!   columns, a narrow last one) go half a block at a time, then two
//!   32-bit runs at a time, then one unit at a time;
//! - [`copy_block`]: a column-major block of plain elements into its
//!   panels, depth by depth, 32 bytes a move;
//! - [`interleave`]: two runs of 16-bit elements (bf16) or four of 8-bit
//!   ones (int8) into 4-byte groups, 32 bytes of each run at a time, then
//!   16 (a 48-row step of int8 is one and a half vectors).
//!
//! Both flip the bits of every byte A's packing flips (int8's 0x80).

use std::arch::x86_64::*;

/// Units of `unit` bytes (4 or 8), `groups` of them from each of `runs`
/// runs (run `j` at `src + j·stride` bytes, its units consecutive), laid
/// side by side `width` units apart: unit `q` of run `j` at `dst + (q·width
/// + j)·unit` bytes, every byte's `flip` bits flipped.
///
/// # Safety
/// `src + j·stride .. + groups·unit` is readable for every `j < runs`,
/// `dst .. + (groups·width)·unit` is writable and apart from the source,
/// `runs <= width`, `unit` is 4 or 8, and the CPU runs AVX2.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn transpose(
    src: *const u8,
    stride: usize,
    runs: usize,
    width: usize,
    groups: usize,
    unit: usize,
    flip: u8,
    dst: *mut u8,
) {
    // Units per block side: a 256-bit register of them.
    let side = 32 / unit;
    let f = Flip(_mm256_set1_epi8(flip as i8), flip);
    let whole = groups - groups % side;
    for q in (0..whole).step_by(side) {
        let mut j = 0;
        // SAFETY (every block): rows j..j + side (or half) < runs, units
        // q..q + side < groups, as the caller promised.
        while j + side <= runs {
            unsafe { block(src, stride, j, q, width, unit, &f, dst, side) };
            j += side;
        }
        if j + side / 2 <= runs {
            unsafe { block(src, stride, j, q, width, unit, &f, dst, side / 2) };
            j += side / 2;
        }
        if unit == 4 && j + 2 <= runs {
            // A 6-wide panel of f32 (or bf16 pairs) ends in two runs.
            unsafe { block(src, stride, j, q, width, unit, &f, dst, 2) };
            j += 2;
        }
        for j in j..runs {
            for u in q..q + side {
                unsafe { copy_unit(src, stride, j, u, width, unit, f.1, dst) };
            }
        }
    }
    for j in 0..runs {
        for u in whole..groups {
            // SAFETY: as above.
            unsafe { copy_unit(src, stride, j, u, width, unit, f.1, dst) };
        }
    }
}

/// The bits to flip in every byte: in each byte of a vector, and alone.
struct Flip(__m256i, u8);

/// Unit `u` of run `j` to its place, each byte's `flip` bits flipped.
///
/// # Safety
/// As [`transpose`], for this `j` and `u`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn copy_unit(
    src: *const u8,
    stride: usize,
    j: usize,
    u: usize,
    width: usize,
    unit: usize,
    flip: u8,
    dst: *mut u8,
) {
    // SAFETY: the unit's bytes at both places are inside the caller's
    // bounds; `unit` is 4 or 8, moved as one word.
    unsafe {
        let (from, to) = (
            src.add(j * stride + u * unit),
            dst.add((u * width + j) * unit),
        );
        if unit == 4 {
            let w = from.cast::<u32>().read_unaligned() ^ u32::from_ne_bytes([flip; 4]);
            to.cast::<u32>().write_unaligned(w);
        } else {
            let w = from.cast::<u64>().read_unaligned() ^ u64::from_ne_bytes([flip; 8]);
            to.cast::<u64>().write_unaligned(w);
        }
    }
}

/// Runs `j..j + rows` (`rows`: a whole side, half of one, or two 32-bit
/// runs), units
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
    f: &Flip,
    dst: *mut u8,
    rows: usize,
) {
    let side = 32 / unit;
    // SAFETY: 32 bytes of run j + r from unit q, inside it (caller).
    let load = |r: usize| unsafe {
        _mm256_xor_si256(
            _mm256_loadu_si256(src.add((j + r) * stride + q * unit).cast::<__m256i>()),
            f.0,
        )
    };
    // Where unit q + t of run j lands (its row t of the block).
    let at = |t: usize| dst.wrapping_add(((q + t) * width + j) * unit);
    // SAFETY (every store): row t of the block, `rows` units from `at(t)`,
    // is inside the destination (caller).
    if unit == 4 && rows == 8 {
        // Runs 0-3 and 4-7 each as four registers, then the halves paired.
        let (a, b) = (
            fours(load(0), load(1), load(2), load(3)),
            fours(load(4), load(5), load(6), load(7)),
        );
        for i in 0..4 {
            let (lo, hi) = (
                _mm256_permute2x128_si256::<0x20>(a[i], b[i]),
                _mm256_permute2x128_si256::<0x31>(a[i], b[i]),
            );
            unsafe {
                _mm256_storeu_si256(at(i).cast(), lo);
                _mm256_storeu_si256(at(i + 4).cast(), hi);
            }
        }
    } else if unit == 4 && rows == 2 {
        // Two runs: row t of the block is 64 bits, unit t of each run.
        let (r0, r1) = (load(0), load(1));
        let mut pairs = [0u64; 8];
        // SAFETY: `pairs` is 64 bytes; these are its two halves.
        unsafe {
            // Units 0, 1, 4, 5 of the pair, then 2, 3, 6, 7.
            _mm256_storeu_si256(pairs.as_mut_ptr().cast(), _mm256_unpacklo_epi32(r0, r1));
            _mm256_storeu_si256(
                pairs.as_mut_ptr().add(4).cast(),
                _mm256_unpackhi_epi32(r0, r1),
            );
        }
        for (t, i) in [0, 1, 4, 5, 2, 3, 6, 7].into_iter().enumerate() {
            unsafe { at(t).cast::<u64>().write_unaligned(pairs[i]) };
        }
    } else if unit == 4 {
        // Four runs: row t of the block is 128 bits.
        let u = fours(load(0), load(1), load(2), load(3));
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

/// Four runs of eight 32-bit units side by side: register `i` holds unit
/// `i` of runs 0-3 in its low 128-bit lane and unit `i + 4` in its high
/// one (pairs of runs, then fours, within each lane).
#[inline]
#[target_feature(enable = "avx2")]
fn fours(r0: __m256i, r1: __m256i, r2: __m256i, r3: __m256i) -> [__m256i; 4] {
    let t = [
        _mm256_unpacklo_epi32(r0, r1),
        _mm256_unpackhi_epi32(r0, r1),
        _mm256_unpacklo_epi32(r2, r3),
        _mm256_unpackhi_epi32(r2, r3),
    ];
    [
        _mm256_unpacklo_epi64(t[0], t[2]),
        _mm256_unpackhi_epi64(t[0], t[2]),
        _mm256_unpacklo_epi64(t[1], t[3]),
        _mm256_unpackhi_epi64(t[1], t[3]),
    ]
}

/// Groups of 4 bytes from `g` runs (2 of 16-bit elements, or 4 of 8-bit
/// ones): group `i` is element `i` of each run in turn, at `dst + 4i`,
/// every byte's `flip` bits flipped; `len` groups.
///
/// # Safety
/// `runs[s] .. + len` elements is readable for `s < g`, `dst .. + 4·len`
/// bytes is writable and apart from them, `g` is 2 or 4, and the CPU runs
/// AVX2.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn interleave(
    runs: [*const u8; 4],
    g: usize,
    len: usize,
    flip: u8,
    dst: *mut u8,
) {
    let size = 4 / g;
    // Elements per vector of a run.
    let per = 32 / size;
    let whole = len - len % per;
    let f = _mm256_set1_epi8(flip as i8);
    // SAFETY (every load and store): elements i..i + per of each run, and
    // their groups, inside the caller's bounds.
    let load = |s: usize, i: usize| unsafe {
        _mm256_xor_si256(_mm256_loadu_si256(runs[s].add(i * size).cast()), f)
    };
    let store = |i: usize, v: __m256i| unsafe { _mm256_storeu_si256(dst.add(i * 4).cast(), v) };
    for i in (0..whole).step_by(per) {
        if g == 2 {
            // 16 pairs: lanes hold elements 0-3 | 8-11 and 4-7 | 12-15.
            let (a, b) = (load(0, i), load(1, i));
            let (lo, hi) = (_mm256_unpacklo_epi16(a, b), _mm256_unpackhi_epi16(a, b));
            store(i, _mm256_permute2x128_si256::<0x20>(lo, hi));
            store(i + 8, _mm256_permute2x128_si256::<0x31>(lo, hi));
        } else {
            // 32 fours: pairs of runs 0-1 and 2-3, then the pairs paired.
            let (a, b, c, d) = (load(0, i), load(1, i), load(2, i), load(3, i));
            let (ab_lo, ab_hi) = (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b));
            let (cd_lo, cd_hi) = (_mm256_unpacklo_epi8(c, d), _mm256_unpackhi_epi8(c, d));
            // Elements 0-3 | 16-19, 4-7 | 20-23, 8-11 | 24-27, 12-15 | 28-31.
            let q = [
                _mm256_unpacklo_epi16(ab_lo, cd_lo),
                _mm256_unpackhi_epi16(ab_lo, cd_lo),
                _mm256_unpacklo_epi16(ab_hi, cd_hi),
                _mm256_unpackhi_epi16(ab_hi, cd_hi),
            ];
            store(i, _mm256_permute2x128_si256::<0x20>(q[0], q[1]));
            store(i + 8, _mm256_permute2x128_si256::<0x20>(q[2], q[3]));
            store(i + 16, _mm256_permute2x128_si256::<0x31>(q[0], q[1]));
            store(i + 24, _mm256_permute2x128_si256::<0x31>(q[2], q[3]));
        }
    }
    // Half a vector more (the 16 bytes past 32 of a 48-row panel's step).
    let mut whole = whole;
    if len - whole >= per / 2 {
        let i = whole;
        // SAFETY (every load and store): elements i..i + per / 2 of each
        // run, and their groups, inside the caller's bounds.
        let load = |s: usize| unsafe {
            _mm_xor_si128(
                _mm_loadu_si128(runs[s].add(i * size).cast()),
                _mm256_castsi256_si128(f),
            )
        };
        let store = |at: usize, v: __m128i| unsafe { _mm_storeu_si128(dst.add(at * 4).cast(), v) };
        if g == 2 {
            let (a, b) = (load(0), load(1));
            store(i, _mm_unpacklo_epi16(a, b));
            store(i + 4, _mm_unpackhi_epi16(a, b));
        } else {
            let (a, b, c, d) = (load(0), load(1), load(2), load(3));
            let (ab_lo, ab_hi) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
            let (cd_lo, cd_hi) = (_mm_unpacklo_epi8(c, d), _mm_unpackhi_epi8(c, d));
            store(i, _mm_unpacklo_epi16(ab_lo, cd_lo));
            store(i + 4, _mm_unpackhi_epi16(ab_lo, cd_lo));
            store(i + 8, _mm_unpacklo_epi16(ab_hi, cd_hi));
            store(i + 12, _mm_unpackhi_epi16(ab_hi, cd_hi));
        }
        whole += per / 2;
    }
    for i in whole..len {
        for (s, run) in runs[..g].iter().enumerate() {
            for b in 0..size {
                // SAFETY: element i < len of run s, group i of dst.
                unsafe { *dst.add(i * 4 + s * size + b) = *run.add(i * size + b) ^ flip };
            }
        }
    }
}

/// [`interleave`] for `steps` consecutive steps of a panel in one call (a
/// call per step cost bf16 more than the interleaving: 5% of a product
/// at n = 1024): step `q`'s run `s` at `src + (q·g + s)·stride` bytes, its
/// groups at `dst + q·dst_step` bytes.
///
/// # Safety
/// As [`interleave`] for every step's runs and groups.
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn interleave_steps(
    src: *const u8,
    stride: usize,
    steps: usize,
    g: usize,
    len: usize,
    flip: u8,
    dst: *mut u8,
    dst_step: usize,
) {
    for q in 0..steps {
        let runs: [*const u8; 4] = std::array::from_fn(|s| {
            // SAFETY: run s < g of step q is inside the caller's bounds;
            // the others are never read.
            if s < g {
                unsafe { src.add((q * g + s) * stride) }
            } else {
                src
            }
        });
        // SAFETY: as the caller promises for step q.
        unsafe { interleave(runs, g, len, flip, dst.add(q * dst_step)) };
    }
}

/// [`interleave`] for a block of panels a step at a time: step `q`'s run
/// `s < g` at `src + (q·g + s)·stride` bytes holds `rows` elements, every
/// panel's rows side by side (`mr` each, the last panel's what is left);
/// panel `r`'s groups of step `q` go to `dst + r·panel_step + q·mr·4`.
/// Each run is read once, front to back, and the runs `COPY_AHEAD` steps
/// on are asked for while this step's are moved.
///
/// # Safety
/// Every run `src + (q·g + s)·stride .. + rows·4/g` bytes is readable for
/// `q < steps`, `s < g`; every panel's steps writable and apart from
/// them; `g` is 2 or 4, `rows >= 1`, and the CPU runs AVX2.
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn interleave_block(
    src: *const u8,
    stride: usize,
    steps: usize,
    g: usize,
    rows: usize,
    mr: usize,
    flip: u8,
    dst: *mut u8,
    panel_step: usize,
) {
    let size = 4 / g;
    let run = rows * size;
    for q in 0..steps {
        let ahead = src.wrapping_add((q + COPY_AHEAD) * g * stride);
        for s in 0..g {
            for line in (0..run).step_by(64) {
                // SAFETY: a prefetch neither reads nor writes memory.
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(s * stride + line).cast());
            }
        }
        for (r, top) in (0..rows).step_by(mr).enumerate() {
            let runs: [*const u8; 4] = std::array::from_fn(|s| {
                // SAFETY: run s < g of step q, from panel r's first row,
                // is inside the caller's bounds; the others are never read.
                if s < g {
                    unsafe { src.add((q * g + s) * stride + top * size) }
                } else {
                    src
                }
            });
            // SAFETY: panel r's rows of step q and its groups, as the
            // caller promised.
            unsafe {
                interleave(
                    runs,
                    g,
                    mr.min(rows - top),
                    flip,
                    dst.add(r * panel_step + q * mr * 4),
                )
            };
        }
    }
}

/// Runs ahead of the one being copied that [`copy_block`] asks for.
const COPY_AHEAD: usize = 4;

/// A block of column-major panels of plain elements, depth by depth:
/// step `q`'s source is one run at `src + q·stride` holding every panel's
/// rows side by side (`panel_len` bytes each, the last panel's
/// `last_len`), and panel `r`'s copy of it goes to `dst + r·panel_step +
/// q·panel_len`. Each source run is read once, front to back, so the
/// hardware prefetchers follow it; a panel at a time would read one line
/// from each of `steps` rows before moving on.
///
/// # Safety
/// Every run `src + q·stride .. + (panels - 1)·panel_len + last_len` is
/// readable, every copy writable and apart from the source, `last_len <=
/// panel_len`, `panels >= 1`, and the CPU runs AVX2.
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn copy_block(
    src: *const u8,
    stride: usize,
    steps: usize,
    panels: usize,
    panel_len: usize,
    last_len: usize,
    dst: *mut u8,
    panel_step: usize,
) {
    let run = (panels - 1) * panel_len + last_len;
    for q in 0..steps {
        // Run q + AHEAD asked for now: each run is a new stretch of
        // memory (a row of a row-major matrix) the prefetchers would
        // otherwise find only after its first misses.
        let ahead = src.wrapping_add((q + COPY_AHEAD) * stride);
        for line in (0..run).step_by(64) {
            // SAFETY: a prefetch neither reads nor writes memory.
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line).cast());
        }
        for r in 0..panels {
            let len = if r + 1 == panels { last_len } else { panel_len };
            // SAFETY: run q's panel r and its copy, as the caller promised.
            unsafe {
                copy(
                    src.add(q * stride + r * panel_len),
                    dst.add(r * panel_step + q * panel_len),
                    len,
                )
            };
        }
    }
}

/// `len` bytes from `from` to `to`: 32 bytes a move, then 8, then one.
///
/// # Safety
/// `from .. + len` readable, `to .. + len` writable, apart; AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn copy(from: *const u8, to: *mut u8, len: usize) {
    let wide = len - len % 32;
    let words = len - len % 8;
    // SAFETY (every access): offsets below `len`, as the caller promised.
    for at in (0..wide).step_by(32) {
        unsafe {
            let v = _mm256_loadu_si256(from.add(at).cast());
            _mm256_storeu_si256(to.add(at).cast(), v);
        }
    }
    for at in (wide..words).step_by(8) {
        unsafe {
            let w = from.add(at).cast::<u64>().read_unaligned();
            to.add(at).cast::<u64>().write_unaligned(w);
        }
    }
    for at in words..len {
        unsafe { *to.add(at) = *from.add(at) };
    }
}
