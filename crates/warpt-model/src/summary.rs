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

/// The percentiles every stats object carries as fields (`p25` ... `p99`).
const FIELDS: [f64; 6] = [25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Percentiles to add to every metric's stats (`--percentiles 50,90,99.9`,
/// seed 002's `percentiles`): each above 0 and below 100, in order, once.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Percentiles(Vec<f64>);

impl Percentiles {
    /// The list `qs`, checked, sorted and without repeats.
    pub fn new(qs: &[f64]) -> Result<Percentiles, String> {
        let mut out: Vec<f64> = Vec::new();
        for &q in qs {
            if !(q.is_finite() && q > 0.0 && q < 100.0) {
                return Err(format!(
                    "percentile {q} is not between 0 and 100 (exclusive)"
                ));
            }
            out.push(q);
        }
        out.sort_by(f64::total_cmp);
        out.dedup();
        Ok(Percentiles(out))
    }

    /// `50,90,99.9` as a list.
    pub fn parse(text: &str) -> Result<Percentiles, String> {
        let qs = text
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                t.trim_start_matches('p')
                    .parse::<f64>()
                    .map_err(|_| format!("'{t}' is not a percentile (a number like 99.9)"))
            })
            .collect::<Result<Vec<f64>, String>>()?;
        Percentiles::new(&qs)
    }

    /// The percentiles, ascending.
    pub fn values(&self) -> &[f64] {
        &self.0
    }

    /// Whether none was asked for.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The stats key of percentile `q`: `p99.9`, `p50`.
    pub fn key(q: f64) -> String {
        format!("p{q}")
    }

    /// The distinct percentile keys among `keys` (`p99.9`, `p10`, ...), in
    /// the order of their percentiles: the columns of a table of them.
    pub fn ordered_keys<'a>(keys: impl IntoIterator<Item = &'a String>) -> Vec<String> {
        let mut found: Vec<(f64, &String)> = keys
            .into_iter()
            .filter_map(|k| {
                k.strip_prefix('p')
                    .and_then(|q| q.parse().ok())
                    .map(|q: f64| (q, k))
            })
            .collect();
        found.sort_by(|a, b| a.0.total_cmp(&b.0));
        found.dedup_by(|a, b| a.1 == b.1);
        found.into_iter().map(|(_, k)| k.clone()).collect()
    }
}

impl MetricStats {
    /// Adds each of `ps` that is not already a field (`p50`, `p90`, ...)
    /// under its key ([`Percentiles::key`]), from the kept samples (every
    /// k-th of a strided series, so an estimate there).
    pub fn add_percentiles(&mut self, ps: &Percentiles) {
        if ps.is_empty() || self.samples.is_empty() {
            return;
        }
        let mut sorted = self.samples.clone();
        sorted.sort_by(f64::total_cmp);
        for &q in ps.values() {
            if !FIELDS.contains(&q) {
                self.percentiles
                    .insert(Percentiles::key(q), percentile_sorted(&sorted, q / 100.0));
            }
        }
    }

    /// The value of percentile `q`: a field's, or one added by
    /// [`MetricStats::add_percentiles`].
    pub fn percentile(&self, q: f64) -> Option<f64> {
        let field = [
            (25.0, self.p25),
            (50.0, self.p50),
            (75.0, self.p75),
            (90.0, self.p90),
            (95.0, self.p95),
            (99.0, self.p99),
        ];
        field
            .iter()
            .find(|(f, _)| *f == q)
            .map(|(_, v)| *v)
            .or_else(|| self.percentiles.get(&Percentiles::key(q)).copied())
    }
}

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
            percentiles: Default::default(),
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
    fn asked_percentiles_are_added_under_their_keys_and_survive_json() {
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let mut s = MetricStats::summarize(&xs).unwrap();
        let ps = Percentiles::parse("99.9, 50,p10,99.9").unwrap();
        assert_eq!(ps.values(), &[10.0, 50.0, 99.9]);
        s.add_percentiles(&ps);
        // numpy.percentile(range(1, 11), [10, 99.9]) = 1.9, 9.991
        assert!(close(s.percentiles["p10"], 1.9), "{:?}", s.percentiles);
        assert!(close(s.percentiles["p99.9"], 9.991));
        assert!(!s.percentiles.contains_key("p50"), "a field already");
        let keys = ["p99.9", "p10", "p99.9", "x"].map(String::from);
        assert_eq!(Percentiles::ordered_keys(&keys), ["p10", "p99.9"]);
        assert_eq!(s.percentile(50.0), Some(5.5));
        assert!(close(s.percentile(99.9).unwrap(), 9.991));
        let json = serde_json::to_value(&s).unwrap();
        assert!(close(json["p99.9"].as_f64().unwrap(), 9.991), "{json}");
        let back: MetricStats = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
        for bad in ["0", "100", "x", "-5"] {
            assert!(Percentiles::parse(bad).is_err(), "{bad}");
        }
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
