//! The x86-64 register tiles. Each keeps an `MR x NR` tile of C in
//! `MR / lanes x NR` vector registers; per step of `k` it loads the
//! `MR / lanes` vectors of A's micro-panel once and, for each of the `NR`
//! columns, broadcasts one element of B and fuses a multiply-add into each
//! accumulator of that column. AVX-512 (32 registers): 24 accumulators,
//! 4 x 6 for fp64 (on Zen 4 a little ahead of 3 x 8: one broadcast per
//! four multiply-adds, not three) and 3 x 8 for fp32; AVX2 (16
//! registers): 2 x 6 = 12. The loads are unaligned
//! (the packed panels are contiguous; alignment costs nothing here).
//!
//! Every tile is compiled once per width `W` (1 to NR columns): a product
//! with fewer columns than NR (a decode step's one activation row, the
//! last panel of any product) runs only the multiply-adds of its own
//! columns, not NR's. Each stores its columns `ldo` apart as [`Store`]
//! says: straight into C, or into the driver's tile buffer.

use std::arch::x86_64::*;

use super::Store;

/// Calls `$inner::<W>($args)` (or `$inner::<W, U>`, for the sets of
/// accumulators `U` each width takes) for the width `$cols` among `$w`.
macro_rules! by_width {
    ($cols:expr, $inner:ident, $args:tt, $($w:literal)*) => {
        match $cols {
            $($w => $inner::<$w> $args,)*
            _ => unreachable!("a tile of {} columns", $cols),
        }
    };
    ($cols:expr, $inner:ident, $args:tt, $($w:literal : $u:literal)*) => {
        match $cols {
            $($w => $inner::<$w, $u> $args,)*
            _ => unreachable!("a tile of {} columns", $cols),
        }
    };
}

/// Stores the accumulators `acc` (`W` columns of `MV` vectors) at `out`,
/// columns `ldo` apart, as `store` says (decided once, outside the loops,
/// so the accumulators stay in registers).
macro_rules! store_tile {
    ($acc:expr, $out:expr, $ldo:expr, $store:expr, $lanes:literal, $load:ident, $put:ident,
     $add:ident, $sub:ident) => {
        // SAFETY (every access): column j < W of the destination holds MR
        // values from j * ldo (the caller's promise), v * lanes + lanes
        // <= MR.
        match $store {
            Store::Set => {
                for (j, col) in $acc.iter().enumerate() {
                    for (v, c) in col.iter().enumerate() {
                        unsafe { $put($out.add(j * $ldo + v * $lanes), *c) };
                    }
                }
            }
            Store::Add => {
                for (j, col) in $acc.iter().enumerate() {
                    for (v, c) in col.iter().enumerate() {
                        let p = unsafe { $out.add(j * $ldo + v * $lanes) };
                        unsafe { $put(p, $add($load(p), *c)) };
                    }
                }
            }
            Store::Sub => {
                for (j, col) in $acc.iter().enumerate() {
                    for (v, c) in col.iter().enumerate() {
                        let p = unsafe { $out.add(j * $ldo + v * $lanes) };
                        unsafe { $put(p, $sub($load(p), *c)) };
                    }
                }
            }
        }
    };
}

/// One tile kernel: `$name` (B packed) and `$direct` (B read in place),
/// target feature `$feat`, vector type `$v` of `$lanes` elements of `$t`,
/// `$mv` vectors of A, tiles `$w` columns wide (the last is NR).
macro_rules! tile_kernel {
    ($name:ident, $direct:ident, $feat:literal, $t:ty, $v:ty, $lanes:literal, $mv:literal,
     $zero:ident, $load:ident, $set1:ident, $fma:ident, $store:ident,
     $add:ident, $sub:ident, [$($w:literal : $u:literal)*]) => {
        /// # Safety
        /// As [`super::MicroKernel`], with this kernel's MR and NR, on a CPU
        /// with the target feature.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn $name(
            k: usize,
            a: *const $t,
            b: *const $t,
            cols: usize,
            out: *mut $t,
            ldo: usize,
            store: Store,
        ) {
            // U sets of accumulators, step p adding into set p % U: a
            // narrow tile (a decode step's single column) has too few
            // accumulators to hide the multiply-add's latency otherwise.
            #[target_feature(enable = $feat)]
            unsafe fn tile<const W: usize, const U: usize>(
                k: usize,
                a: *const $t,
                b: *const $t,
                out: *mut $t,
                ldo: usize,
                store: Store,
            ) {
                const MR: usize = $lanes * $mv;
                let mut sets: [[[$v; $mv]; W]; U] = [[[$zero(); $mv]; W]; U];
                // Step p into one set of accumulators.
                let step = |p: usize, acc: &mut [[$v; $mv]; W]| {
                    // SAFETY: p < k, so the MR elements at p * MR and the
                    // W at p * W are inside the panels the caller gave.
                    let (ap, bp) = unsafe { (a.add(p * MR), b.add(p * W)) };
                    let mut av: [$v; $mv] = [$zero(); $mv];
                    for (v, x) in av.iter_mut().enumerate() {
                        // SAFETY: inside A's step (v * lanes + lanes <= MR).
                        *x = unsafe { $load(ap.add(v * $lanes)) };
                    }
                    for (j, col) in acc.iter_mut().enumerate() {
                        // SAFETY: j < W, inside B's step.
                        let bj = $set1(unsafe { *bp.add(j) });
                        for (c, x) in col.iter_mut().zip(av) {
                            *c = $fma(x, bj, *c);
                        }
                    }
                };
                let whole = k - k % U;
                for p in (0..whole).step_by(U) {
                    for (u, acc) in sets.iter_mut().enumerate() {
                        step(p + u, acc);
                    }
                }
                for p in whole..k {
                    step(p, &mut sets[0]);
                }
                let mut acc = sets[0];
                for set in &sets[1..] {
                    for (col, more) in acc.iter_mut().zip(set) {
                        for (c, m) in col.iter_mut().zip(more) {
                            *c = $add(*c, *m);
                        }
                    }
                }
                store_tile!(acc, out, ldo, store, $lanes, $load, $store, $add, $sub);
            }
            // SAFETY: as the caller promises, for W = cols columns.
            unsafe { by_width!(cols, tile, (k, a, b, out, ldo, store), $($w : $u)*) }
        }

        // The same tile reading B where it lies: column `j`'s depths are
        // consecutive, columns `ldb` apart.
        /// # Safety
        /// As [`super::DirectKernel`], with this kernel's MR and NR, on a
        /// CPU with the target feature.
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        pub(super) unsafe fn $direct(
            k: usize,
            a: *const $t,
            b: *const $t,
            ldb: usize,
            cols: usize,
            out: *mut $t,
            ldo: usize,
            store: Store,
        ) {
            #[target_feature(enable = $feat)]
            unsafe fn tile<const W: usize>(
                k: usize,
                a: *const $t,
                b: *const $t,
                ldb: usize,
                out: *mut $t,
                ldo: usize,
                store: Store,
            ) {
                const MR: usize = $lanes * $mv;
                let mut acc: [[$v; $mv]; W] = [[$zero(); $mv]; W];
                let mut at = [b; W];
                for (j, c) in at.iter_mut().enumerate() {
                    // SAFETY: column j < W starts inside B (the caller's
                    // promise).
                    *c = unsafe { b.add(j * ldb) };
                }
                for p in 0..k {
                    // SAFETY: p < k: A's step is inside its panel.
                    let ap = unsafe { a.add(p * MR) };
                    let mut av: [$v; $mv] = [$zero(); $mv];
                    for (v, x) in av.iter_mut().enumerate() {
                        // SAFETY: inside A's step (v * lanes + lanes <= MR).
                        *x = unsafe { $load(ap.add(v * $lanes)) };
                    }
                    for (col, c) in acc.iter_mut().zip(at) {
                        // SAFETY: depth p < k of column j, inside B.
                        let bj = $set1(unsafe { *c.add(p) });
                        for (c, x) in col.iter_mut().zip(av) {
                            *c = $fma(x, bj, *c);
                        }
                    }
                }
                store_tile!(acc, out, ldo, store, $lanes, $load, $store, $add, $sub);
            }
            // SAFETY: as the caller promises, for W = cols columns.
            unsafe { by_width!(cols, tile, (k, a, b, ldb, out, ldo, store), $($w)*) }
        }
    };
}

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
