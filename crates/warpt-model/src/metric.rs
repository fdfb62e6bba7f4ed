//! Metrics: one scalar result each, with the statistics behind it.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One scalar result of a benchmark, e.g. fp64 all-thread GFLOP/s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkMetric {
    /// Metric name, e.g. `gflops`, `bandwidth`, `latency`.
    pub name: String,
    /// The headline value: the median of the samples when `stats` is present.
    pub value: f64,
    /// Unit of `value` and of every figure in `stats`, e.g. `GFLOP/s`.
    pub unit: String,
    /// Whether a larger value is an improvement.
    pub higher_is_better: bool,
    /// What distinguishes this metric from others of the same name,
    /// e.g. `{"precision": "fp64", "threads": "all"}`.
    #[serde(default, deserialize_with = "crate::params::null_as_default")]
    pub tags: BTreeMap<String, String>,
    /// Statistics over the samples, when the value comes from repeated samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<MetricStats>,
}

/// Tags joined as `k=v,k=v` (in key order), for tables and keys.
pub fn tag_label(tags: &BTreeMap<String, String>) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl BenchmarkMetric {
    /// A metric that is one figure per run (an accuracy, a count), with no
    /// samples behind it and so no statistics.
    pub fn single(name: &str, value: f64, unit: &str, higher_is_better: bool) -> Self {
        BenchmarkMetric {
            name: name.into(),
            value,
            unit: unit.into(),
            higher_is_better,
            tags: Default::default(),
            stats: None,
        }
    }

    /// The tag values joined as `k=v,k=v`, for tables and keys.
    pub fn tag_label(&self) -> String {
        tag_label(&self.tags)
    }

    /// Whether this metric counts events the program executes (see
    /// [`COUNTED_UNITS`]) rather than timing them: a repeat of unchanged
    /// code gives the same count, whatever the host was doing.
    pub fn is_counted(&self) -> bool {
        COUNTED_UNITS.contains(&self.unit.as_str())
    }
}

/// The units of counted metrics (`warpt exec --measure instructions`):
/// executed instructions, cache misses and cachegrind's estimated cycles
/// (a model over the counts, not a clock). Their run-to-run spread is the
/// counts' own, not the host's, so `compare` judges them without a noise
/// band.
pub const COUNTED_UNITS: [&str; 3] = ["instructions", "misses", "cycles"];

/// Summary statistics of a metric's samples, all in the metric's unit.
///
/// Percentiles interpolate linearly between order statistics (the
/// "type 7" definition used by R and NumPy). The 95% confidence interval of
/// the median is distribution-free: the pair of order statistics whose
/// binomial(n, 1/2) coverage is at least 95%. With fewer than 6 samples no
/// such pair exists and the interval is `[min, max]`, which then covers less.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricStats {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (equal to `p50`).
    pub median: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for one sample.
    pub std: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// 25th percentile.
    pub p25: f64,
    /// 50th percentile.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile, for series with at least 1000 samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<f64>,
    /// Lower bound of the 95% confidence interval of the median.
    pub ci95_low: f64,
    /// Upper bound of the 95% confidence interval of the median.
    pub ci95_high: f64,
    /// Samples outside Tukey's fences (1.5 IQR beyond the quartiles).
    /// Counted, never dropped.
    pub outliers: usize,
    /// Why sampling stopped for the series this metric comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Every sample, in the order it was taken; with `samples_stride` k,
    /// every k-th (the statistics above still cover all `n`).
    pub samples: Vec<f64>,
    /// Set when `samples` keeps every k-th sample of a very long series
    /// (per-I/O latencies): k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_stride: Option<usize>,
    /// Percentiles asked for beyond the fields above (`--percentiles`),
    /// keyed `p<q>` (`p99.9`, `p10`), each in the stats object itself.
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub percentiles: BTreeMap<String, f64>,
}

impl MetricStats {
    /// Every figure (and sample) multiplied by `k`: the same measurement in
    /// another unit, or a derived machine `k` times as fast or slow. The
    /// count, outliers and stop reason stay.
    pub fn scale(&mut self, k: f64) {
        for v in [
            &mut self.mean,
            &mut self.median,
            &mut self.std,
            &mut self.min,
            &mut self.max,
            &mut self.p25,
            &mut self.p50,
            &mut self.p75,
            &mut self.p90,
            &mut self.p95,
            &mut self.p99,
            &mut self.ci95_low,
            &mut self.ci95_high,
        ] {
            *v *= k;
        }
        if let Some(p) = &mut self.p999 {
            *p *= k;
        }
        for v in self.percentiles.values_mut() {
            *v *= k;
        }
        for v in &mut self.samples {
            *v *= k;
        }
    }

    /// Half the width of the confidence interval relative to the median:
    /// the precision the stopping rule aims at. Infinite when the median is 0.
    pub fn relative_half_width(&self) -> f64 {
        let half = (self.ci95_high - self.ci95_low) / 2.0;
        if self.median == 0.0 {
            if half == 0.0 { 0.0 } else { f64::INFINITY }
        } else {
            (half / self.median).abs()
        }
    }
}

/// Why the measurement loop stopped taking samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The minimum time passed and the confidence interval was narrow enough.
    TargetMet,
    /// The maximum time passed before the precision target was met.
    TimeCap,
    /// The maximum number of samples was taken before the target was met.
    SampleCap,
    /// A sample failed (the benchmark raised): the samples before it are
    /// kept, the result failed.
    Error,
}

impl StopReason {
    /// The snake_case name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::TargetMet => "target_met",
            StopReason::TimeCap => "time_cap",
            StopReason::SampleCap => "sample_cap",
            StopReason::Error => "error",
        }
    }

    /// How far from the target a reason is: the result-level stop reason of
    /// a benchmark with several series is the worst of theirs.
    pub fn severity(self) -> u8 {
        match self {
            StopReason::TargetMet => 0,
            StopReason::SampleCap => 1,
            StopReason::TimeCap => 2,
            StopReason::Error => 3,
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
