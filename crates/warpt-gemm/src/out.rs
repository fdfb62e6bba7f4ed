//! C, as the threads of a product write it: each tile added in from the
//! kernel's buffer, in the widest vectors the CPU has, its lines fetched
//! while the kernel runs.

use crate::epilogue::Epilogue;
use crate::kernel::Scalar;
use crate::mat::MatMut;
use crate::tile::TileMut;

/// C, written by several threads at once, each its own elements.
pub(crate) struct Out<'a, T> {
    ptr: *mut T,
    _c: std::marker::PhantomData<&'a mut [T]>,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

// SAFETY: `Out` is only written through `update` and `scale`, on element
// ranges the driver gives to one thread each.
unsafe impl<T: Send> Send for Out<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Out<'_, T> {}

impl<'a, T: Scalar> Out<'a, T> {
    pub(crate) fn new(c: &'a mut MatMut<'_, T>) -> Self {
        let (rows, cols) = (c.rows(), c.cols());
        let (data, rs, cs) = c.raw();
        Out {
            ptr: data.as_mut_ptr(),
            _c: std::marker::PhantomData,
            rows,
            cols,
            rs,
            cs,
        }
    }

    /// Element `(i, j)`.
    ///
    /// # Safety
    /// `i < rows`, `j < cols` (then it is inside C's slice: the view was
    /// checked when made), and no other thread touches `(i, j)` meanwhile.
    unsafe fn at(&self, i: usize, j: usize) -> *mut T {
        debug_assert!(i < self.rows && j < self.cols);
        // SAFETY: in bounds, as the caller promises.
        unsafe { self.ptr.add(i * self.rs + j * self.cs) }
    }

    /// Whether tiles of `mr` rows of `T` start on cache lines (C's rows
    /// contiguous, its start and its columns 64-byte aligned, `mr` rows a
    /// whole number of lines), as [`Store::Stream`](crate::kernel::Store)
    /// needs for every vector a kernel stores.
    pub(crate) fn lines_aligned(&self, mr: usize) -> bool {
        let size = std::mem::size_of::<T>();
        self.rs == 1
            && (self.ptr as usize).is_multiple_of(64)
            && (self.cs * size).is_multiple_of(64)
            && (mr * size).is_multiple_of(64)
    }

    /// Tile `rows x cols` of C for a kernel to write in place: when each
    /// of its columns is `mr` contiguous elements (C column-major, the
    /// tile `mr` rows high). The driver gives each tile to one thread.
    pub(crate) fn tile_mut(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        mr: usize,
    ) -> Option<TileMut<T>> {
        (self.rs == 1
            && rows.len() == mr
            && rows.end <= self.rows
            && !cols.is_empty()
            && cols.end <= self.cols)
            // SAFETY: (rows.start, cols.start) is inside C (checked above),
            // and the tile's rows and columns lie inside it, `cs` apart;
            // the calling thread owns them.
            .then(|| unsafe {
                TileMut::new(self.at(rows.start, cols.start), mr, cols.len(), self.cs)
            })
    }

    /// `C[rows, cols] = alpha·tile + beta·C[rows, cols]` (`tile` column-major
    /// with leading dimension `ld`; C not read when beta is 0).
    pub(crate) fn update(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        ld: usize,
        tile: &[T],
        alpha: T,
        beta: T,
    ) {
        assert!(rows.end <= self.rows && cols.end <= self.cols);
        if self.rs == 1 {
            for (jj, j) in cols.enumerate() {
                let col = &tile[jj * ld..][..rows.len()];
                // SAFETY: with a row stride of 1 the rows of column j are
                // contiguous, in range (asserted), and this tile is this
                // thread's alone.
                let dst =
                    unsafe { std::slice::from_raw_parts_mut(self.at(rows.start, j), rows.len()) };
                axpby(dst, col, alpha, beta);
            }
            return;
        }
        for (jj, j) in cols.enumerate() {
            let col = &tile[jj * ld..][..rows.len()];
            for (&t, i) in col.iter().zip(rows.clone()) {
                // SAFETY: in range (asserted above); the driver gives each
                // tile of C to one thread.
                unsafe {
                    let c = self.at(i, j);
                    *c = if beta == T::ZERO {
                        alpha * t
                    } else {
                        alpha * t + beta * *c
                    };
                }
            }
        }
    }

    /// Asks the CPU to bring `C[rows, cols]` into cache while the kernel
    /// computes the tile: its update otherwise waits on C's lines, one
    /// column at a time (a tenth of a shallow product's time when C is
    /// larger than the caches).
    pub(crate) fn prefetch(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        if self.rs == 1 && !rows.is_empty() {
            // The lines holding each column's rows: 64 bytes each.
            let per_line = (64 / std::mem::size_of::<T>()).max(1);
            for j in cols {
                for i in (rows.start..rows.end)
                    .step_by(per_line)
                    .chain([rows.end - 1])
                {
                    // SAFETY: (i, j) is inside C (i < rows.end <= self.rows
                    // and j < self.cols: the tile's own ranges); a prefetch
                    // neither reads nor writes.
                    unsafe {
                        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                            self.at(i, j).cast::<i8>(),
                        );
                    }
                }
            }
        }
        // Elsewhere the hardware prefetchers are left to it.
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (rows, cols);
    }

    /// `epilogue` on `C[rows, cols]`.
    pub(crate) fn finish(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        epilogue: &Epilogue<'_, T>,
    ) {
        assert!(rows.end <= self.rows && cols.end <= self.cols);
        if rows.is_empty() || cols.is_empty() {
            return;
        }
        if self.rs == 1 {
            // SAFETY: with a row stride of 1 each column's rows are
            // contiguous, `cs` apart, in range (asserted), and this tile
            // is this thread's alone.
            unsafe { epilogue.tile(self.at(rows.start, cols.start), self.cs, rows, cols) };
            return;
        }
        // Elsewhere a column at a time through a contiguous copy.
        let mut col = vec![T::ZERO; rows.len()];
        for j in cols {
            // SAFETY (both loops): in range (asserted above), on the
            // calling thread alone.
            for (v, i) in col.iter_mut().zip(rows.clone()) {
                *v = unsafe { *self.at(i, j) };
            }
            // SAFETY: `col` holds the column's rows, contiguous.
            unsafe { epilogue.tile(col.as_mut_ptr(), 0, rows.clone(), j..j + 1) };
            for (v, i) in col.iter().zip(rows.clone()) {
                unsafe { *self.at(i, j) = *v };
            }
        }
    }

    /// `C[rows, cols] = beta·C[rows, cols]` (zeros when beta is 0).
    pub(crate) fn scale(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        beta: T,
    ) {
        assert!(rows.end <= self.rows && cols.end <= self.cols);
        for j in cols {
            for i in rows.clone() {
                // SAFETY: in range (asserted above), on the calling thread
                // alone.
                unsafe {
                    let c = self.at(i, j);
                    *c = if beta == T::ZERO { T::ZERO } else { beta * *c };
                }
            }
        }
    }
}

/// `dst = alpha·src + beta·dst` (`dst` not read when beta is 0), compiled
/// for the widest vectors this CPU has: a tile's update into C is a tenth
/// of the kernel's own time at shallow depths (64 steps) in baseline SSE2.
fn axpby<T: Scalar>(dst: &mut [T], src: &[T], alpha: T, beta: T) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            return unsafe { axpby_avx512(dst, src, alpha, beta) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { axpby_avx2(dst, src, alpha, beta) };
        }
    }
    axpby_plain(dst, src, alpha, beta);
}

/// [`axpby`] with AVX-512F.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn axpby_avx512<T: Scalar>(dst: &mut [T], src: &[T], alpha: T, beta: T) {
    axpby_plain(dst, src, alpha, beta);
}

/// [`axpby`] with AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn axpby_avx2<T: Scalar>(dst: &mut [T], src: &[T], alpha: T, beta: T) {
    axpby_plain(dst, src, alpha, beta);
}

/// [`axpby`] for the target the build was compiled for.
#[inline(always)]
fn axpby_plain<T: Scalar>(dst: &mut [T], src: &[T], alpha: T, beta: T) {
    if beta == T::ZERO {
        for (d, &t) in dst.iter_mut().zip(src) {
            *d = alpha * t;
        }
    } else if alpha == T::ONE && beta == T::ONE {
        for (d, &t) in dst.iter_mut().zip(src) {
            *d = *d + t;
        }
    } else {
        for (d, &t) in dst.iter_mut().zip(src) {
            *d = alpha * t + beta * *d;
        }
    }
}

/// Orders this thread's streaming stores before whatever it does next
/// (they are weakly ordered): called once a thread is done with its tiles,
/// before other threads may read them.
pub(crate) fn fence_streams() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a store fence has no operands and no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}
