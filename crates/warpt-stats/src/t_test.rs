//! Student's t tests: Welch's two-sample test and the paired test.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::location::mean_var;

/// Two-sided p-value of Student's t statistic `t` with `df` degrees of freedom.
pub fn t_two_sided(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { 1.0 } else { 0.0 };
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.sf(t.abs())).min(1.0),
        Err(_) => f64::NAN,
    }
}

/// Welch's two-sample t test (unequal variances): the two-sided p-value.
/// NaN with fewer than two values on a side.
pub fn welch_t(a: &[f64], b: &[f64]) -> f64 {
    if a.len() < 2 || b.len() < 2 {
        return f64::NAN;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let se = (sa + sb).sqrt();
    if se == 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let df =
        (sa + sb).powi(2) / (sa.powi(2) / (a.len() - 1) as f64 + sb.powi(2) / (b.len() - 1) as f64);
    t_two_sided((ma - mb) / se, df)
}

/// The paired (one-sample) t test of differences `d` against 0: the
/// two-sided p-value. NaN with fewer than two differences.
pub fn paired_t(d: &[f64]) -> f64 {
    if d.len() < 2 {
        return f64::NAN;
    }
    let (m, v) = mean_var(d);
    let se = (v / d.len() as f64).sqrt();
    if se == 0.0 {
        return if m == 0.0 { 1.0 } else { 0.0 };
    }
    t_two_sided(m / se, (d.len() - 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_tests_match_reference_values() {
        // scipy 1.17 stats.ttest_ind([1,2,3,4,5], [3,4,5,6,7.5], equal_var=False)
        // -> t = -1.99323, df = 7.9222, p = 0.0817161.
        let p = welch_t(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.0, 4.0, 5.0, 6.0, 7.5]);
        assert!((p - 0.0817161).abs() < 1e-6, "{p}");
        // stats.ttest_1samp([0.5, 1.2, 0.8, 1.1, 0.3], 0) -> p = 0.0104251.
        let p = paired_t(&[0.5, 1.2, 0.8, 1.1, 0.3]);
        assert!((p - 0.0104251).abs() < 1e-6, "{p}");
        assert!(welch_t(&[1.0], &[2.0, 3.0]).is_nan());
        assert_eq!(paired_t(&[0.0, 0.0, 0.0]), 1.0);
    }
}
