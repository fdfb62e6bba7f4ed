//! Summary statistics of samples: location, spread, percentiles, the median's
//! confidence interval and outliers.
//!
//! Conventions (stated once, used everywhere):
//! - percentiles interpolate linearly between order statistics (Hyndman & Fan
//!   type 7, the default of R and NumPy);
//! - the 95% CI of the median is the distribution-free order-statistic
//!   interval `[x(k), x(n+1-k)]` with the largest `k` such that
//!   `P(Binomial(n, 1/2) < k) <= 0.025`; below 6 samples no such `k` exists
//!   and the interval is `[min, max]`;
//! - outliers lie outside Tukey's fences `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]` and
//!   are counted, never removed.

use warpt_model::MetricStats;

/// Summarises `samples` (in the order taken). `None` for an empty slice or
/// one holding a NaN or an infinity: such a sample is a bug upstream, not data.
pub fn summarize(samples: &[f64]) -> Option<MetricStats> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let std = if n > 1 {
        (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let p = |q: f64| percentile_sorted(&sorted, q);
    let (p25, p75) = (p(0.25), p(0.75));
    let iqr = p75 - p25;
    let (lo_fence, hi_fence) = (p25 - 1.5 * iqr, p75 + 1.5 * iqr);
    let outliers = sorted
        .iter()
        .filter(|&&x| x < lo_fence || x > hi_fence)
        .count();
    let (ci95_low, ci95_high) = median_ci(&sorted);
    let median = p(0.5);
    Some(MetricStats {
        n,
        mean,
        median,
        std,
        min: sorted[0],
        max: sorted[n - 1],
        p25,
        p50: median,
        p75,
        p90: p(0.90),
        p95: p(0.95),
        p99: p(0.99),
        p999: (n >= 1000).then(|| p(0.999)),
        ci95_low,
        ci95_high,
        outliers,
        stop_reason: None,
        samples: samples.to_vec(),
        samples_stride: None,
    })
}

/// Like [`summarize`], for series too long to store whole (per-I/O
/// latencies): the statistics cover every value, `samples` keeps every k-th
/// so that at most `keep` remain, and `samples_stride` records k.
pub fn summarize_large(values: &[f64], keep: usize) -> Option<MetricStats> {
    let mut st = summarize(values)?;
    let stride = values.len().div_ceil(keep.max(1));
    if stride > 1 {
        st.samples = values.iter().step_by(stride).copied().collect();
        st.samples_stride = Some(stride);
    }
    Some(st)
}

/// The `q`-quantile (0..=1) of ascending, non-empty `sorted`, type 7.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    debug_assert!(n > 0 && (0.0..=1.0).contains(&q));
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The 1-based rank `k` of the order-statistic 95% CI of the median for `n`
/// samples, or `None` when `n` is too small for 95% coverage.
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
fn median_ci(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len();
    match median_ci_rank(n) {
        Some(k) => (sorted[k - 1], sorted[n - k]),
        None => (sorted[0], sorted[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn location_and_spread_match_hand_computed_values() {
        // mean 5, sample variance = 32/7 for this classic set.
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.std, (32.0f64 / 7.0).sqrt()));
        assert!(close(s.median, 4.5));
        assert_eq!((s.min, s.max), (2.0, 9.0));
    }

    #[test]
    fn percentiles_follow_numpy_linear_interpolation() {
        // numpy.percentile(range(1, 11), q) for q = 25, 75, 90, 95, 99.
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = summarize(&xs).unwrap();
        assert!(close(s.p25, 3.25));
        assert!(close(s.p50, 5.5));
        assert!(close(s.p75, 7.75));
        assert!(close(s.p90, 9.1));
        assert!(close(s.p95, 9.55));
        assert!(close(s.p99, 9.91));
    }

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
        let s = summarize(&xs).unwrap();
        assert_eq!((s.ci95_low, s.ci95_high), (2.0, 9.0));
        let few = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((few.ci95_low, few.ci95_high), (1.0, 3.0));
    }

    #[test]
    fn outliers_are_counted_with_tukey_fences_and_kept() {
        let mut xs: Vec<f64> = (1..=10).map(f64::from).collect();
        xs.push(100.0);
        xs.push(-50.0);
        let s = summarize(&xs).unwrap();
        assert_eq!(s.outliers, 2);
        assert_eq!(s.samples.len(), 12);
        assert_eq!(s.samples[10], 100.0, "samples keep their order");
    }

    #[test]
    fn large_series_keep_a_stride_of_samples_and_p999() {
        let xs: Vec<f64> = (1..=10_000).map(f64::from).collect();
        let s = summarize_large(&xs, 1000).unwrap();
        assert_eq!(s.n, 10_000);
        assert_eq!(s.samples.len(), 1000);
        assert_eq!(s.samples_stride, Some(10));
        assert!(close(s.p999.unwrap(), 9990.001));
        assert!(summarize(&xs[..999]).unwrap().p999.is_none());
    }

    #[test]
    fn degenerate_inputs() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        let one = summarize(&[7.0]).unwrap();
        assert_eq!((one.std, one.median, one.p99), (0.0, 7.0, 7.0));
    }
}
