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

/// HPL's scaled residual ||Ax - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) N),
/// computed in fp64, with `eps` the machine epsilon of the precision solved in.
/// HPL passes a run when it is below 16.
pub fn scaled_residual(a: &Mat<f64>, x: &Col<f64>, b: &Col<f64>, eps: f64) -> f64 {
    let n = a.nrows();
    let r = a * x - b;
    let norm_inf_vec = |v: &Col<f64>| (0..v.nrows()).map(|i| v[i].abs()).fold(0.0, f64::max);
    let norm_a = (0..n)
        .map(|i| (0..n).map(|j| a[(i, j)].abs()).sum::<f64>())
        .fold(0.0, f64::max);
    norm_inf_vec(&r) / (eps * (norm_a * norm_inf_vec(x) + norm_inf_vec(b)) * n as f64)
}

/// The threshold HPL applies to the scaled residual.
pub const RESIDUAL_THRESHOLD: f64 = 16.0;

#[cfg(test)]
mod tests {
    use super::*;
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
        let good = scaled_residual(&a, &x, &b, f64::EPSILON);
        assert!(good < RESIDUAL_THRESHOLD, "{good}");
        let mut bad = x.clone();
        bad[17] += 1e-6;
        let r = scaled_residual(&a, &bad, &b, f64::EPSILON);
        assert!(
            r > RESIDUAL_THRESHOLD,
            "a perturbed solution must fail: {r}"
        );
        let (a2, _) = system(300, 7);
        assert_eq!(a2[(5, 9)], a[(5, 9)], "the seed reproduces the matrix");
        assert!((0..300).all(|i| (-0.5..0.5).contains(&a[(i, i)])));
    }
}
