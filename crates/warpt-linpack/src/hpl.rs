//! HPL's conventions: the matrix it solves, its flop count, its residual test.

use faer::{Col, Mat};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// HPL's operation count for solving an N x N system: 2/3 N^3 + 3/2 N^2.
pub fn flops(n: usize) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 1.5 * n * n
}

/// A random system from `seed` with entries uniform in [-0.5, 0.5), as HPL generates.
pub fn system(n: usize, seed: u64) -> (Mat<f64>, Col<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut next = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    let a = Mat::from_fn(n, n, |_, _| next());
    let b = Col::from_fn(n, |_| next());
    (a, b)
}

/// Makes `a` diagonally dominant as HPL-MxP's generator does: each diagonal
/// entry becomes the sum of the magnitudes of its row. Low-precision LU
/// factors of such a matrix stay accurate without pivoting, so refinement
/// converges in a few steps.
pub fn make_diagonally_dominant(a: &mut Mat<f64>) {
    let n = a.nrows().min(a.ncols());
    let mut sums = vec![0.0f64; a.nrows()];
    for j in 0..a.ncols() {
        for (i, s) in sums.iter_mut().enumerate() {
            *s += a[(i, j)].abs();
        }
    }
    for (i, s) in sums.into_iter().enumerate().take(n) {
        a[(i, i)] = s;
    }
}

/// ||A||_inf, the largest absolute row sum, read column by column (faer
/// stores columns contiguously).
pub fn norm_inf(a: &Mat<f64>) -> f64 {
    let mut rows = vec![0.0f64; a.nrows()];
    for j in 0..a.ncols() {
        for (i, r) in rows.iter_mut().enumerate() {
            *r += a[(i, j)].abs();
        }
    }
    rows.into_iter().fold(0.0, f64::max)
}

/// HPL's scaled residual ||Ax - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) N),
/// computed in fp64, with `eps` the machine epsilon of the precision solved in
/// and `norm_a` = [`norm_inf`] of `a`. HPL passes a run when it is below 16.
pub fn scaled_residual(a: &Mat<f64>, norm_a: f64, x: &Col<f64>, b: &Col<f64>, eps: f64) -> f64 {
    let r = a * x - b;
    scaled(&r, norm_a, x, b, eps)
}

/// The scaled residual from an already computed residual `r = Ax - b` (or `b - Ax`).
pub fn scaled(r: &Col<f64>, norm_a: f64, x: &Col<f64>, b: &Col<f64>, eps: f64) -> f64 {
    let norm_inf_vec = |v: &Col<f64>| (0..v.nrows()).map(|i| v[i].abs()).fold(0.0, f64::max);
    norm_inf_vec(r) / (eps * (norm_a * norm_inf_vec(x) + norm_inf_vec(b)) * r.nrows() as f64)
}

/// The threshold HPL applies to the scaled residual.
pub const RESIDUAL_THRESHOLD: f64 = 16.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diagonally_dominant_matrix_has_each_diagonal_entry_its_row_sum() {
        let (mut a, _) = system(50, 3);
        make_diagonally_dominant(&mut a);
        for i in 0..50 {
            let off: f64 = (0..50).filter(|&j| j != i).map(|j| a[(i, j)].abs()).sum();
            assert!(a[(i, i)] > off, "row {i}");
        }
    }
    use faer::linalg::solvers::Solve;

    #[test]
    fn the_flop_count_is_hpls() {
        assert_eq!(flops(1), 2.0 / 3.0 + 1.5);
        assert_eq!(flops(1000), 2.0 / 3.0 * 1e9 + 1.5e6);
    }

    #[test]
    fn the_residual_passes_a_solve_and_fails_a_perturbed_solution() {
        let (a, b) = system(300, 7);
        let x = a.partial_piv_lu().solve(&b);
        let norm = norm_inf(&a);
        let good = scaled_residual(&a, norm, &x, &b, f64::EPSILON);
        assert!(good < RESIDUAL_THRESHOLD, "{good}");
        let mut bad = x.clone();
        bad[17] += 1e-6;
        let r = scaled_residual(&a, norm, &bad, &b, f64::EPSILON);
        assert!(
            r > RESIDUAL_THRESHOLD,
            "a perturbed solution must fail: {r}"
        );
        let (a2, _) = system(300, 7);
        assert_eq!(a2[(5, 9)], a[(5, 9)], "the seed reproduces the matrix");
        assert!((0..300).all(|i| (-0.5..0.5).contains(&a[(i, i)])));
        let small = Mat::from_fn(2, 2, |i, j| [[1.0, -2.0], [3.0, 0.5]][i][j]);
        assert_eq!(norm_inf(&small), 3.5);
    }
}
