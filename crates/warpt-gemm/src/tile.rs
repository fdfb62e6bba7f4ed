//! One thread's tile of C, as a microkernel writes it in place.

/// A tile of C whose columns are `rows` contiguous elements, `ld` apart,
/// inside C and written by one thread: made by [`crate::out::Out::tile_mut`].
pub(crate) struct TileMut<T> {
    ptr: *mut T,
    rows: usize,
    cols: usize,
    ld: usize,
}

impl<T> TileMut<T> {
    /// The tile at `ptr`: `rows` contiguous elements a column, `cols`
    /// columns `ld` apart.
    ///
    /// # Safety
    /// Every element of the tile lies inside one allocation of C, and no
    /// other thread reads or writes them while the tile lives.
    pub(crate) unsafe fn new(ptr: *mut T, rows: usize, cols: usize, ld: usize) -> Self {
        TileMut {
            ptr,
            rows,
            cols,
            ld,
        }
    }

    /// Its first element.
    pub(crate) fn ptr(&self) -> *mut T {
        self.ptr
    }

    /// Rows (each column's contiguous elements).
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    /// Elements from one column to the next.
    pub(crate) fn ld(&self) -> usize {
        self.ld
    }
}
