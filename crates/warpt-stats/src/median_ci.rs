//! The distribution-free 95% confidence interval of a median: the
//! order-statistic interval `[x(k), x(n+1-k)]` with the largest `k` such
//! that `P(Binomial(n, 1/2) < k) <= 0.025`; below 6 values no such `k`
//! exists and the interval is `[min, max]`.

/// The 1-based rank `k` of the order-statistic 95% CI of the median for `n`
/// values, or `None` when `n` is too small for 95% coverage.
pub fn median_ci_rank(n: usize) -> Option<usize> {
    // Largest k with P(X <= k-1) <= 0.025 for X ~ Binomial(n, 1/2).
    // The pmf is accumulated in log space so large n does not underflow.
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0_f64; // ln C(n, 0)
    let mut cdf = 0.0_f64;
    let mut k = 0usize;
    for j in 0..n {
        cdf += (ln_choose - ln_half_n).exp();
        if cdf > 0.025 {
            break;
        }
        k = j + 1;
        ln_choose += ((n - j) as f64).ln() - ((j + 1) as f64).ln();
    }
    (k >= 1).then_some(k)
}

/// The 95% CI of the median of ascending, non-empty `sorted`.
pub fn median_ci(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len();
    match median_ci_rank(n) {
        Some(k) => (sorted[k - 1], sorted[n - k]),
        None => (sorted[0], sorted[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_ci_uses_binomial_order_statistics() {
        // Published table values: n=10 -> (x2, x9); n=20 -> (x6, x15);
        // n=100 -> (x40, x61). Below n=6 there is no 95% pair.
        assert_eq!(median_ci_rank(5), None);
        assert_eq!(median_ci_rank(6), Some(1));
        assert_eq!(median_ci_rank(10), Some(2));
        assert_eq!(median_ci_rank(20), Some(6));
        assert_eq!(median_ci_rank(100), Some(40));
        // Large n stays finite and near the normal approximation n/2 - 0.98 sqrt(n).
        let k = median_ci_rank(10_000).unwrap();
        assert!((4900..=4903).contains(&k), "k = {k}");
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median_ci(&xs), (2.0, 9.0));
        assert_eq!(median_ci(&[1.0, 2.0, 3.0]), (1.0, 3.0));
    }
}
