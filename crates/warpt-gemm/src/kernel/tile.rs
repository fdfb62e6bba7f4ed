//! The register tile every SIMD kernel is made of, as macros each ISA's
//! module instantiates with its vector type and intrinsics (`x86`: AVX2
//! and AVX-512; `neon`: aarch64). A tile keeps an `MR x NR` block of C in
//! `MR / lanes x NR` vector registers; per step of `k` it loads the
//! `MR / lanes` vectors of A's micro-panel once and, for each of the `NR`
//! columns, broadcasts one element of B and fuses a multiply-add into each
//! accumulator of that column.
//!
//! Every tile is compiled once per width `W` (1 to NR columns): a product
//! with fewer columns than NR (a decode step's one activation row, the
//! last panel of any product) runs only the multiply-adds of its own
//! columns, not NR's; at NR, once more per count of vectors of rows below
//! the tile's, for a last panel of rows that fills fewer (1024 rows on a
//! 48-row tile end in 16). Each stores its columns `ldo` apart as `Store` says:
//! straight into C, or into the driver's tile buffer. The instantiating
//! module brings `Store` into scope; the intrinsics are named by the
//! caller (`$fma(a, b, c)` is `a·b + c`).

/// Calls `$inner::<W, V>` (or `$inner::<W, U, V>`) with `V` vectors of
/// rows, for the count `$vecs` among `$v`, at the one width `W` (and its
/// `U`).
macro_rules! by_vecs {
    ($vecs:expr, $inner:ident, $args:tt, $w:literal : $u:literal, $($v:literal)*) => {
        match $vecs {
            $($v => $inner::<$w, $u, $v> $args,)*
            _ => unreachable!("a tile of {} vectors", $vecs),
        }
    };
    ($vecs:expr, $inner:ident, $args:tt, $w:literal, $($v:literal)*) => {
        match $vecs {
            $($v => $inner::<$w, $v> $args,)*
            _ => unreachable!("a tile of {} vectors", $vecs),
        }
    };
}

/// Calls `$inner::<W>($args)` (or `$inner::<W, U>`, for the sets of
/// accumulators `U` each width takes; either followed by `$mv`, all of
/// the tile's vectors of rows, where given) for the width `$cols` among
/// `$w`.
macro_rules! by_width {
    ($cols:expr, $inner:ident, $args:tt, $mv:literal; $($w:literal : $u:literal)*) => {
        match $cols {
            $($w => $inner::<$w, $u, $mv> $args,)*
            _ => unreachable!("a tile of {} columns", $cols),
        }
    };
    ($cols:expr, $inner:ident, $args:tt, $mv:literal; $($w:literal)*) => {
        match $cols {
            $($w => $inner::<$w, $mv> $args,)*
            _ => unreachable!("a tile of {} columns", $cols),
        }
    };
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
/// so the accumulators stay in registers): `$put` stores a vector,
/// `$stream` stores it past the caches ([`Store::Stream`]; a kernel
/// without streaming stores passes `$put` again).
macro_rules! store_tile {
    ($acc:expr, $out:expr, $ldo:expr, $store:expr, $lanes:literal, $load:ident, $put:ident,
     $stream:ident, $add:ident, $sub:ident) => {
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
            // Each vector's address aligned to its size: the caller's
            // promise with this store.
            Store::Stream => {
                for (j, col) in $acc.iter().enumerate() {
                    for (v, c) in col.iter().enumerate() {
                        unsafe { $stream($out.add(j * $ldo + v * $lanes), *c) };
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

/// Adds the sets of accumulators `sets` (each `W` columns of vectors;
/// a narrow tile's steps alternate between them) into the first and
/// stores it as [`store_tile!`] does.
macro_rules! store_sets {
    ($sets:expr, $out:expr, $ldo:expr, $store:expr, $lanes:literal, $load:ident, $put:ident,
     $stream:ident, $add:ident, $sub:ident) => {
        let mut acc = $sets[0];
        for set in &$sets[1..] {
            for (col, more) in acc.iter_mut().zip(set) {
                for (c, m) in col.iter_mut().zip(more) {
                    *c = $add(*c, *m);
                }
            }
        }
        store_tile!(
            acc, $out, $ldo, $store, $lanes, $load, $put, $stream, $add, $sub
        );
    };
}

/// Combines the sets of accumulators `sets` into the first and stores
/// it as [`finish_tile!`] does.
macro_rules! finish_sets {
    ($sets:expr, $out:expr, $ldo:expr, $store:expr, $fin:expr, $lanes:literal, $load:ident,
     $put:ident, $stream:ident, $add:ident, $sub:ident, $max:ident, $zero:ident) => {
        let mut acc = $sets[0];
        for set in &$sets[1..] {
            for (col, more) in acc.iter_mut().zip(set) {
                for (c, m) in col.iter_mut().zip(more) {
                    *c = $add(*c, *m);
                }
            }
        }
        finish_tile!(
            acc, $out, $ldo, $store, $fin, $lanes, $load, $put, $stream, $add, $sub, $max, $zero
        );
    };
}

/// Stores the accumulators `acc` as [`store_tile!`] does, with the tile's
/// epilogue `$fin` (a [`TileEpilogue`](crate::epilogue::TileEpilogue))
/// applied in the registers on the way: each value plus its row's bias
/// and the added matrix's element, then the ReLU. The tile is written
/// once, not stored, read back and written again by a pass of its own.
macro_rules! finish_tile {
    ($acc:expr, $out:expr, $ldo:expr, $store:expr, $fin:expr, $lanes:literal, $load:ident,
     $put:ident, $stream:ident, $add:ident, $sub:ident, $max:ident, $zero:ident) => {
        let fin = $fin;
        let bias = fin.bias.map(|b| b.as_ptr());
        let added = fin.add.map(|(m, ld)| (m.as_ptr(), ld));
        // SAFETY (every access): column j < W of the destination holds MR
        // values from j * ldo, the bias MR values and the added matrix's
        // column j MR values from j * ld (the caller's promise), and
        // v * lanes + lanes <= MR.
        for (j, col) in $acc.iter().enumerate() {
            for (v, c) in col.iter().enumerate() {
                let p = unsafe { $out.add(j * $ldo + v * $lanes) };
                let mut x = match $store {
                    Store::Set | Store::Stream => *c,
                    Store::Add => $add(unsafe { $load(p) }, *c),
                    Store::Sub => $sub(unsafe { $load(p) }, *c),
                };
                if let Some(b) = bias {
                    x = $add(x, unsafe { $load(b.add(v * $lanes)) });
                }
                if let Some((m, ld)) = added {
                    x = $add(x, unsafe { $load(m.add(j * ld + v * $lanes)) });
                }
                if fin.relu {
                    x = $max(x, $zero());
                }
                if $store == Store::Stream {
                    unsafe { $stream(p, x) };
                } else {
                    unsafe { $put(p, x) };
                }
            }
        }
    };
}

/// One tile kernel: `$name` (B packed) and `$direct` (B read in place),
/// target feature `$feat`, vector type `$v` of `$lanes` elements of `$t`,
/// `$mv` vectors of A, tiles `$w` columns wide (the last, `$nr`, is NR),
/// and at that width tiles of `$short` vectors of rows (each count below
/// `$mv`) for a last panel of rows that fills fewer. `$max(x, $zero())`
/// is the ReLU (zero for a NaN, as `_mm512_max_ps` with zero second);
/// `$stream` the streaming store ([`store_tile!`]).
///
/// The tiles live in a module named `$name`, with `finishing` and
/// `direct_finishing`: the same two kernels applying a tile's epilogue
/// as they store it ([`FinishingKernel`](super::finishing::FinishingKernel)).
macro_rules! tile_kernel {
    ($name:ident, $direct:ident, $feat:literal, $t:ty, $v:ty, $lanes:literal, $mv:literal,
     $zero:ident, $load:ident, $set1:ident, $fma:ident, $store:ident, $stream:ident,
     $add:ident, $sub:ident, $max:ident, [$($w:literal : $u:literal)*],
     short: [$($short:literal)*], $nr:literal : $unr:literal) => {
        pub(super) use $name::direct as $direct;
        pub(super) use $name::run as $name;

        /// The tile's kernels.
        pub(super) mod $name {
            use super::*;
            use crate::epilogue::TileEpilogue;

            /// `W` columns, `V` of the MV vectors of rows computed and
            /// stored, `U` sets of accumulators: step p adds into set
            /// p % U (a narrow tile, a decode step's single column, has
            /// too few accumulators to hide the multiply-add's latency
            /// otherwise). With `fin`, its epilogue applied as it stores.
            ///
            /// # Safety
            /// As [`run`] (and [`finishing`] with `fin`) for W columns.
            #[target_feature(enable = $feat)]
            unsafe fn tile<const W: usize, const U: usize, const V: usize>(
                k: usize,
                a: *const $t,
                b: *const $t,
                out: *mut $t,
                ldo: usize,
                store: Store,
                fin: Option<&TileEpilogue<'_, $t>>,
            ) {
                const MR: usize = $lanes * $mv;
                let mut sets: [[[$v; V]; W]; U] = [[[$zero(); V]; W]; U];
                // Step p into one set of accumulators.
                let step = |p: usize, acc: &mut [[$v; V]; W]| {
                    // SAFETY: p < k, so the MR elements at p * MR and the
                    // W at p * W are inside the panels the caller gave.
                    let (ap, bp) = unsafe { (a.add(p * MR), b.add(p * W)) };
                    crate::prefetch::ahead::<$t, MR>(ap);
                    let mut av: [$v; V] = [$zero(); V];
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
                // Four steps a round (each U here divides 4): one loop
                // branch per 48 multiply-adds of a full AVX2 tile.
                let whole = k - k % 4;
                for p in (0..whole).step_by(4) {
                    for i in 0..4 {
                        step(p + i, &mut sets[i % U]);
                    }
                }
                for p in whole..k {
                    step(p, &mut sets[0]);
                }
                match fin {
                    None => {
                        store_sets!(
                            sets, out, ldo, store, $lanes, $load, $store, $stream, $add, $sub
                        );
                    }
                    Some(fin) => {
                        finish_sets!(
                            sets, out, ldo, store, fin, $lanes, $load, $store, $stream, $add,
                            $sub, $max, $zero
                        );
                    }
                }
            }

            /// The tile reading B where it lies: column `j`'s depths are
            /// consecutive, columns `ldb` apart.
            ///
            /// # Safety
            /// As [`direct`] (and [`direct_finishing`] with `fin`) for W
            /// columns.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn tile_direct<const W: usize>(
                k: usize,
                a: *const $t,
                b: *const $t,
                ldb: usize,
                out: *mut $t,
                ldo: usize,
                store: Store,
                fin: Option<&TileEpilogue<'_, $t>>,
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
                match fin {
                    None => {
                        store_tile!(
                            acc, out, ldo, store, $lanes, $load, $store, $stream, $add, $sub
                        );
                    }
                    Some(fin) => {
                        finish_tile!(
                            acc, out, ldo, store, fin, $lanes, $load, $store, $stream, $add,
                            $sub, $max, $zero
                        );
                    }
                }
            }

            /// # Safety
            /// As [`super::super::MicroKernel`], with this kernel's MR and
            /// NR, on a CPU with the target feature.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn run(
                k: usize,
                a: *const $t,
                b: *const $t,
                rows: usize,
                cols: usize,
                out: *mut $t,
                ldo: usize,
                store: Store,
            ) {
                let vecs = rows.div_ceil($lanes);
                if cols == $nr && vecs < $mv {
                    // SAFETY: as the caller promises, for NR columns; the
                    // first `vecs` vectors hold every row asked for.
                    unsafe {
                        by_vecs!(vecs, tile, (k, a, b, out, ldo, store, None), $nr : $unr, $($short)*)
                    }
                } else {
                    // SAFETY: as the caller promises, for W = cols columns.
                    unsafe {
                        by_width!(cols, tile, (k, a, b, out, ldo, store, None), $mv; $($w : $u)*)
                    }
                }
            }

            /// # Safety
            /// As [`FinishingKernel`](super::super::finishing::FinishingKernel), with this kernel's MR
            /// and NR, on a CPU with the target feature.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn finishing(
                k: usize,
                a: *const $t,
                b: *const $t,
                cols: usize,
                out: *mut $t,
                ldo: usize,
                store: Store,
                fin: &TileEpilogue<'_, $t>,
            ) {
                // SAFETY: as the caller promises, for W = cols columns of
                // MR rows.
                unsafe {
                    by_width!(cols, tile, (k, a, b, out, ldo, store, Some(fin)), $mv; $($w : $u)*)
                }
            }

            /// # Safety
            /// As [`super::super::DirectKernel`], with this kernel's MR and
            /// NR, on a CPU with the target feature.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn direct(
                k: usize,
                a: *const $t,
                b: *const $t,
                ldb: usize,
                cols: usize,
                out: *mut $t,
                ldo: usize,
                store: Store,
            ) {
                // SAFETY: as the caller promises, for W = cols columns.
                unsafe {
                    by_width!(cols, tile_direct, (k, a, b, ldb, out, ldo, store, None), $($w)*)
                }
            }

            /// # Safety
            /// As [`FinishingDirectKernel`](super::super::finishing::FinishingDirectKernel), with this
            /// kernel's MR and NR, on a CPU with the target feature.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn direct_finishing(
                k: usize,
                a: *const $t,
                b: *const $t,
                ldb: usize,
                cols: usize,
                out: *mut $t,
                ldo: usize,
                store: Store,
                fin: &TileEpilogue<'_, $t>,
            ) {
                // SAFETY: as the caller promises, for W = cols columns of
                // MR rows.
                unsafe {
                    by_width!(
                        cols,
                        tile_direct,
                        (k, a, b, ldb, out, ldo, store, Some(fin)),
                        $($w)*
                    )
                }
            }
        }
    };
}
