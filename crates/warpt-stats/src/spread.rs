//! How far values spread: the classical and the robust coefficient of
//! variation, and the upper confidence factor of a spread estimated from a
//! few values.

use statrs::distribution::{ChiSquared, ContinuousCDF};

use crate::location::{mean_var, median};

/// Robust coefficient of variation: 1.4826 x MAD / |median| (for normal
/// data, an estimate of sd / mean that one wild value cannot drag). NaN
/// for an empty slice or a zero median.
pub fn robust_cv(v: &[f64]) -> f64 {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&dev) / m.abs()
}

/// Classical coefficient of variation: sample standard deviation over
/// |mean|; NaN below two values.
pub fn cv(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return f64::NAN;
    }
    let (m, var) = mean_var(v);
    var.sqrt() / m.abs()
}

/// How much larger the true spread may be than one estimated from `n`
/// values: `sqrt((n - 1) / chi2_{alpha; n - 1})`, the one-sided upper
/// `1 - alpha` confidence factor of a standard deviation (normal data).
/// 1 below two values (nothing to widen).
pub fn spread_upper_factor(n: usize, alpha: f64) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let dof = (n - 1) as f64;
    ChiSquared::new(dof)
        .map(|c| (dof / c.inverse_cdf(alpha)).sqrt())
        .unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_factor_matches_chi_square_tables() {
        // chi2 quantiles at 0.10: 1.0636 (4 dof), 4.1682 (9 dof).
        assert!((spread_upper_factor(5, 0.10) - (4.0f64 / 1.063_623).sqrt()).abs() < 1e-4);
        assert!((spread_upper_factor(10, 0.10) - (9.0f64 / 4.168_159).sqrt()).abs() < 1e-4);
        assert_eq!(spread_upper_factor(1, 0.10), 1.0);
    }

    #[test]
    fn one_wild_value_moves_the_classical_spread_only() {
        // MAD of [98, 99, 100, 101, 150] is 1: one wild value does not count.
        let r = robust_cv(&[98.0, 99.0, 100.0, 101.0, 150.0]);
        assert!((r - 0.014826).abs() < 1e-9, "{r}");
        assert!(cv(&[98.0, 99.0, 100.0, 101.0, 150.0]) > 0.2);
        assert!(cv(&[1.0]).is_nan());
    }
}
