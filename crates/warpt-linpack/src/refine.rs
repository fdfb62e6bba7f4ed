//! Refinement of a low-precision solution to fp64 accuracy, as HPL-MxP
//! specifies: plain iterative refinement while it converges, GMRES
//! preconditioned by the low-precision LU (GMRES-IR) when it does not.
//!
//! Plain refinement (r = b - A x in fp64, d = M⁻¹ r with the low-precision
//! factors M, x += d) contracts only while κ(A) times the factorization's
//! unit roundoff is below 1: with bf16 factors (roundoff 2⁻⁸) that is a
//! condition number of a few hundred, which HPL's random matrices exceed.
//! GMRES-IR solves each correction equation M⁻¹ A d = M⁻¹ r by GMRES in
//! fp64 instead, which converges in a few iterations whenever M⁻¹ A is
//! well enough conditioned, far beyond where the plain iteration diverges
//! (Carson and Higham, 2017-2018).

use faer::{Col, Mat};

use crate::hpl;

/// How far GMRES reduces the preconditioned residual of one correction
/// equation: the outer step does the rest (Carson and Higham use 1e-4
/// with single-precision factors); asking for more only spends matrix-vector
/// products.
const GMRES_TOLERANCE: f64 = 1e-4;

/// GMRES-IR steps over which the best scaled residual must at least halve:
/// where it does not, the low-precision factors do not precondition the
/// matrix (a bf16 LU of HPL's random matrix at N = 8000 crawled for 50
/// steps and four minutes without passing) and the refinement stops.
pub const STALL_STEPS: usize = 5;

/// How the solution was refined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Plain iterative refinement only.
    Ir,
    /// Plain refinement first, GMRES-IR once it stopped contracting.
    GmresIr,
}

impl Method {
    /// The `refinement_method` detail.
    pub fn name(self) -> &'static str {
        match self {
            Method::Ir => "ir",
            Method::GmresIr => "gmres-ir",
        }
    }
}

/// Limits of the refinement.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most outer steps (refinement or GMRES-IR corrections).
    pub max_steps: usize,
    /// Most GMRES iterations per correction.
    pub gmres_iterations: usize,
    /// Whether plain refinement may hand over to GMRES-IR.
    pub allow_gmres: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 50,
            gmres_iterations: 50,
            allow_gmres: true,
        }
    }
}

/// A refined solution.
#[derive(Debug, Clone)]
pub struct Refined {
    /// The solution.
    pub x: Col<f64>,
    /// Outer steps taken.
    pub steps: usize,
    /// GMRES iterations over all corrections.
    pub gmres_iterations: usize,
    /// The method that finished.
    pub method: Method,
    /// HPL's fp64 scaled residual of `x`, when it passed the test.
    pub residual: Option<f64>,
    /// The scaled residual after each outer step (the first: before any).
    pub history: Vec<f64>,
    /// Whether GMRES-IR stopped for want of progress ([`STALL_STEPS`]
    /// steps without halving the best residual) rather than at the limit.
    pub stalled: bool,
}

/// Refines `x` for `a x = b` until HPL's fp64 residual test passes, with
/// `precondition` applying the low-precision factors' solve (M⁻¹ v).
pub fn refine(
    a: &Mat<f64>,
    b: &Col<f64>,
    norm_a: f64,
    mut x: Col<f64>,
    precondition: impl Fn(&Col<f64>) -> Col<f64>,
    limits: Limits,
) -> Refined {
    let mut method = Method::Ir;
    let mut history = Vec::new();
    let mut gmres_total = 0;
    let mut steps = 0;
    let mut best: Option<(f64, Col<f64>)> = None;
    // The best scaled residual when GMRES-IR took over and after each of
    // its steps.
    let mut gmres_best: Vec<f64> = Vec::new();
    loop {
        let mut r = b - a * &x;
        let scaled = hpl::scaled(&r, norm_a, &x, b, f64::EPSILON);
        history.push(scaled);
        if best.as_ref().is_none_or(|(s, _)| scaled < *s) {
            best = Some((scaled, x.clone()));
        }
        let passed = scaled < hpl::RESIDUAL_THRESHOLD;
        let best_now = best.as_ref().map_or(scaled, |(s, _)| *s);
        if method == Method::GmresIr {
            gmres_best.push(best_now);
        }
        let stalled = !passed
            && gmres_best.len() > STALL_STEPS
            && best_now > 0.5 * gmres_best[gmres_best.len() - 1 - STALL_STEPS];
        if passed
            || stalled
            || steps == limits.max_steps
            || !scaled.is_finite() && method == Method::GmresIr
        {
            return Refined {
                x,
                steps,
                gmres_iterations: gmres_total,
                method,
                residual: passed.then_some(scaled),
                history,
                stalled,
            };
        }
        // Plain refinement has stopped contracting (or diverged): GMRES-IR
        // from the best solution so far.
        let len = history.len();
        if method == Method::Ir
            && limits.allow_gmres
            && len >= 2
            && !contracted(history[len - 2], history[len - 1])
        {
            method = Method::GmresIr;
            gmres_best.push(best_now);
            if let Some((s, best_x)) = &best
                && matches!(
                    scaled.partial_cmp(s),
                    Some(std::cmp::Ordering::Greater) | None
                )
            {
                x = best_x.clone();
                r = b - a * &x;
            }
        }
        let d = match method {
            Method::Ir => precondition(&r),
            Method::GmresIr => {
                let (d, its) = gmres(
                    a,
                    &r,
                    &precondition,
                    limits.gmres_iterations,
                    GMRES_TOLERANCE,
                );
                gmres_total += its;
                d
            }
        };
        x += d;
        steps += 1;
    }
}

/// Whether a refinement step at least halved the scaled residual (false
/// for a NaN).
fn contracted(before: f64, after: f64) -> bool {
    after < 0.5 * before
}

/// GMRES on M⁻¹ A d = M⁻¹ r from d = 0, in fp64 with modified Gram-Schmidt
/// and Givens rotations, until the preconditioned residual falls by `tol`
/// or after `max` iterations; the correction and the iterations taken.
pub fn gmres(
    a: &Mat<f64>,
    r: &Col<f64>,
    precondition: &impl Fn(&Col<f64>) -> Col<f64>,
    max: usize,
    tol: f64,
) -> (Col<f64>, usize) {
    let n = r.nrows();
    let z = precondition(r);
    let beta = z.norm_l2();
    if beta == 0.0 || !beta.is_finite() {
        return (Col::zeros(n), 0);
    }
    let mut basis: Vec<Col<f64>> = vec![z / beta];
    // Hessenberg columns, rotated as they come: h[j] has j + 2 entries.
    let mut h: Vec<Vec<f64>> = Vec::new();
    let mut rotations: Vec<(f64, f64)> = Vec::new();
    let mut g = vec![beta];
    let mut its = 0;
    while its < max {
        let j = its;
        let mut w = precondition(&(a * &basis[j]));
        let mut col = Vec::with_capacity(j + 2);
        for v in &basis {
            let hij = v.transpose() * &w;
            w -= hij * v;
            col.push(hij);
        }
        let next = w.norm_l2();
        col.push(next);
        for (i, &(c, s)) in rotations.iter().enumerate() {
            let (p, q) = (col[i], col[i + 1]);
            col[i] = c * p + s * q;
            col[i + 1] = -s * p + c * q;
        }
        let (p, q) = (col[j], col[j + 1]);
        let rho = p.hypot(q);
        let (c, s) = if rho == 0.0 {
            (1.0, 0.0)
        } else {
            (p / rho, q / rho)
        };
        col[j] = rho;
        col[j + 1] = 0.0;
        rotations.push((c, s));
        g.push(-s * g[j]);
        g[j] *= c;
        h.push(col);
        its += 1;
        if g[j + 1].abs() <= tol * beta || next == 0.0 {
            break;
        }
        basis.push(w / next);
    }
    // Back substitution: the upper triangle of the rotated Hessenberg matrix.
    let k = h.len();
    let mut y = vec![0.0; k];
    for i in (0..k).rev() {
        let mut s = g[i];
        for (jj, yj) in y.iter().enumerate().skip(i + 1) {
            s -= h[jj][i] * yj;
        }
        y[i] = s / h[i][i];
    }
    let mut d = Col::<f64>::zeros(n);
    for (v, yi) in basis.iter().zip(&y) {
        d += *yi * v;
    }
    (d, its)
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::linalg::solvers::Solve;

    /// A = Q1 diag(σ) Q2 with σ spaced geometrically from 1 to 1/κ, Q1 and
    /// Q2 orthogonal (Householder reflectors of seeded vectors).
    fn conditioned(n: usize, kappa: f64) -> Mat<f64> {
        let reflector = |seed: u64| {
            let (m, _) = hpl::system(n, seed);
            let v = m.col(0).to_owned();
            let v = &v / v.norm_l2();
            Mat::<f64>::identity(n, n) - 2.0 * &v * v.transpose()
        };
        let sigma = Mat::<f64>::from_fn(n, n, |i, j| {
            if i == j {
                kappa.powf(-(i as f64) / (n as f64 - 1.0))
            } else {
                0.0
            }
        });
        reflector(1) * sigma * reflector(2)
    }

    /// The fp32 LU of `a` as a preconditioner in fp64, its factors rounded
    /// to bf16 first when `bf16` (a bf16 LU's accuracy).
    fn low_precision(a: &Mat<f64>, bf16: bool) -> impl Fn(&Col<f64>) -> Col<f64> {
        let round = move |x: f64| {
            let v = x as f32;
            if bf16 {
                f32::from_bits((v.to_bits() + 0x7FFF + ((v.to_bits() >> 16) & 1)) & 0xFFFF_0000)
            } else {
                v
            }
        };
        let a32 = Mat::<f32>::from_fn(a.nrows(), a.ncols(), |i, j| round(a[(i, j)]));
        let lu = a32.partial_piv_lu();
        move |v: &Col<f64>| {
            let v32 = Col::<f32>::from_fn(v.nrows(), |i| v[i] as f32);
            let s = lu.solve(&v32);
            Col::<f64>::from_fn(v.nrows(), |i| f64::from(s[i]))
        }
    }

    #[test]
    fn gmres_ir_converges_where_plain_refinement_stalls() {
        let n = 120;
        // κ = 1e6: κ times bf16's roundoff (2^-8) is about 4000, so plain
        // refinement cannot contract; M⁻¹A stays well enough conditioned
        // for GMRES.
        let a = conditioned(n, 1e6);
        let b = Col::<f64>::from_fn(n, |i| ((i * 7 % 13) as f64) - 6.0);
        let norm_a = hpl::norm_inf(&a);
        let m = low_precision(&a, true);
        let x0 = m(&b);
        let plain = refine(
            &a,
            &b,
            norm_a,
            x0.clone(),
            &m,
            Limits {
                allow_gmres: false,
                ..Limits::default()
            },
        );
        assert_eq!(plain.residual, None, "plain IR stalls: {:?}", plain.history);
        let mixed = refine(&a, &b, norm_a, x0, &m, Limits::default());
        assert_eq!(mixed.method, Method::GmresIr);
        let residual = mixed.residual.expect("GMRES-IR passes HPL's test");
        assert!(residual < hpl::RESIDUAL_THRESHOLD);
        assert!(mixed.steps < 10, "{:?}", mixed.history);
    }

    #[test]
    fn gmres_ir_that_makes_no_progress_stops_early_saying_so() {
        let n = 120;
        // No preconditioner and two GMRES iterations per correction on a
        // matrix of condition 1e12: each step barely moves the residual.
        let a = conditioned(n, 1e12);
        let b = Col::<f64>::from_fn(n, |i| ((i * 7 % 13) as f64) - 6.0);
        let norm_a = hpl::norm_inf(&a);
        let identity = |v: &Col<f64>| v.clone();
        let limits = Limits {
            gmres_iterations: 2,
            ..Limits::default()
        };
        let r = refine(&a, &b, norm_a, b.clone(), identity, limits);
        assert_eq!(r.method, Method::GmresIr);
        assert_eq!(r.residual, None);
        assert!(r.stalled, "{:?}", r.history);
        assert!(r.steps < limits.max_steps / 2, "{:?}", r.history);
        // One that converges is not stalled.
        let a = conditioned(n, 1e6);
        let m = low_precision(&a, true);
        let norm_a = hpl::norm_inf(&a);
        let r = refine(&a, &b, norm_a, m(&b), &m, Limits::default());
        assert!(r.residual.is_some() && !r.stalled, "{:?}", r.history);
    }

    #[test]
    fn a_well_conditioned_system_needs_only_plain_refinement() {
        let n = 100;
        let (a, b) = hpl::system(n, 5);
        let norm_a = hpl::norm_inf(&a);
        let m = low_precision(&a, false);
        let r = refine(&a, &b, norm_a, m(&b), &m, Limits::default());
        assert_eq!(r.method, Method::Ir);
        assert!(r.residual.is_some() && r.steps <= 5, "{:?}", r.history);
    }

    #[test]
    fn gmres_solves_an_unpreconditioned_system_exactly_enough() {
        let n = 30;
        let (a, b) = hpl::system(n, 9);
        let (x, its) = gmres(&a, &b, &|v: &Col<f64>| v.clone(), n, 1e-12);
        let r = &b - &a * &x;
        assert!(its <= n);
        assert!(r.norm_l2() <= 1e-9 * b.norm_l2(), "{}", r.norm_l2());
    }
}
