//! The result of `warpt stress`: sustained load with error detection.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ListOutput, ParamValue, Params, TelemetrySummary};

/// Throughput over one second of a stress run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThroughputPoint {
    /// Seconds since the load started (end of the interval).
    pub t_s: f64,
    /// Throughput over the interval, in the run's `unit`.
    pub value: f64,
}

/// One `warpt stress TARGET` run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StressRun {
    /// A unique id (timestamp and random suffix).
    pub id: String,
    /// `cpu`, `ram`, `storage` or `network`.
    pub target: String,
    /// When the load started (UTC).
    pub start_time: Option<Timestamp>,
    /// When it ended (UTC).
    pub end_time: Option<Timestamp>,
    /// Seconds under load (after burn-in).
    pub duration_s: f64,
    /// Parameters, effective.
    #[serde(default)]
    pub params: Params,
    /// Unit of `throughput`, e.g. `GFLOP/s`, `GB/s`.
    pub unit: String,
    /// Throughput per second, so throttling shows as a falling line.
    pub throughput: Vec<ThroughputPoint>,
    /// Results checked against their known answer.
    pub checks: u64,
    /// Checks that failed.
    pub errors: u64,
    /// The first few failures, described.
    #[serde(default)]
    pub error_examples: Vec<String>,
    /// `errors == 0` and the load ran.
    pub passed: bool,
    /// What the monitor saw, with `--monitor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySummary>,
    /// Caveats (memory sized down, page cache, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<ListOutput>,
    /// What the person who ran it says about the run (`--label key=value`):
    /// stored, shown and filtered on, as a suite run's ([`crate::labels`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, String>,
    /// A sentence about the run (`--description`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// How to run a stress test.
pub struct StressConfig<'a> {
    /// Time under load after burn-in.
    pub duration: Duration,
    /// Load before recording starts.
    pub burnin: Duration,
    /// Effective parameters (a target's defaults plus overrides).
    pub params: Params,
    /// Seed for generated data.
    pub seed: u64,
    /// Set by a signal handler to stop early.
    pub stop: Option<&'a AtomicBool>,
}

impl StressConfig<'_> {
    /// The integer parameter `key` (0 when absent).
    pub fn int(&self, key: &str) -> i64 {
        self.params
            .get(key)
            .and_then(ParamValue::as_i64)
            .unwrap_or(0)
    }
    /// The number parameter `key` (0 when absent).
    pub fn float(&self, key: &str) -> f64 {
        self.params
            .get(key)
            .and_then(ParamValue::as_f64)
            .unwrap_or(0.0)
    }
    /// The text parameter `key` (empty when absent).
    pub fn str(&self, key: &str) -> &str {
        self.params
            .get(key)
            .and_then(ParamValue::as_str)
            .unwrap_or("")
    }
    /// Whether `inject_error` asks for one corrupted result (a self-check).
    pub fn inject(&self) -> bool {
        self.int("inject_error") != 0
    }
}

/// What a stress run found.
#[derive(Debug, Clone, Default)]
pub struct StressOutcome {
    /// Unit of the throughput points.
    pub unit: String,
    /// Throughput per second.
    pub throughput: Vec<ThroughputPoint>,
    /// Results checked.
    pub checks: u64,
    /// Results wrong.
    pub errors: u64,
    /// The first wrong results, described.
    pub examples: Vec<String>,
    /// Caveats.
    pub warnings: Vec<String>,
    /// Seconds recorded.
    pub duration_s: f64,
}
