//! Rows read back from the result history for analyses across runs and
//! machines: what the store hands the report layer (which never opens a
//! store itself).

use std::collections::BTreeMap;

/// One metric of one passed result.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossRow {
    /// The suite run.
    pub run_id: String,
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// The machine's host name.
    pub hostname: String,
    /// Suite.
    pub suite: String,
    /// Benchmark.
    pub benchmark: String,
    /// Metric name.
    pub metric: String,
    /// Metric tags.
    pub tags: BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// The run's figure (its median).
    pub value: f64,
    /// The 95% CI of the run's median, where sampled.
    pub ci95: Option<(f64, f64)>,
    /// Samples behind it.
    pub n: Option<i64>,
    /// Mean package power during the result's measurement, watts.
    pub mean_power_w: Option<f64>,
    /// The metric row, to fetch its samples.
    pub metric_id: i64,
}

/// One headline figure of one run on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRow {
    /// Suite.
    pub suite: String,
    /// Benchmark name within the suite.
    pub benchmark: String,
    /// The headline metric.
    pub metric: String,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// The value (the median).
    pub value: f64,
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// The machine's host name.
    pub hostname: String,
    /// Mean package power during the result's measurement, watts.
    pub mean_power_w: Option<f64>,
}

/// One stored value of the series: a passed run's (aggregate) result.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRow {
    /// The suite run.
    pub run_id: String,
    /// When it started (RFC 3339).
    pub start_time: String,
    /// The machine's host name.
    pub hostname: String,
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// The suite.
    pub suite: String,
    /// The metric's tags.
    pub tags: BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// The median.
    pub value: f64,
    /// The 95% confidence interval of the median (low, high), where the
    /// value came from samples.
    pub ci95: Option<(f64, f64)>,
}

/// One line of `warpt results list`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunSummary {
    /// Run id.
    pub id: String,
    /// `benchmark` or `stress`.
    pub kind: String,
    /// Suite (or stress target).
    pub suite: String,
    /// Start time, RFC 3339.
    pub start_time: Option<String>,
    /// Machine host name.
    pub hostname: Option<String>,
    /// Machine fingerprint.
    pub machine: Option<String>,
    /// Benchmarks in the run (1 for stress).
    pub benchmarks: i64,
    /// Benchmarks that passed.
    pub passed: i64,
    /// `run` or `import`.
    pub source: String,
    /// How many times the plan ran (`--repeat`); 1 for a single run.
    pub trials: i64,
    /// The run's labels (`--label`; none for a stress run).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, String>,
    /// The run's description (`--description`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}
