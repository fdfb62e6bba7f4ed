//! bf16's tile on AVX2 (no AVX512_BF16): bf16 in memory, in the pairs of
//! depths the dot-product tiles read (`x86::dot_kernel!`), widened exactly
//! to fp32 as they are loaded and multiplied by fp32's multiply-adds into
//! fp32 accumulators. A bf16 is the top half of an fp32, so a 32-bit lane
//! holding a row's pair is two fp32 by one shift (the even depth) and two
//! (the odd). B's packed pairs are widened a run of [`RUN`] groups at
//! a time into an fp32 buffer on the stack, broadcast from there as
//! fp32's tiles broadcast theirs (see `widen.rs` for why not from a
//! register). Products of two bf16 are exact in fp32: this computes what
//! the portable kernel does, up to the order of the sums.
//!
//! 16 x 4, not fp32's 16 x 6: at 16 x 6 the compiler spilled accumulators
//! to the stack whichever way the step was written (twelve of them, A's
//! vectors, a broadcast), and n = 1024 ran at 27-31 GFLOP/s against
//! fp32's 62-77; 16 x 4 runs at 50-54 (16 x 5 at 40-46; Zen 3, one core,
//! `--example rate`).
//!
//! Why: without it a CPU without AVX512_BF16 held bf16 weights as fp32,
//! and a decode step, bound by reading the weights, read twice the bytes
//! llama.cpp reads (`llm_infer` bf16 batch 1 TPOT 0.61-0.74x llama.cpp
//! on Zen 3, where f32 was 1.09-1.78x).

use std::arch::x86_64::*;

use super::{Bf16, Store};

/// Groups (pairs of depths) of B's packed panel widened at a time: 2 KiB
/// of fp32 at the widest tile (4 columns), read back from L1.
const RUN: usize = 64;

/// Rows a vector holds.
const LANES: usize = 8;

/// Vectors of rows in a full tile (MR 16).
const MV: usize = 2;

/// Columns of the widest tile (NR).
const NR: usize = 4;

/// `ev.len()` pairs at `src` widened: their even depths to `ev`, their
/// odd to `od`, in order; eight at a time, the rest one by one.
///
/// # Safety
/// `ev.len()` pairs at `src`, and `od` as long as `ev`.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn widen_run(src: *const u32, ev: &mut [f32], od: &mut [f32]) {
    let n = ev.len().min(od.len());
    let whole = n / LANES * LANES;
    for i in (0..whole).step_by(LANES) {
        // SAFETY: pairs i .. i + 8 <= n are the caller's; both buffers
        // hold n values.
        unsafe {
            let pairs = _mm256_loadu_si256(src.add(i).cast());
            _mm256_storeu_ps(ev.as_mut_ptr().add(i), even(pairs));
            _mm256_storeu_ps(od.as_mut_ptr().add(i), odd(pairs));
        }
    }
    for i in whole..n {
        // SAFETY: i < n: the caller's.
        let pair = unsafe { *src.add(i) };
        ev[i] = f32::from_bits(pair << 16);
        od[i] = f32::from_bits(pair & 0xFFFF_0000);
    }
}

/// The even depths of eight pairs, as fp32 (exact).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn even(pairs: __m256i) -> __m256 {
    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(pairs))
}

/// The odd depths of eight pairs, as fp32 (exact): the even half shifted
/// out and back, no mask held in a register.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn odd(pairs: __m256i) -> __m256 {
    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_srli_epi32::<16>(pairs)))
}

/// The 16 x 4 tile: as [`super::MicroKernel`] for [`Bf16`] (`groups`
/// pairs of depths), up to 16 rows and 4 columns.
///
/// # Safety
/// As [`super::MicroKernel`], with MR 16 and NR 4, on a CPU with AVX2 and
/// FMA.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn bf16_avx2(
    groups: usize,
    a: *const Bf16,
    b: *const Bf16,
    rows: usize,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    store: Store,
) {
    // U sets of accumulators, group g adding into set g % U (a narrow
    // tile hides the multiply-add's latency so); V of the MV vectors of
    // rows computed and stored.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile<const W: usize, const U: usize, const V: usize>(
        groups: usize,
        a: *const Bf16,
        b: *const Bf16,
        out: *mut f32,
        ldo: usize,
        store: Store,
    ) {
        // A pair is 32 bits: a step of A is MR of them, of B W.
        let (a, b) = (a.cast::<u32>(), b.cast::<u32>());
        let mut sets: [[[__m256; V]; W]; U] = [[[_mm256_setzero_ps(); V]; W]; U];
        // B's groups g0 .. g0 + RUN widened: the even depths' values,
        // then the odd's, each group's W columns side by side.
        let mut wide = [[[0f32; W]; RUN]; 2];
        // Group g, its B values at `bw` (even, odd).
        let step = |g: usize, bw: [&[f32; W]; 2], acc: &mut [[__m256; V]; W]| {
            // SAFETY: g < groups, so the MR pairs at g * MR are inside
            // A's panel.
            let ap = unsafe { a.add(g * LANES * MV) };
            crate::prefetch::ahead::<u32, { LANES * MV }>(ap);
            // The even depths, then the odd, each from its own load of
            // the step (an L1 hit), so only one half of A is held.
            for (half, bw) in bw.into_iter().enumerate() {
                let mut av = [_mm256_setzero_ps(); V];
                for (v, x) in av.iter_mut().enumerate() {
                    // SAFETY: 8 pairs (32 bytes) inside A's step.
                    let pairs = unsafe { _mm256_loadu_si256(ap.add(v * LANES).cast()) };
                    *x = if half == 0 { even(pairs) } else { odd(pairs) };
                }
                for (col, &bj) in acc.iter_mut().zip(bw) {
                    let bj = _mm256_set1_ps(bj);
                    for (c, x) in col.iter_mut().zip(av) {
                        *c = _mm256_fmadd_ps(x, bj, *c);
                    }
                }
            }
        };
        for g0 in (0..groups).step_by(RUN) {
            let len = RUN.min(groups - g0);
            let [ev, od] = &mut wide;
            // SAFETY: groups g0 .. g0 + len < groups hold len * W pairs
            // of B's panel from g0 * W.
            unsafe {
                widen_run(
                    b.add(g0 * W),
                    ev[..len].as_flattened_mut(),
                    od[..len].as_flattened_mut(),
                )
            };
            let bw = |g: usize| [&wide[0][g], &wide[1][g]];
            // Four groups a round (RUN is a multiple of 4, so g0 is too,
            // and each U here divides 4).
            let whole = len - len % 4;
            for g in (0..whole).step_by(4) {
                for i in 0..4 {
                    step(g0 + g + i, bw(g + i), &mut sets[i % U]);
                }
            }
            for g in whole..len {
                step(g0 + g, bw(g), &mut sets[0]);
            }
        }
        store_sets!(
            sets,
            out,
            ldo,
            store,
            8,
            _mm256_loadu_ps,
            _mm256_storeu_ps,
            _mm256_storeu_ps,
            _mm256_add_ps,
            _mm256_sub_ps
        );
    }
    let vecs = rows.div_ceil(LANES);
    if cols == NR && vecs < MV {
        // SAFETY: as the caller promises, for NR columns; the first
        // `vecs` vectors hold every row asked for.
        unsafe { by_vecs!(vecs, tile, (groups, a, b, out, ldo, store), 4 : 1, 1) }
    } else {
        // SAFETY: as the caller promises, for W = cols columns.
        unsafe { by_width!(cols, tile, (groups, a, b, out, ldo, store), 2; 1:4 2:2 3:1 4:1) }
    }
}
