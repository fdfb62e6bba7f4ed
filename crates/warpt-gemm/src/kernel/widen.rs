//! The register tiles of [`Half`]: fp32's tiles (`tile`'s, the same
//! accumulators, multiply-adds and stores) whose operands are fp16 in
//! memory, widened exactly by F16C's `vcvtph2ps` as they are loaded. A
//! step's vectors of A are converted a vector at a time; B's packed panel
//! a run of [`RUN`] steps at a time into an fp32 buffer on the stack,
//! whose values the steps broadcast from memory as fp32's tiles do (a
//! step's values converted and broadcast from a register took a shuffle
//! each, on the ports the multiply-adds need: 59% of fp32's rate at n =
//! 1024 on one core of an Intel Xeon, against 79% so, `--example rate`).
//! Read in place, B is widened a value at a time. Products of two
//! fp16 are exact in fp32, so these compute what the portable kernel does,
//! up to the order of the sums.

use std::arch::x86_64::*;

use super::{Half, Store};

/// `h` as fp32 (exact).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn widen(h: Half) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(h.0))))
}

/// Steps of B's packed panel widened into the stack buffer at a time:
/// 4 KiB at the widest tile (8 columns), read back from L1.
const RUN: usize = 128;

/// `out.len()` values at `src`, widened to fp32 into `out`: eight at a
/// time, the rest one by one.
///
/// # Safety
/// `out.len()` values at `src`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn widen_run(src: *const Half, out: &mut [f32]) {
    let whole = out.len() / 8 * 8;
    for (i, o) in out[..whole].chunks_exact_mut(8).enumerate() {
        // SAFETY: 8 values (16 bytes) at src + 8i, inside the caller's
        // run; `o` is 8 f32.
        unsafe {
            let v = _mm256_cvtph_ps(_mm_loadu_si128(src.add(8 * i).cast()));
            _mm256_storeu_ps(o.as_mut_ptr(), v);
        }
    }
    for (i, o) in out.iter_mut().enumerate().skip(whole) {
        // SAFETY: i < out.len(): inside the caller's run.
        *o = widen(unsafe { *src.add(i) });
    }
}

/// 16 values at `p`, widened to an AVX-512 vector.
///
/// # Safety
/// 16 values (32 bytes) at `p`.
#[inline]
#[target_feature(enable = "avx512f,f16c")]
unsafe fn load16(p: *const Half) -> __m512 {
    // SAFETY: the caller's 32 bytes.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p.cast()) })
}

/// 8 values at `p`, widened to an AVX2 vector.
///
/// # Safety
/// 8 values (16 bytes) at `p`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load8(p: *const Half) -> __m256 {
    // SAFETY: the caller's 16 bytes.
    _mm256_cvtph_ps(unsafe { _mm_loadu_si128(p.cast()) })
}

/// One tile kernel for [`Half`] as `tile_kernel!` makes fp32's: `$name`
/// (B packed) and `$direct` (B read in place), target feature `$feat`,
/// fp32 vectors `$v` of `$lanes`, `$mv` of them for A's rows (loaded by
/// `$load_a`), tiles `$w` columns wide each with `$u` sets of
/// accumulators (the last, `$nr`, is NR), and at NR tiles of `$short`
/// vectors of rows for a last panel of rows that fills fewer.
macro_rules! widen_kernel {
    ($name:ident, $direct:ident, $feat:literal, $v:ty, $lanes:literal, $mv:literal,
     $zero:ident, $load_a:ident, $set1:ident, $fma:ident, $load:ident, $store:ident,
     $add:ident, $sub:ident, [$($w:literal : $u:literal)*],
     short: [$($short:literal)*], $nr:literal : $unr:literal) => {
        /// # Safety
        /// As [`super::MicroKernel`], with this kernel's MR and NR, on a CPU
        /// with the target feature.
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        pub(super) unsafe fn $name(
            k: usize,
            a: *const Half,
            b: *const Half,
            rows: usize,
            cols: usize,
            out: *mut f32,
            ldo: usize,
            store: Store,
        ) {
            // U sets of accumulators, step p adding into set p % U (a
            // narrow tile hides the multiply-add's latency so); V of the
            // MV vectors of rows computed and stored.
            #[target_feature(enable = $feat)]
            unsafe fn tile<const W: usize, const U: usize, const V: usize>(
                k: usize,
                a: *const Half,
                b: *const Half,
                out: *mut f32,
                ldo: usize,
                store: Store,
            ) {
                const MR: usize = $lanes * $mv;
                let mut sets: [[[$v; V]; W]; U] = [[[$zero(); V]; W]; U];
                // B's steps p0 .. p0 + RUN, widened.
                let mut wide = [[0f32; W]; RUN];
                // Step p, its B values at `bw`.
                let step = |p: usize, bw: &[f32; W], acc: &mut [[$v; V]; W]| {
                    // SAFETY: p < k, so the MR values at p * MR are inside
                    // A's panel.
                    let ap = unsafe { a.add(p * MR) };
                    crate::prefetch::ahead::<Half, MR>(ap);
                    let mut av: [$v; V] = [$zero(); V];
                    for (v, x) in av.iter_mut().enumerate() {
                        // SAFETY: inside A's step (v * lanes + lanes <= MR).
                        *x = unsafe { $load_a(ap.add(v * $lanes)) };
                    }
                    for (col, &bj) in acc.iter_mut().zip(bw) {
                        let bj = $set1(bj);
                        for (c, x) in col.iter_mut().zip(av) {
                            *c = $fma(x, bj, *c);
                        }
                    }
                };
                for p0 in (0..k).step_by(RUN) {
                    let len = RUN.min(k - p0);
                    let run = wide[..len].as_flattened_mut();
                    // SAFETY: steps p0 .. p0 + len < k hold len * W values
                    // of B's panel from p0 * W.
                    unsafe { widen_run(b.add(p0 * W), run) };
                    // Four steps a round (RUN is a multiple of 4, so p0 is
                    // too, and each U here divides 4).
                    let whole = len - len % 4;
                    for p in (0..whole).step_by(4) {
                        for i in 0..4 {
                            step(p0 + p + i, &wide[p + i], &mut sets[i % U]);
                        }
                    }
                    for p in whole..len {
                        step(p0 + p, &wide[p], &mut sets[0]);
                    }
                }
                store_sets!(sets, out, ldo, store, $lanes, $load, $store, $store, $add, $sub);
            }
            let vecs = rows.div_ceil($lanes);
            if cols == $nr && vecs < $mv {
                // SAFETY: as the caller promises, for NR columns; the
                // first `vecs` vectors hold every row asked for.
                unsafe { by_vecs!(vecs, tile, (k, a, b, out, ldo, store), $nr : $unr, $($short)*) }
            } else {
                // SAFETY: as the caller promises, for W = cols columns.
                unsafe { by_width!(cols, tile, (k, a, b, out, ldo, store), $mv; $($w : $u)*) }
            }
        }

        /// # Safety
        /// As [`super::DirectKernel`], with this kernel's MR and NR, on a
        /// CPU with the target feature.
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        pub(super) unsafe fn $direct(
            k: usize,
            a: *const Half,
            b: *const Half,
            ldb: usize,
            cols: usize,
            out: *mut f32,
            ldo: usize,
            store: Store,
        ) {
            #[target_feature(enable = $feat)]
            unsafe fn tile<const W: usize, const U: usize>(
                k: usize,
                a: *const Half,
                b: *const Half,
                ldb: usize,
                out: *mut f32,
                ldo: usize,
                store: Store,
            ) {
                const MR: usize = $lanes * $mv;
                let mut sets: [[[$v; $mv]; W]; U] = [[[$zero(); $mv]; W]; U];
                let mut at = [b; W];
                for (j, c) in at.iter_mut().enumerate() {
                    // SAFETY: column j < W starts inside B (the caller's
                    // promise).
                    *c = unsafe { b.add(j * ldb) };
                }
                let step = |p: usize, acc: &mut [[$v; $mv]; W]| {
                    // SAFETY: p < k: A's step is inside its panel.
                    let ap = unsafe { a.add(p * MR) };
                    crate::prefetch::ahead::<Half, MR>(ap);
                    let mut av: [$v; $mv] = [$zero(); $mv];
                    for (v, x) in av.iter_mut().enumerate() {
                        // SAFETY: inside A's step (v * lanes + lanes <= MR).
                        *x = unsafe { $load_a(ap.add(v * $lanes)) };
                    }
                    for (col, c) in acc.iter_mut().zip(at) {
                        // SAFETY: depth p < k of column j, inside B.
                        let bj = $set1(widen(unsafe { *c.add(p) }));
                        for (c, x) in col.iter_mut().zip(av) {
                            *c = $fma(x, bj, *c);
                        }
                    }
                };
                let whole = k - k % 4;
                for p in (0..whole).step_by(4) {
                    for i in 0..4 {
                        step(p + i, &mut sets[i % U]);
                    }
                }
                for p in whole..k {
                    step(p, &mut sets[0]);
                }
                store_sets!(sets, out, ldo, store, $lanes, $load, $store, $store, $add, $sub);
            }
            // SAFETY: as the caller promises, for W = cols columns.
            unsafe { by_width!(cols, tile, (k, a, b, ldb, out, ldo, store), $($w : $u)*) }
        }
    };
}

// 48 x 8 as fp32's (24 accumulators).
widen_kernel!(
    half_avx512,
    half_avx512_direct,
    "avx512f,avx2,fma,f16c",
    __m512,
    16,
    3,
    _mm512_setzero_ps,
    load16,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    [1:3 2:2 3:1 4:1 5:1 6:1 7:1 8:1],
    short: [1 2],
    8:1
);

// 16 x 6 as fp32's (12 accumulators).
widen_kernel!(
    half_avx2,
    half_avx2_direct,
    "avx2,fma,f16c",
    __m256,
    8,
    2,
    _mm256_setzero_ps,
    load8,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_add_ps,
    _mm256_sub_ps,
    [1:4 2:2 3:1 4:1 5:1 6:1],
    short: [1],
    6:1
);
