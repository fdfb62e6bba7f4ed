//! The tiles of a [`Pair`](super::Pair) as a macro each ISA's module
//! instantiates: one column of `2·MR` values from two adjacent
//! micro-panels of A read side by side, each half summed as the kernel's
//! own tile of one column sums it (its sets of accumulators in the same
//! rounds of four steps), so
//! the pair's values are the single tiles' bit for bit.
//!
//! Unlike the single tiles, a pair asks for no lines ahead
//! ([`crate::prefetch::ahead`]): its two streams are the hardware
//! prefetchers' to follow. With the asks, one thread's one-column
//! products over a 32000 x 768 matrix ran 1.11x the single tiles in f32
//! and 0.95x in fp16; without, 1.18x and 1.11x (`--example gemv`, Zen 4,
//! seven interleaved rounds, medians).

/// One pair of tiles: module `$name` with `run` (B packed) and `direct`
/// (B in place), target feature `$feat`, A and B of `$t` (A's vectors
/// loaded by `$load_a`, B's values by `$value`), fp32 (or the element's
/// own) vectors `$v` of `$lanes`, `$mv` of them a tile, `$u` sets of
/// accumulators over a packed B and `$du` over B in place (the single
/// tiles' at one column). A last
/// tile of `MR` rows or fewer runs on the single tile `$single`.
macro_rules! pair_kernel {
    ($name:ident, $feat:literal, $t:ty, $acc:ty, $v:ty, $lanes:literal, $mv:literal, $u:literal,
     $du:literal,
     $zero:ident, $load_a:ident, $value:ident, $set1:ident, $fma:ident, $load:ident,
     $put:ident, $add:ident, $sub:ident, $single:path) => {
        /// The pair's kernels.
        pub(super) mod $name {
            use super::*;

            /// Rows of one of the pair's tiles.
            const MR: usize = $lanes * $mv;

            /// Both panels (`a`, `k` steps, and the next `k` right after
            /// it) times B's one column (`k` values at `b`, packed or in
            /// place alike), into `U` sets of accumulators in the single
            /// tile's rounds: four steps, step i into set i % U, the rest
            /// into the first.
            ///
            /// # Safety
            /// As [`run`] for `2·MR` rows.
            #[target_feature(enable = $feat)]
            unsafe fn both<const U: usize>(
                k: usize,
                a: *const $t,
                b: *const $t,
                out: *mut $acc,
                ldo: usize,
                store: Store,
            ) {
                // SAFETY: the second panel follows the first (the caller's
                // 2·MR rows, k deep).
                let second = unsafe { a.add(k * MR) };
                let mut sets: [[[$v; 2 * $mv]; 1]; U] = [[[$zero(); 2 * $mv]; 1]; U];
                let step = |p: usize, acc: &mut [[$v; 2 * $mv]; 1]| {
                    // SAFETY: p < k: step p of both panels and B's value p
                    // are inside what the caller gave.
                    let (p0, p1, bj) =
                        unsafe { (a.add(p * MR), second.add(p * MR), $set1($value(b.add(p)))) };
                    for v in 0..$mv {
                        // SAFETY: inside each panel's step (v * lanes +
                        // lanes <= MR).
                        let (x0, x1) =
                            unsafe { ($load_a(p0.add(v * $lanes)), $load_a(p1.add(v * $lanes))) };
                        acc[0][v] = $fma(x0, bj, acc[0][v]);
                        acc[0][$mv + v] = $fma(x1, bj, acc[0][$mv + v]);
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
                store_sets!(sets, out, ldo, store, $lanes, $load, $put, $put, $add, $sub);
            }

            /// # Safety
            /// As [`super::super::MicroKernel`] for `2·MR` rows (two
            /// panels of MR, the second right after the first) and one
            /// column, on a CPU with the target feature.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn run(
                k: usize,
                a: *const $t,
                b: *const $t,
                rows: usize,
                cols: usize,
                out: *mut $acc,
                ldo: usize,
                store: Store,
            ) {
                debug_assert_eq!(cols, 1);
                if rows <= MR {
                    // SAFETY: the first panel is one of the single tile's,
                    // its destination the first MR rows of the pair's.
                    return unsafe { $single(k, a, b, rows, 1, out, ldo, store) };
                }
                // SAFETY: the caller's, for both panels.
                unsafe { both::<$u>(k, a, b, out, ldo, store) }
            }

            /// # Safety
            /// As [`super::super::DirectKernel`] for `2·MR` rows (two
            /// panels of MR, the second right after the first) and one
            /// column, on a CPU with the target feature.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn direct(
                k: usize,
                a: *const $t,
                b: *const $t,
                ldb: usize,
                cols: usize,
                out: *mut $acc,
                ldo: usize,
                store: Store,
            ) {
                debug_assert_eq!(cols, 1);
                // One column: its stride is never taken.
                let _ = ldb;
                // SAFETY: the caller's, for both panels; B's column is its
                // k consecutive values, as a packed one-column panel is.
                unsafe { both::<$du>(k, a, b, out, ldo, store) }
            }
        }
    };
}
