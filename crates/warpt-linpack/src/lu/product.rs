//! The LU's trailing-update product, `C -= L·U`, on warpt's GEMM engine
//! ([`warpt_gemm`]): the part of HPL where nearly all the flops are; and
//! the products inside a panel's recursive factorization.
//!
//! The factorization keeps faer's matrices and views (its triangular
//! solves run on them); this module hands their blocks to the engine. A
//! step's L is packed once ([`Lower`]) and multiplied by every column
//! chunk's U; a chunk's U rows sit above its C rows in the same columns,
//! so U is copied out first. Both are in the matrix's type, or in bf16
//! when the update multiplies bf16 operands on a CPU with a bf16
//! dot-product instruction.

use faer::linalg::triangular_solve::solve_unit_lower_triangular_in_place;
use faer::prelude::Reborrow;
use faer::{MatMut, MatRef, Par};
use warpt_gemm::{Bf16, Element, Kernel, PackedA};

use super::Real;

/// A column-major block copied out of a faer view.
pub(super) struct Block<E> {
    data: Vec<E>,
    rows: usize,
    cols: usize,
}

impl<E: Element> Block<E> {
    /// The entries of `m`, each converted by `f`.
    fn copy<T: Copy>(m: MatRef<'_, T>, f: impl Fn(T) -> E) -> Self {
        let (rows, cols) = (m.nrows(), m.ncols());
        let mut data = Vec::with_capacity(rows * cols);
        for j in 0..cols {
            data.extend(m.col(j).iter().map(|&x| f(x)));
        }
        Block { data, rows, cols }
    }

    /// faer's view of it.
    pub(super) fn faer(&self) -> MatRef<'_, E> {
        MatRef::from_column_major_slice(&self.data, self.rows, self.cols)
    }

    /// The engine's view of it.
    fn view(&self) -> warpt_gemm::MatRef<'_, E> {
        warpt_gemm::MatRef::col_major(&self.data, self.rows, self.cols)
            .expect("a block's buffer holds rows x cols entries")
    }
}

/// The number of elements from a column-major view's first entry to its
/// last, inclusive, and its column stride.
fn span(rows: usize, cols: usize, row_stride: isize, col_stride: isize) -> (usize, usize) {
    assert!(
        row_stride == 1 && col_stride >= rows as isize,
        "the LU's views are blocks of column-major matrices"
    );
    let cs = col_stride as usize;
    let len = if rows == 0 || cols == 0 {
        0
    } else {
        (cols - 1) * cs + rows
    };
    (len, cs)
}

// SAFETY (both views below): faer's views of a column-major matrix point
// into its single allocation, which holds every element from a view's
// first entry to its last. The LU hands this module C blocks of columns
// that no other thread reads or writes during the call (the look-ahead
// and the column chunks of the trailing update are disjoint column
// ranges, and the rows of C's columns outside C are not touched while the
// product runs); A is a block of the factored panel's columns, which
// nothing writes during a step and which lie outside every C's range.
// Inside a panel's factorization ([`sub_product`]) A is the left half's
// rows below the diagonal block and C the right half's: columns apart.

/// The engine's view of a block `a` of a column-major faer matrix.
fn engine_ref<T>(a: MatRef<'_, T>) -> warpt_gemm::MatRef<'_, T> {
    let (len, cs) = span(a.nrows(), a.ncols(), a.row_stride(), a.col_stride());
    // SAFETY: see above.
    let data = unsafe { std::slice::from_raw_parts(a.as_ptr(), len) };
    warpt_gemm::MatRef::new(data, a.nrows(), a.ncols(), 1, cs).expect("the span covers the view")
}

/// The engine's view of a block `c` of a column-major faer matrix.
fn engine_mut<T>(c: MatMut<'_, T>) -> warpt_gemm::MatMut<'_, T> {
    let (len, cs) = span(c.nrows(), c.ncols(), c.row_stride(), c.col_stride());
    // SAFETY: see above.
    let data = unsafe { std::slice::from_raw_parts_mut(c.as_ptr_mut(), len) };
    warpt_gemm::MatMut::new(data, c.nrows(), c.ncols(), 1, cs).expect("the span covers the view")
}

const CHAIN: &str = "the LU's blocks chain: C (m x n) = A (m x w) · U (w x n)";

/// A factored panel's L below its diagonal block, packed once per step
/// for the engine: every column chunk of the trailing update multiplies it.
pub enum Lower<T: Real> {
    /// In the matrix's type.
    Native(PackedA<T>),
    /// As bf16, with the product that accumulates bf16 products into `T`.
    Bf16(PackedA<Bf16>, Bf16Product<T>),
}

/// `c -= a·u` for bf16 `a` and `u`, accumulated into `c`.
pub type Bf16Product<T> = fn(MatMut<'_, T>, &PackedA<Bf16>, warpt_gemm::MatRef<'_, Bf16>);

impl<T: Real> Lower<T> {
    /// `l21` packed in `T`.
    pub(super) fn native(l21: MatRef<'_, T>) -> Self {
        Lower::Native(PackedA::new(engine_ref(l21)))
    }

    /// `c -= L·u` on the calling thread: `u` a copy of the U rows of
    /// `c`'s columns (they share `c`'s columns).
    pub(super) fn sub_from(&self, c: MatMut<'_, T>, u: &Block<T>) {
        match self {
            Lower::Native(l) => {
                warpt_gemm::gemm_packed(engine_mut(c), -T::ONE, l, u.view(), T::ONE, 1)
                    .expect(CHAIN);
            }
            Lower::Bf16(l, product) => {
                let u = Block::copy(u.faer(), T::to_bf16);
                product(c, l, u.view())
            }
        }
    }
}

/// Rows of a panel's inverted diagonal block per product. `L11⁻¹` is
/// lower triangular, so a band of rows multiplies only the rows of U at or
/// above its own last: at NB = 256, bands of 64 do 1.25 times a triangular
/// solve's multiply-adds where the whole square would do twice.
const BAND: usize = 64;

/// A factored panel's unit lower triangular diagonal block `L11`, inverted
/// once per step and packed for the engine in bands of rows, so that each
/// column chunk's U block, `L11⁻¹·A12`, is a few products on the engine
/// instead of a triangular solve (as HPL's GPU ports do). The inverse of
/// a unit lower triangular matrix whose entries are at most 1 in
/// magnitude (partial pivoting's L) is exact enough for HPL's residual
/// test, which checks every solve.
pub(crate) struct Inverse<T: Real> {
    order: usize,
    /// Rows `r` of `L11⁻¹`, columns `..r.end`, packed.
    bands: Vec<(std::ops::Range<usize>, PackedA<T>)>,
}

impl<T: Real> Inverse<T> {
    /// `L11⁻¹`, for `l11`'s unit lower triangle.
    pub(super) fn of(l11: MatRef<'_, T>) -> Self {
        let order = l11.nrows();
        let mut inverse = faer::Mat::<T>::identity(order, order);
        solve_unit_lower_triangular_in_place(l11, inverse.as_mut(), Par::Seq);
        let bands = (0..order)
            .step_by(BAND)
            .map(|first| {
                let rows = first..(first + BAND).min(order);
                let band = inverse.as_ref().submatrix(first, 0, rows.len(), rows.end);
                (rows, PackedA::new(engine_ref(band)))
            })
            .collect();
        Inverse { order, bands }
    }

    /// The order of `L11`: the rows of the U blocks it gives.
    pub(super) fn order(&self) -> usize {
        self.order
    }

    /// The U block of a column chunk: `u ← round(L11⁻¹·u)` for the top
    /// `order` rows `u` of the chunk (interchanged already); returns a
    /// copy of it for the chunk's update.
    pub(super) fn solve(&self, mut u: MatMut<'_, T>, round: impl Fn(T) -> T) -> Block<T> {
        let (rows, cols) = (self.order, u.ncols());
        let mut out = Block {
            data: vec![T::ZERO; rows * cols],
            rows,
            cols,
        };
        for (band, a) in &self.bands {
            let c = warpt_gemm::MatMut::new(&mut out.data[band.start..], band.len(), cols, 1, rows)
                .expect("a band's rows lie inside the block");
            let b = engine_ref(u.rb().subrows(0, band.end));
            warpt_gemm::gemm_packed(c, T::ONE, a, b, T::ZERO, 1).expect(CHAIN);
        }
        for v in &mut out.data {
            *v = round(*v);
        }
        u.copy_from(out.faer());
        out
    }
}

/// `c -= a·b` on the engine, on the calling thread: `b` is copied out
/// first (in the panel's recursion it lies above `c` in the same columns).
pub(super) fn sub_product<T: Real>(c: MatMut<'_, T>, a: MatRef<'_, T>, b: MatRef<'_, T>) {
    let b = Block::copy(b, |x| x);
    warpt_gemm::gemm(engine_mut(c), -T::ONE, engine_ref(a), b.view(), T::ONE, 1).expect(CHAIN);
}

/// `l21` (fp32, bf16 values) packed as bf16 for `kernel`.
pub(super) fn bf16_lower(kernel: &Kernel<Bf16>, l21: MatRef<'_, f32>) -> Lower<f32> {
    let l = Block::copy(l21, Bf16::from_f32);
    Lower::Bf16(PackedA::with_kernel(kernel, l.view()), sub_bf16)
}

/// `c -= a·u` on the bf16 kernel `a` was packed for, accumulating in fp32.
fn sub_bf16(c: MatMut<'_, f32>, a: &PackedA<Bf16>, u: warpt_gemm::MatRef<'_, Bf16>) {
    warpt_gemm::gemm_packed(engine_mut(c), -1.0, a, u, 1.0, 1).expect(CHAIN);
}
