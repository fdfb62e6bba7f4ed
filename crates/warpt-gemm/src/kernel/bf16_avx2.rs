//! bf16's tile on AVX2 (no AVX512_BF16): bf16 in memory, in the pairs of
//! depths the dot-product tiles read (`x86::dot_kernel!`), widened exactly
//! to fp32 as they are loaded and multiplied by fp32's multiply-adds into
//! fp32 accumulators. A bf16 is the top half of an fp32, so a 32-bit lane
//! holding a row's pair is two fp32 by one shift (the even depth) and a
//! mask (the odd; two shifts in the intrinsic tiles, no register held). B's packed pairs are widened a run of [`RUN`] groups at
//! a time into fp32 buffers on the stack, broadcast from there as fp32's
//! tiles broadcast theirs (see `widen.rs` for why not from a register).
//! Products of two bf16 are exact in fp32: this computes what the
//! portable kernel does, up to the order of the sums.
//!
//! The whole 16 x 6 tile (fp32's) is written in assembly ([`full`]): its
//! twelve accumulators, A's two vectors, a broadcast and the mask are all
//! sixteen registers, and the compiler, given the same step as
//! intrinsics, spilled accumulators to the stack whichever way it was
//! written (27-31 GFLOP/s at n = 1024 against fp32's 62-77; Zen 3, one
//! core, `--example rate`). The narrower tiles (a product's last columns,
//! a decode step's one) are intrinsics: they leave registers free.
//!
//! Why: without it a CPU without AVX512_BF16 held bf16 weights as fp32,
//! and a decode step, bound by reading the weights, read twice the bytes
//! llama.cpp reads (`llm_infer` bf16 batch 1 TPOT 0.61-0.74x llama.cpp
//! on Zen 3, where f32 was 1.09-1.78x).

use std::arch::x86_64::*;

use super::{Bf16, Store};

/// Groups (pairs of depths) of B's packed panel widened at a time: 3 KiB
/// of fp32 at the widest tile (6 columns), read back from L1.
const RUN: usize = 64;

/// Rows a vector holds.
const LANES: usize = 8;

/// Vectors of rows in a full tile (MR 16).
const MV: usize = 2;

/// Columns of the widest tile (NR).
const NR: usize = 6;

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

/// The 16 x 6 tile: as [`super::MicroKernel`] for [`Bf16`] (`groups`
/// pairs of depths), up to 16 rows and 6 columns.
///
/// # Safety
/// As [`super::MicroKernel`], with MR 16 and NR 6, on a CPU with AVX2 and
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
    if cols == NR && vecs == MV {
        // SAFETY: as the caller promises, for the whole tile.
        unsafe { full(groups, a.cast(), b.cast(), out, ldo, store) }
    } else if cols == NR {
        // SAFETY: as the caller promises, for NR columns; the first
        // `vecs` vectors hold every row asked for.
        unsafe { by_vecs!(vecs, tile, (groups, a, b, out, ldo, store), 6 : 1, 1) }
    } else {
        // SAFETY: as the caller promises, for W = cols columns.
        unsafe { by_width!(cols, tile, (groups, a, b, out, ldo, store), 2; 1:4 2:2 3:1 4:1 5:1) }
    }
}

/// The whole tile, 16 rows by 6 columns, `groups` pairs of depths: the
/// accumulators in `ymm0`-`ymm11` (column j's two vectors in `2j` and
/// `2j + 1`), A's vectors in `ymm12`-`ymm13`, B's broadcast in `ymm14`,
/// the odd depths' mask in `ymm15`. A group's step: A's two vectors of
/// pairs loaded and shifted (the even depths), twelve multiply-adds on
/// the six even values of B; A's pairs masked straight from memory (the
/// odd depths, an L1 hit), twelve on the odd values. The sums' order is
/// the intrinsic tiles' at one set.
///
/// # Safety
/// As [`super::MicroKernel`] for 16 rows and 6 columns: `groups` steps of
/// 16 pairs at `a`, of 6 at `b`; on a CPU with AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn full(
    groups: usize,
    a: *const u32,
    b: *const u32,
    out: *mut f32,
    ldo: usize,
    store: Store,
) {
    let mut acc = [[_mm256_setzero_ps(); MV]; NR];
    let (mut ev, mut od) = ([0f32; RUN * NR], [0f32; RUN * NR]);
    for g0 in (0..groups).step_by(RUN) {
        let len = RUN.min(groups - g0);
        // SAFETY: groups g0 .. g0 + len <= groups hold len * NR pairs of
        // B's panel from g0 * NR; both buffers hold RUN * NR values.
        unsafe { widen_run(b.add(g0 * NR), &mut ev[..len * NR], &mut od[..len * NR]) };
        // SAFETY: `acc` is twelve vectors (384 bytes), read and written
        // back whole; the loop runs len >= 1 groups, reading 64 bytes of
        // A's panel a group from its group g0 (inside it: g0 + len <=
        // groups) and 24 bytes of each buffer a group (len * NR values
        // filled above); the prefetch reads nothing. Every vector
        // register it writes is declared clobbered.
        unsafe {
            std::arch::asm!(
                "vmovups ymm0, [{c}]",
                "vmovups ymm1, [{c} + 32]",
                "vmovups ymm2, [{c} + 64]",
                "vmovups ymm3, [{c} + 96]",
                "vmovups ymm4, [{c} + 128]",
                "vmovups ymm5, [{c} + 160]",
                "vmovups ymm6, [{c} + 192]",
                "vmovups ymm7, [{c} + 224]",
                "vmovups ymm8, [{c} + 256]",
                "vmovups ymm9, [{c} + 288]",
                "vmovups ymm10, [{c} + 320]",
                "vmovups ymm11, [{c} + 352]",
                "vpcmpeqd ymm15, ymm15, ymm15",
                "vpslld ymm15, ymm15, 16",
                "2:",
                "prefetcht0 [{a} + 512]",
                "vmovdqu ymm12, [{a}]",
                "vpslld ymm12, ymm12, 16",
                "vmovdqu ymm13, [{a} + 32]",
                "vpslld ymm13, ymm13, 16",
                "vbroadcastss ymm14, [{e}]",
                "vfmadd231ps ymm0, ymm12, ymm14",
                "vfmadd231ps ymm1, ymm13, ymm14",
                "vbroadcastss ymm14, [{e} + 4]",
                "vfmadd231ps ymm2, ymm12, ymm14",
                "vfmadd231ps ymm3, ymm13, ymm14",
                "vbroadcastss ymm14, [{e} + 8]",
                "vfmadd231ps ymm4, ymm12, ymm14",
                "vfmadd231ps ymm5, ymm13, ymm14",
                "vbroadcastss ymm14, [{e} + 12]",
                "vfmadd231ps ymm6, ymm12, ymm14",
                "vfmadd231ps ymm7, ymm13, ymm14",
                "vbroadcastss ymm14, [{e} + 16]",
                "vfmadd231ps ymm8, ymm12, ymm14",
                "vfmadd231ps ymm9, ymm13, ymm14",
                "vbroadcastss ymm14, [{e} + 20]",
                "vfmadd231ps ymm10, ymm12, ymm14",
                "vfmadd231ps ymm11, ymm13, ymm14",
                "vpand ymm12, ymm15, [{a}]",
                "vpand ymm13, ymm15, [{a} + 32]",
                "vbroadcastss ymm14, [{o}]",
                "vfmadd231ps ymm0, ymm12, ymm14",
                "vfmadd231ps ymm1, ymm13, ymm14",
                "vbroadcastss ymm14, [{o} + 4]",
                "vfmadd231ps ymm2, ymm12, ymm14",
                "vfmadd231ps ymm3, ymm13, ymm14",
                "vbroadcastss ymm14, [{o} + 8]",
                "vfmadd231ps ymm4, ymm12, ymm14",
                "vfmadd231ps ymm5, ymm13, ymm14",
                "vbroadcastss ymm14, [{o} + 12]",
                "vfmadd231ps ymm6, ymm12, ymm14",
                "vfmadd231ps ymm7, ymm13, ymm14",
                "vbroadcastss ymm14, [{o} + 16]",
                "vfmadd231ps ymm8, ymm12, ymm14",
                "vfmadd231ps ymm9, ymm13, ymm14",
                "vbroadcastss ymm14, [{o} + 20]",
                "vfmadd231ps ymm10, ymm12, ymm14",
                "vfmadd231ps ymm11, ymm13, ymm14",
                "add {a}, 64",
                "add {e}, 24",
                "add {o}, 24",
                "dec {n}",
                "jnz 2b",
                "vmovups [{c}], ymm0",
                "vmovups [{c} + 32], ymm1",
                "vmovups [{c} + 64], ymm2",
                "vmovups [{c} + 96], ymm3",
                "vmovups [{c} + 128], ymm4",
                "vmovups [{c} + 160], ymm5",
                "vmovups [{c} + 192], ymm6",
                "vmovups [{c} + 224], ymm7",
                "vmovups [{c} + 256], ymm8",
                "vmovups [{c} + 288], ymm9",
                "vmovups [{c} + 320], ymm10",
                "vmovups [{c} + 352], ymm11",
                c = in(reg) acc.as_mut_ptr(),
                a = inout(reg) a.add(g0 * LANES * MV) => _,
                e = inout(reg) ev.as_ptr() => _,
                o = inout(reg) od.as_ptr() => _,
                n = inout(reg) len => _,
                out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
                out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _,
                out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _,
                out("ymm12") _, out("ymm13") _, out("ymm14") _, out("ymm15") _,
                options(nostack),
            )
        }
    }
    store_tile!(
        acc,
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
