//! Summary statistics of samples into [`MetricStats`]: location, spread,
//! percentiles, the median's confidence interval and outliers.
//!
//! Conventions (stated once, used everywhere):
//! - percentiles interpolate linearly between order statistics (Hyndman & Fan
//!   type 7, the default of R and NumPy);
//! - the 95% CI of the median is the distribution-free order-statistic
//!   interval (see [`warpt_stats::median_ci`]);
//! - outliers lie outside Tukey's fences `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]` and
//!   are counted, never removed.

use warpt_stats::{mean_var, median_ci, percentile_sorted};

use crate::MetricStats;

impl MetricStats {
    /// Summarises `samples` (in the order taken). `None` for an empty slice
    /// or one holding a NaN or an infinity: such a sample is a bug upstream,
    /// not data.
    pub fn summarize(samples: &[f64]) -> Option<MetricStats> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let (mean, var) = mean_var(samples);
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
            std: var.sqrt(),
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

    /// Like [`MetricStats::summarize`], for series too long to store whole
    /// (per-I/O latencies): the statistics cover every value, `samples`
    /// keeps every k-th so that at most `keep` remain, and `samples_stride`
    /// records k.
    pub fn summarize_large(values: &[f64], keep: usize) -> Option<MetricStats> {
        let mut st = MetricStats::summarize(values)?;
        let stride = values.len().div_ceil(keep.max(1));
        if stride > 1 {
            st.samples = values.iter().step_by(stride).copied().collect();
            st.samples_stride = Some(stride);
        }
        Some(st)
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
        let s = MetricStats::summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
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
        let s = MetricStats::summarize(&xs).unwrap();
        assert!(close(s.p25, 3.25));
        assert!(close(s.p50, 5.5));
        assert!(close(s.p75, 7.75));
        assert!(close(s.p90, 9.1));
        assert!(close(s.p95, 9.55));
        assert!(close(s.p99, 9.91));
    }

    #[test]
    fn the_median_ci_comes_from_order_statistics() {
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = MetricStats::summarize(&xs).unwrap();
        assert_eq!((s.ci95_low, s.ci95_high), (2.0, 9.0));
        let few = MetricStats::summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((few.ci95_low, few.ci95_high), (1.0, 3.0));
    }

    #[test]
    fn outliers_are_counted_with_tukey_fences_and_kept() {
        let mut xs: Vec<f64> = (1..=10).map(f64::from).collect();
        xs.push(100.0);
        xs.push(-50.0);
        let s = MetricStats::summarize(&xs).unwrap();
        assert_eq!(s.outliers, 2);
        assert_eq!(s.samples.len(), 12);
        assert_eq!(s.samples[10], 100.0, "samples keep their order");
    }

    #[test]
    fn large_series_keep_a_stride_of_samples_and_p999() {
        let xs: Vec<f64> = (1..=10_000).map(f64::from).collect();
        let s = MetricStats::summarize_large(&xs, 1000).unwrap();
        assert_eq!(s.n, 10_000);
        assert_eq!(s.samples.len(), 1000);
        assert_eq!(s.samples_stride, Some(10));
        assert!(close(s.p999.unwrap(), 9990.001));
        assert!(MetricStats::summarize(&xs[..999]).unwrap().p999.is_none());
    }

    #[test]
    fn degenerate_inputs() {
        assert!(MetricStats::summarize(&[]).is_none());
        assert!(MetricStats::summarize(&[1.0, f64::NAN]).is_none());
        let one = MetricStats::summarize(&[7.0]).unwrap();
        assert_eq!((one.std, one.median, one.p99), (0.0, 7.0, 7.0));
    }
}
