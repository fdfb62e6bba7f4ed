//! A machine's noise profile: how far a metric moves between runs of the
//! same code here, measured by A/A repetitions (`warpt noise`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Params;

/// The run-to-run spread of one metric on one machine, for given parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoiseEntry {
    /// Suite.
    pub suite: String,
    /// Benchmark.
    pub benchmark: String,
    /// Metric name.
    pub metric: String,
    /// Metric tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// The benchmark's effective parameters (a profile applies only to
    /// runs with the same ones).
    #[serde(default)]
    pub params: Params,
    /// The metric's unit.
    pub unit: String,
    /// Trials (whole runs) the spread was measured over.
    pub trials: usize,
    /// Median of the trial medians.
    pub median: f64,
    /// Robust coefficient of variation of the trial medians:
    /// 1.4826 x MAD / |median| (a fraction, 0.02 = 2%).
    pub cv: f64,
    /// Classical coefficient of variation (sample standard deviation over
    /// the mean) of the trial medians, for comparison.
    #[serde(default)]
    pub cv_sd: Option<f64>,
    /// Median over the trials of the within-run 95% CI half-width of the
    /// median, relative to it: what one run claims to know.
    #[serde(default)]
    pub within_ci: Option<f64>,
    /// `--duration` of the trials, seconds, if set.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The suite run (with its trials) the profile came from.
    #[serde(default)]
    pub run_id: Option<String>,
    /// When the profile was recorded (RFC 3339).
    #[serde(default)]
    pub recorded_at: Option<String>,
}

impl NoiseEntry {
    /// The profile of `metric` of `result`: `trials` trial medians around
    /// `median` with robust CV `cv`; nothing else known yet.
    pub fn of(
        result: &crate::BenchmarkRunResult,
        metric: &crate::BenchmarkMetric,
        trials: usize,
        median: f64,
        cv: f64,
    ) -> Self {
        NoiseEntry {
            suite: result.spec.id.suite.clone(),
            benchmark: result.spec.id.name.clone(),
            metric: metric.name.clone(),
            tags: metric.tags.clone(),
            params: result.params.clone(),
            unit: metric.unit.clone(),
            trials,
            median,
            cv,
            cv_sd: None,
            within_ci: None,
            duration_s: None,
            run_id: None,
            recorded_at: None,
        }
    }
}
