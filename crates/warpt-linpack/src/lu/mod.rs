//! HPL's factorization: a blocked, right-looking LU with partial pivoting
//! and a look-ahead of one panel, its trailing updates, the U blocks above
//! them and the products inside its panels on warpt's GEMM engine, the
//! small triangular solves inside a panel on faer's.
//!
//! faer's own `partial_piv_lu` is a recursive LU that reaches about 60% of
//! faer's GEMM rate on this kind of machine, while HPL with a tuned BLAS
//! reaches about 80% of its GEMM rate: HPL overlaps the (latency-bound) panel
//! factorization with the (GEMM-bound) trailing update. This module is that
//! algorithm — the part of HPL that is the benchmark:
//!
//! 1. the N x N matrix is split into panels of `nb` columns;
//! 2. a panel is factored by recursive halving (Toledo's algorithm), its row
//!    interchanges kept as LAPACK-style pivots (row `i` was swapped with
//!    row `pivots[i] >= i`);
//! 3. each step applies the panel's interchanges, U block (`L11⁻¹·A12`, its
//!    diagonal block inverted once: `Inverse`) and GEMM update
//!    (`product`) to the columns on its right in column chunks
//!    spread over the rayon pool, while one thread updates and factors the
//!    next panel first;
//! 4. later interchanges are not applied to earlier panels' L (HPL does the
//!    same): [`Lu::solve_in_place`] interleaves them with the forward solve.

mod product;

use std::sync::Mutex;

use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_unit_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::prelude::{Reborrow, ReborrowMut};
use faer::{Accum, ColMut, Mat, MatMut, MatRef, Par};
use warpt_gemm::{Bf16, Isa, Kernel};

use product::Inverse;
pub use product::Lower;

/// The element types the LU runs in: f32 and f64.
pub trait Real:
    faer::traits::RealField
    + warpt_gemm::Element<Acc = Self>
    + warpt_gemm::Scalar
    + Copy
    + Send
    + Sync
    + 'static
{
    /// |self|.
    fn magnitude(self) -> Self;
    /// The value in fp64.
    fn to_f64(self) -> f64;
    /// The nearest bfloat16 value (ties to even), in this type.
    fn to_bf16_value(self) -> Self;
    /// The nearest bfloat16 (ties to even).
    fn to_bf16(self) -> Bf16;
    /// The engine's bf16 kernel, when this type is what it accumulates in
    /// and the CPU has the instruction it is for: bf16 updates then
    /// multiply bf16 operands rather than bf16 values in this type.
    fn bf16_kernel() -> Option<&'static Kernel<Bf16>>;
    /// `l21` (bf16 values) packed as bf16 for `kernel`, when this type is
    /// what the kernel accumulates in (None otherwise).
    fn bf16_lower(kernel: &Kernel<Bf16>, l21: MatRef<'_, Self>) -> Option<Lower<Self>>;
}

/// bf16 rounding of an f32 (ties to even): its top 16 bits.
fn bf16_of(v: f32) -> f32 {
    if v.is_nan() {
        return v;
    }
    Bf16::from_f32(v).to_f32()
}

/// The precision of the trailing updates' operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updates {
    /// The matrix's own type.
    Native,
    /// Each panel's L and each U block rounded to bf16 before the GEMM,
    /// which accumulates in the matrix's type (HPL-MxP's bf16 LU; the
    /// factors keep the rounded values). On fp32 with `vdpbf16ps` the
    /// engine multiplies them as bf16; elsewhere the products of the
    /// rounded values are exact in fp32, so the arithmetic is the same.
    Bf16,
}

impl Real for f64 {
    fn magnitude(self) -> Self {
        self.abs()
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn to_bf16_value(self) -> Self {
        f64::from(bf16_of(self as f32))
    }
    fn to_bf16(self) -> Bf16 {
        Bf16::from_f32(self as f32)
    }
    fn bf16_kernel() -> Option<&'static Kernel<Bf16>> {
        None
    }
    fn bf16_lower(_kernel: &Kernel<Bf16>, _l21: MatRef<'_, Self>) -> Option<Lower<Self>> {
        None
    }
}

impl Real for f32 {
    fn magnitude(self) -> Self {
        self.abs()
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn to_bf16_value(self) -> Self {
        bf16_of(self)
    }
    fn to_bf16(self) -> Bf16 {
        Bf16::from_f32(self)
    }
    fn bf16_kernel() -> Option<&'static Kernel<Bf16>> {
        // The portable bf16 kernel would be slower than the bf16 values in
        // fp32, and so is AVX2's, which widens the pairs as it loads them
        // (made for a decode step's weight-bound products).
        Kernel::<Bf16>::hardware().filter(|k| k.isa != Isa::Avx2)
    }
    fn bf16_lower(kernel: &Kernel<Bf16>, l21: MatRef<'_, Self>) -> Option<Lower<Self>> {
        Some(product::bf16_lower(kernel, l21))
    }
}

/// The name of the engine kernel the trailing updates of an LU in `T`
/// run on (`details.gemm_kernel`).
pub fn update_kernel<T: Real>(updates: Updates) -> &'static str {
    match (updates, T::bf16_kernel()) {
        (Updates::Bf16, Some(kernel)) => kernel.name,
        _ => Kernel::<T>::best().name,
    }
}

/// Panels narrower than this are factored column by column.
const LEAF: usize = 8;

/// A factored matrix: unit-lower L and U in one matrix, and the interchanges.
pub struct Lu<T> {
    lu: Mat<T>,
    pivots: Vec<usize>,
    nb: usize,
}

/// Column `j` of `a` as a slice. Every view in this module is a block of a
/// column-major [`Mat`], so its rows are contiguous.
fn column<T>(a: MatMut<'_, T>, j: usize) -> &mut [T] {
    a.try_as_col_major_mut()
        .expect("views of a column-major Mat have contiguous rows")
        .col_mut(j)
        .as_slice_mut()
}

/// Applies the interchanges `pivots` (row `offset + i` with row `pivots[i]`,
/// both relative to `a`'s first row) to every column of `a`.
fn swap_rows<T>(mut a: MatMut<'_, T>, pivots: &[usize], offset: usize) {
    for j in 0..a.ncols() {
        let c = column(a.rb_mut(), j);
        for (i, &p) in pivots.iter().enumerate() {
            c.swap(offset + i, p);
        }
    }
}

/// Factors the m x w panel `p` (m >= w) in place; `pivots[i]` receives the
/// row (relative to `p`) that row `i` was swapped with. The interchanges are
/// applied across the whole panel.
fn factor_panel<T: Real>(mut p: MatMut<'_, T>, pivots: &mut [usize]) {
    let w = p.ncols();
    if w <= LEAF {
        for j in 0..w {
            let c = column(p.rb_mut(), j);
            let mut best = j;
            let mut max = c[j].magnitude();
            for (i, v) in c.iter().enumerate().skip(j + 1) {
                if v.magnitude() > max {
                    max = v.magnitude();
                    best = i;
                }
            }
            pivots[j] = best;
            if best != j {
                for k in 0..w {
                    column(p.rb_mut(), k).swap(j, best);
                }
            }
            let (left, mut right) = p.rb_mut().split_at_col_mut(j + 1);
            let l = column(left, j);
            // A zero pivot makes infinities here; the residual test reports them.
            let inv = T::ONE / l[j];
            for v in &mut l[j + 1..] {
                *v *= inv;
            }
            let l = &l[j + 1..];
            for k in 0..right.ncols() {
                let c = column(right.rb_mut(), k);
                let u = c[j];
                for (x, &m) in c[j + 1..].iter_mut().zip(l) {
                    *x -= m * u;
                }
            }
        }
        return;
    }
    let w1 = w / 2;
    let (mut left, mut right) = p.rb_mut().split_at_col_mut(w1);
    factor_panel(left.rb_mut(), &mut pivots[..w1]);
    swap_rows(right.rb_mut(), &pivots[..w1], 0);
    {
        let (l11, l21) = left.rb().split_at_row(w1);
        let (mut r1, r2) = right.rb_mut().split_at_row_mut(w1);
        solve_unit_lower_triangular_in_place(l11, r1.rb_mut(), Par::Seq);
        // On the engine: faer's product here made the factorization 1.2%
        // slower (N = 8000, Zen 4), at every width down to the leaf's.
        product::sub_product(r2, l21, r1.rb());
    }
    let (_, r2) = right.rb_mut().split_at_row_mut(w1);
    factor_panel(r2, &mut pivots[w1..]);
    for p in &mut pivots[w1..] {
        *p += w1;
    }
    swap_rows(left, &pivots[w1..], w1);
}

/// `m`'s columns in chunks of `widest` columns, then narrower ones (what
/// is left over twice the threads, down to an eighth of `widest`): the
/// threads' last chunks of a step end closer together. On Zen 4 (two
/// threads, N = 8000, chunks of 256) that was 2.6% faster than equal
/// chunks (four interleaved rounds); down to a sixteenth, 1.4%; to a
/// quarter, level. Equal chunks of 128 or 192 were level: the products'
/// rate falls with the width.
fn guided<T>(mut m: MatMut<'_, T>, widest: usize) -> Vec<MatMut<'_, T>> {
    let threads = rayon::current_num_threads().max(1);
    let narrowest = (widest / 8).max(1);
    let mut out = Vec::new();
    while m.ncols() > 0 {
        let w = (m.ncols() / (2 * threads))
            .clamp(narrowest, widest)
            .min(m.ncols());
        let (c, rest) = m.split_at_col_mut(w);
        out.push(c);
        m = rest;
    }
    out
}

/// Rounds every entry of `m` to bf16 when `updates` asks for it.
fn round<T: Real>(mut m: MatMut<'_, T>, updates: Updates) {
    if updates == Updates::Bf16 {
        for j in 0..m.ncols() {
            for v in column(m.rb_mut(), j) {
                *v = v.to_bf16_value();
            }
        }
    }
}

/// Brings the columns `c` (rows k..n) up to date with the factored panel
/// (`inverse` its diagonal block's, `lower` what is below it):
/// interchanges, U block, GEMM update.
fn update<T: Real>(
    mut c: MatMut<'_, T>,
    inverse: &Inverse<T>,
    lower: &Lower<T>,
    pivots: &[usize],
    updates: Updates,
) {
    swap_rows(c.rb_mut(), pivots, 0);
    let (c1, c2) = c.split_at_row_mut(inverse.order());
    let u = inverse.solve(c1, |x| match updates {
        Updates::Bf16 => x.to_bf16_value(),
        Updates::Native => x,
    });
    lower.sub_from(c2, &u);
}

impl<T: Real> Lu<T> {
    /// Factors the square matrix `a` with panels of `nb` columns on the
    /// global rayon pool.
    pub fn factor(a: Mat<T>, nb: usize) -> Self {
        Self::factor_with(a, nb, Updates::Native)
    }

    /// [`factor`](Self::factor) with the trailing updates' operands in
    /// `updates`' precision.
    pub fn factor_with(a: Mat<T>, nb: usize, updates: Updates) -> Self {
        let kernel = match updates {
            Updates::Bf16 => T::bf16_kernel(),
            Updates::Native => None,
        };
        Self::factor_on(a, nb, updates, kernel)
    }

    /// [`factor_with`](Self::factor_with), bf16 updates multiplying bf16
    /// operands on `kernel` when given, else the bf16 values in `T`.
    fn factor_on(
        mut a: Mat<T>,
        nb: usize,
        updates: Updates,
        kernel: Option<&'static Kernel<Bf16>>,
    ) -> Self {
        let n = a.nrows();
        assert_eq!(n, a.ncols(), "LU of a square matrix");
        let nb = nb.clamp(1, n.max(1));
        // Columns per parallel work item of the trailing update: wide enough
        // for GEMM to run at speed, narrow enough to balance.
        let chunk = nb.max(128);
        let mut pivots = vec![0usize; n];
        // The panel's L below its diagonal block, packed for the engine.
        let lower_of = |l21: MatRef<'_, T>| {
            kernel
                .and_then(|kernel| T::bf16_lower(kernel, l21))
                .unwrap_or_else(|| Lower::native(l21))
        };
        let first = nb.min(n);
        factor_panel(a.as_mut().subcols_mut(0, first), &mut pivots[..first]);
        round(
            a.as_mut().submatrix_mut(first, 0, n - first, first),
            updates,
        );
        let mut next_lower = Some(lower_of(a.as_ref().submatrix(first, 0, n - first, first)));
        let mut next_inverse = Some(Inverse::of(a.as_ref().submatrix(0, 0, first, first)));
        let mut k = 0;
        while k + nb < n {
            let (left, right) = a.as_mut().split_at_col_mut(k + nb);
            let (l11, l21) = left.rb().submatrix(k, k, n - k, nb).split_at_row(nb);
            let lower = next_lower.take().unwrap_or_else(|| lower_of(l21));
            let lower = &lower;
            let inverse = next_inverse.take().unwrap_or_else(|| Inverse::of(l11));
            let inverse = &inverse;
            let right = right.subrows_mut(k, n - k);
            let next = nb.min(n - k - nb);
            let (head, rest) = right.split_at_col_mut(next);
            let (done, ahead) = pivots.split_at_mut(k + nb);
            let panel = &done[k..];
            let relative: Vec<usize> = panel.iter().map(|p| p - k).collect();
            let relative = &relative;
            // The column chunks are handed out in order, widest first,
            // to every thread of the pool; the look-ahead's thread takes
            // its share once the next panel is factored.
            let queue = Mutex::new(guided(rest, chunk).into_iter());
            let drain = || {
                while let Some(c) = queue.lock().ok().and_then(|mut q| q.next()) {
                    update(c, inverse, lower, relative, updates);
                }
            };
            rayon::scope(|s| {
                for _ in 1..rayon::current_num_threads() {
                    s.spawn(|_| drain());
                }
                let mut head = head;
                update(head.rb_mut(), inverse, lower, relative, updates);
                let mut below = head.subrows_mut(nb, n - k - nb);
                factor_panel(below.rb_mut(), &mut ahead[..next]);
                next_inverse = Some(Inverse::of(below.rb().subrows(0, next)));
                let rows = below.nrows();
                let mut l21 = below.subrows_mut(next, rows - next);
                round(l21.rb_mut(), updates);
                next_lower = Some(lower_of(l21.rb()));
                drain();
            });
            for p in &mut pivots[k + nb..k + nb + next] {
                *p += k + nb;
            }
            k += nb;
        }
        Lu { lu: a, pivots, nb }
    }

    /// The order of the factored matrix.
    pub fn n(&self) -> usize {
        self.lu.nrows()
    }

    /// Overwrites `x` (= b) with the solution of A x = b, on faer's
    /// global parallelism: a solve reads the whole factored matrix, which
    /// one core streams at half the rate two do (N = 8000 fp32: 40 ms on
    /// one thread, 20 on two), and mixed precision solves three times or
    /// more per run.
    pub fn solve_in_place(&self, mut x: ColMut<'_, T>) {
        let n = self.n();
        let par = faer::get_global_parallelism();
        let mut k = 0;
        while k < n {
            let w = self.nb.min(n - k);
            for i in k..k + w {
                let p = self.pivots[i];
                if p != i {
                    let t = x[i];
                    x[i] = x[p];
                    x[p] = t;
                }
            }
            let (_, tail) = x.rb_mut().split_at_row_mut(k);
            let (mut x1, x2) = tail.split_at_row_mut(w);
            solve_unit_lower_triangular_in_place(
                self.lu.submatrix(k, k, w, w),
                x1.rb_mut().as_mat_mut(),
                par,
            );
            matmul(
                x2.as_mat_mut(),
                Accum::Add,
                self.lu.submatrix(k + w, k, n - k - w, w),
                x1.rb().as_mat(),
                -T::ONE,
                par,
            );
            k += w;
        }
        solve_upper_triangular_in_place(self.lu.as_ref(), x.as_mat_mut(), par);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpl;
    use faer::Col;
    use faer::linalg::solvers::Solve;

    fn solve(n: usize, nb: usize, seed: u64) -> (Mat<f64>, Col<f64>, Col<f64>) {
        let (a, b) = hpl::system(n, seed);
        let lu = Lu::factor(a.clone(), nb);
        let mut x = b.clone();
        lu.solve_in_place(x.as_mut());
        (a, b, x)
    }

    #[test]
    fn u_blocks_from_the_inverse_match_the_triangular_solve() {
        // Orders inside one band, at and across its edges, and a few bands.
        for (order, cols) in [(1, 3), (3, 7), (64, 5), (65, 13), (200, 9)] {
            let (m, _) = hpl::system(order.max(cols), 3);
            // Partial pivoting's L: unit diagonal, entries at most 1.
            let l11 = Mat::<f64>::from_fn(order, order, |i, j| match i.cmp(&j) {
                std::cmp::Ordering::Greater => 2.0 * m[(i, j)],
                std::cmp::Ordering::Equal => 1.0,
                std::cmp::Ordering::Less => f64::NAN,
            });
            let a12 = Mat::<f64>::from_fn(order, cols, |i, j| m[(j, i)]);
            let mut solved = a12.clone();
            solve_unit_lower_triangular_in_place(l11.as_ref(), solved.as_mut(), Par::Seq);
            let mut u = a12.clone();
            let copy = Inverse::of(l11.as_ref()).solve(u.as_mut(), |x| x);
            let scale = (0..cols)
                .map(|j| (0..order).map(|i| solved[(i, j)].abs()).fold(1.0, f64::max))
                .fold(1.0, f64::max);
            for j in 0..cols {
                for i in 0..order {
                    let (got, want) = (u[(i, j)], solved[(i, j)]);
                    assert!(
                        (got - want).abs() <= 1e-12 * scale,
                        "order {order}, ({i}, {j}): {got} against {want}"
                    );
                    assert_eq!(copy.faer()[(i, j)], got, "the copy is the U block");
                }
            }
        }
    }

    #[test]
    fn bf16_updates_keep_bf16_factors_outside_the_first_panel_and_still_solve() {
        let (n, nb) = (200, 32);
        let (a, b) = hpl::system(n, 11);
        let a32 = Mat::<f32>::from_fn(n, n, |i, j| a[(i, j)] as f32);
        let lu = Lu::factor_with(a32.clone(), nb, Updates::Bf16);
        // L below the first panel's diagonal block and U right of it were
        // rounded to bf16 (their low 16 bits are zero).
        let bf16 = |v: f32| v.to_bits() & 0xFFFF == 0;
        assert!((nb..n).all(|i| (0..nb).all(|j| bf16(lu.lu[(i, j)]))));
        assert!((0..nb).all(|i| (nb..n).all(|j| bf16(lu.lu[(i, j)]))));
        // The native factors are not bf16 values.
        let native = Lu::factor(a32, nb);
        assert!(!(nb..n).all(|i| (0..nb).all(|j| bf16(native.lu[(i, j)]))));
        // The solution is a bf16 LU's: far from fp32's accuracy, near bf16's.
        let mut x = Col::<f32>::from_fn(n, |i| b[i] as f32);
        lu.solve_in_place(x.as_mut());
        let x = Col::<f64>::from_fn(n, |i| f64::from(x[i]));
        let exact = a.partial_piv_lu().solve(&b);
        let err = (0..n).map(|i| (x[i] - exact[i]).abs()).fold(0.0, f64::max)
            / (0..n).map(|i| exact[i].abs()).fold(0.0, f64::max);
        assert!(err > 1e-5 && err < 1.0, "relative error {err}");
    }

    #[test]
    fn the_bf16_kernel_and_fp32_on_bf16_values_factor_alike() {
        let Some(kernel) = <f32 as Real>::bf16_kernel() else {
            eprintln!("not run here: this CPU has no bf16 dot-product instruction (avx512_bf16)");
            return;
        };
        let (n, nb) = (300, 48);
        let (mut a, b) = hpl::system(n, 5);
        hpl::make_diagonally_dominant(&mut a);
        let a32 = Mat::<f32>::from_fn(n, n, |i, j| a[(i, j)] as f32);
        let on_kernel = Lu::factor_on(a32.clone(), nb, Updates::Bf16, Some(kernel));
        let in_fp32 = Lu::factor_on(a32, nb, Updates::Bf16, None);
        // The products are the same exact bf16 products, summed in another
        // order: the factors differ in fp32 rounding, now and then flipping
        // a bf16 rounding, never more.
        let scale = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| in_fp32.lu[(i, j)].abs())
            .fold(0.0f32, f32::max);
        let worst = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| (on_kernel.lu[(i, j)] - in_fp32.lu[(i, j)]).abs())
            .fold(0.0f32, f32::max);
        eprintln!("bf16 kernel vs fp32 on bf16 values: factors differ by {worst} (scale {scale})");
        assert!(
            worst <= scale * 1e-3,
            "factors differ by {worst} (scale {scale})"
        );
        assert_eq!(on_kernel.pivots, in_fp32.pivots);
        let solve = |lu: &Lu<f32>| {
            let mut x = Col::<f32>::from_fn(n, |i| b[i] as f32);
            lu.solve_in_place(x.as_mut());
            Col::<f64>::from_fn(n, |i| f64::from(x[i]))
        };
        let exact = a.partial_piv_lu().solve(&b);
        for (path, x) in [("kernel", solve(&on_kernel)), ("fp32", solve(&in_fp32))] {
            let err = (0..n).map(|i| (x[i] - exact[i]).abs()).fold(0.0, f64::max)
                / (0..n).map(|i| exact[i].abs()).fold(0.0, f64::max);
            eprintln!("{path}: relative error {err:.3e}");
            assert!(err > 1e-5 && err < 1e-2, "{path}: relative error {err}");
        }
    }

    #[test]
    fn solves_pass_the_residual_test_for_every_blocking() {
        for (n, nb) in [
            (1, 4),
            (7, 3),
            (64, 64),
            (100, 16),
            (257, 32),
            (300, 300),
            (513, 64),
        ] {
            let (a, b, x) = solve(n, nb, n as u64);
            let r = hpl::scaled_residual(&a, hpl::norm_inf(&a), &x, &b, f64::EPSILON);
            assert!(r < hpl::RESIDUAL_THRESHOLD, "n={n} nb={nb}: {r}");
            let reference = a.partial_piv_lu().solve(&b);
            let diff = (0..n)
                .map(|i| (x[i] - reference[i]).abs())
                .fold(0.0, f64::max);
            assert!(
                diff < 1e-8,
                "n={n} nb={nb}: differs from faer's LU by {diff}"
            );
        }
    }

    #[test]
    fn pivots_choose_the_largest_entry() {
        // Column 0's largest entry is in row 2, so row 0 is swapped with it.
        let a = Mat::from_fn(3, 3, |i, j| {
            [[1.0, 2.0, 3.0], [2.0, 1.0, 1.0], [-4.0, 1.0, 0.5]][i][j]
        });
        let lu = Lu::factor(a.clone(), 2);
        assert_eq!(lu.pivots[0], 2);
        assert_eq!(lu.lu[(0, 0)], -4.0);
        let b = Col::from_fn(3, |i| [6.0, 4.0, -2.5][i]);
        let mut x = b.clone();
        lu.solve_in_place(x.as_mut());
        for (i, want) in [1.0f64, 1.0, 1.0].iter().enumerate() {
            assert!((x[i] - want).abs() < 1e-12, "{:?}", x);
        }
    }

    #[test]
    fn runs_in_single_precision() {
        let (a, b) = hpl::system(200, 3);
        let a32 = Mat::from_fn(200, 200, |i, j| a[(i, j)] as f32);
        let lu = Lu::factor(a32, 48);
        let mut x32 = Col::from_fn(200, |i| b[i] as f32);
        lu.solve_in_place(x32.as_mut());
        let x = Col::from_fn(200, |i| x32[i] as f64);
        let r = hpl::scaled_residual(&a, hpl::norm_inf(&a), &x, &b, f32::EPSILON as f64);
        assert!(r < hpl::RESIDUAL_THRESHOLD, "{r}");
    }
}
