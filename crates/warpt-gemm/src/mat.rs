//! Matrix views: element `(i, j)` of a view is `data[i * rs + j * cs]`,
//! so one type reads row-major (`cs = 1`), column-major (`rs = 1`) and
//! sub-matrices of either. A view is checked against its storage when
//! made: every element it names is inside the slice.

/// Why a view could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// The view reaches past its slice.
    #[error(
        "a {rows} x {cols} view with strides ({rs}, {cs}) needs {needed} elements, the slice has {len}"
    )]
    OutOfBounds {
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
        /// Row stride.
        rs: usize,
        /// Column stride.
        cs: usize,
        /// Elements the view spans.
        needed: usize,
        /// Elements the slice has.
        len: usize,
    },
    /// A writable view whose strides make two elements one.
    #[error("a writable {rows} x {cols} view with strides ({rs}, {cs}) has elements that overlap")]
    Overlapping {
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
        /// Row stride.
        rs: usize,
        /// Column stride.
        cs: usize,
    },
}

fn check(len: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> Result<(), ViewError> {
    let needed = if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1)
            .checked_mul(rs)
            .and_then(|r| (cols - 1).checked_mul(cs).and_then(|c| r.checked_add(c)))
            .and_then(|last| last.checked_add(1))
            .unwrap_or(usize::MAX)
    };
    if needed > len {
        return Err(ViewError::OutOfBounds {
            rows,
            cols,
            rs,
            cs,
            needed,
            len,
        });
    }
    Ok(())
}

/// Whether distinct `(i, j)` are distinct elements: the dimension with the
/// smaller stride fits inside one step of the other (sufficient; layouts
/// that interleave otherwise are refused).
fn distinct(rows: usize, cols: usize, rs: usize, cs: usize) -> bool {
    if rows <= 1 || cols <= 1 {
        return (rows <= 1 || rs > 0) && (cols <= 1 || cs > 0);
    }
    let ((small, n), large) = if rs <= cs {
        ((rs, rows), cs)
    } else {
        ((cs, cols), rs)
    };
    small > 0 && small.checked_mul(n).is_some_and(|span| large >= span)
}

/// A read-only matrix view.
#[derive(Debug, Clone, Copy)]
pub struct MatRef<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a, T> MatRef<'a, T> {
    /// A `rows x cols` view of `data` with row stride `rs` and column
    /// stride `cs`.
    pub fn new(
        data: &'a [T],
        rows: usize,
        cols: usize,
        rs: usize,
        cs: usize,
    ) -> Result<Self, ViewError> {
        check(data.len(), rows, cols, rs, cs)?;
        Ok(MatRef {
            data,
            rows,
            cols,
            rs,
            cs,
        })
    }

    /// `data` as a row-major `rows x cols` matrix.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Result<Self, ViewError> {
        Self::new(data, rows, cols, cols, 1)
    }

    /// `data` as a column-major `rows x cols` matrix.
    pub fn col_major(data: &'a [T], rows: usize, cols: usize) -> Result<Self, ViewError> {
        Self::new(data, rows, cols, 1, rows)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row and column strides.
    pub fn strides(&self) -> (usize, usize) {
        (self.rs, self.cs)
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        MatRef {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }

    /// The storage and strides, for the packing routines: every `(i, j)`
    /// with `i < rows`, `j < cols` is in bounds (checked when made).
    pub(crate) fn raw(&self) -> (&'a [T], usize, usize) {
        (self.data, self.rs, self.cs)
    }
}

/// A writable matrix view.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    data: &'a mut [T],
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a, T> MatMut<'a, T> {
    /// A `rows x cols` view of `data` with row stride `rs` and column
    /// stride `cs`. Strides that make two elements share storage are
    /// refused: the product would race with itself.
    pub fn new(
        data: &'a mut [T],
        rows: usize,
        cols: usize,
        rs: usize,
        cs: usize,
    ) -> Result<Self, ViewError> {
        check(data.len(), rows, cols, rs, cs)?;
        if !distinct(rows, cols, rs, cs) {
            return Err(ViewError::Overlapping { rows, cols, rs, cs });
        }
        Ok(MatMut {
            data,
            rows,
            cols,
            rs,
            cs,
        })
    }

    /// `data` as a row-major `rows x cols` matrix.
    pub fn row_major(data: &'a mut [T], rows: usize, cols: usize) -> Result<Self, ViewError> {
        Self::new(data, rows, cols, cols, 1)
    }

    /// `data` as a column-major `rows x cols` matrix.
    pub fn col_major(data: &'a mut [T], rows: usize, cols: usize) -> Result<Self, ViewError> {
        Self::new(data, rows, cols, 1, rows)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row and column strides.
    pub fn strides(&self) -> (usize, usize) {
        (self.rs, self.cs)
    }

    /// The transpose (no copy): `Cᵀ = Bᵀ Aᵀ` multiplies a row-major
    /// product with column-major thinking.
    pub fn t(self) -> Self {
        MatMut {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }

    /// The storage and strides: distinct `(i, j)` in range are distinct
    /// elements (checked when made).
    pub(crate) fn raw(&mut self) -> (&mut [T], usize, usize) {
        (self.data, self.rs, self.cs)
    }
}
