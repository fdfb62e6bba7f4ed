//! The result of running one benchmark.

use std::collections::BTreeMap;
use std::fmt;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BenchmarkMetric, BenchmarkSpec, ListOutput, ParamValue, Params, StopReason};

/// How a benchmark run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Measured, and the validation held.
    Passed,
    /// Ran but produced a wrong answer or an error.
    Failed,
    /// Could not run here (missing hardware, binary or memory); not a failure.
    Skipped,
    /// A stage exceeded its time limit and was stopped.
    Timeout,
    /// The benchmark process died (signal, abnormal exit, garbage output).
    Crashed,
}

impl RunStatus {
    /// The lowercase name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Passed => "passed",
            RunStatus::Failed => "failed",
            RunStatus::Skipped => "skipped",
            RunStatus::Timeout => "timeout",
            RunStatus::Crashed => "crashed",
        }
    }

    /// Whether this outcome makes a suite run exit with status 1.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            RunStatus::Failed | RunStatus::Timeout | RunStatus::Crashed
        )
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The check of a benchmark's answer: a fast wrong answer is a failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Validation {
    /// Whether the answer was right.
    pub passed: bool,
    /// What was checked, and the figures behind the verdict.
    pub message: String,
}

impl Validation {
    /// A check that held.
    pub fn pass(message: impl Into<String>) -> Self {
        Validation {
            passed: true,
            message: message.into(),
        }
    }

    /// A check that failed.
    pub fn fail(message: impl Into<String>) -> Self {
        Validation {
            passed: false,
            message: message.into(),
        }
    }
}

/// The quality reason every result of a debug build of warpt carries.
pub const DEBUG_BUILD_REASON: &str = "debug build: the figures measure unoptimised code";

/// A metric whose median's 95% CI half-width exceeds this share of the
/// median is known too poorly to judge: its result is `unreliable`, and
/// `benchmark compare` calls the metric `inconclusive`.
pub const UNRELIABLE_REL_CI: f64 = 0.10;

/// How far a result's figures can be trusted, from best to worst (the order
/// is the derived `Ord`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Quality {
    /// Nothing known disturbed the measurement.
    Good,
    /// Something may have disturbed it (see `quality_reasons`); compare with care.
    Noisy,
    /// The figures do not describe this machine's speed (debug build,
    /// severe throttling, wildly spread samples).
    Unreliable,
}

impl Quality {
    /// The lowercase name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Quality::Good => "good",
            Quality::Noisy => "noisy",
            Quality::Unreliable => "unreliable",
        }
    }
}

/// How a worker process ended abnormally.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CrashInfo {
    /// Exit status, when it exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    #[serde(default)]
    pub signal: Option<i32>,
    /// The signal's name, e.g. `SIGSEGV`.
    #[serde(default)]
    pub signal_name: Option<String>,
    /// The last lines it wrote to stderr.
    #[serde(default)]
    pub stderr_tail: Vec<String>,
}

/// What the benchmark process consumed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Resources {
    /// Peak resident set size, bytes.
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// User-mode CPU time, seconds.
    #[serde(default)]
    pub cpu_user_s: Option<f64>,
    /// Kernel-mode CPU time, seconds.
    #[serde(default)]
    pub cpu_sys_s: Option<f64>,
    /// Package energy, joules, where a counter is readable.
    #[serde(default)]
    pub energy_j: Option<f64>,
    /// GPU memory the benchmark's process took at its peak, bytes (the
    /// CUDA path: the drop in the device's free memory while it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_peak_bytes: Option<u64>,
    /// Why a figure above is absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// How a stage of a benchmark ended, as the watchdog saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StageStatus {
    /// Finished within its limit.
    Completed,
    /// Stopped at its limit.
    Timeout,
    /// Ended with an error or a crash.
    Failed,
    /// Never reached.
    Skipped,
}

/// One stage's record: status, how long it took, and its limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageRecord {
    /// How the stage ended.
    pub status: StageStatus,
    /// Wall time the stage took, seconds.
    pub duration_s: f64,
    /// Its time limit, seconds, when one was enforced.
    #[serde(default)]
    pub limit_s: Option<f64>,
}

/// Per-stage records of a benchmark run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Watchdog {
    /// Preparation: prerequisites, data generation, allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<StageRecord>,
    /// Warm-up (`--burnin-seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<StageRecord>,
    /// Measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<StageRecord>,
    /// Validation of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<StageRecord>,
}

/// One error a benchmark met, at the stage it met it. A result keeps every
/// one of them with whatever was measured before (a call that raised after
/// a hundred samples keeps the hundred).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StageError {
    /// Where: `setup`, `warmup`, `measure`, `output`, `validate`,
    /// `teardown` (the stage a time limit or a crash ended, for those).
    pub stage: String,
    /// The error as its language prints it (`ZeroDivisionError: division by zero`).
    pub message: String,
    /// Its traceback, where the language has one.
    #[serde(default)]
    pub traceback: Option<String>,
}

impl StageError {
    /// An error at `stage` without a traceback.
    pub fn new(stage: impl Into<String>, message: impl Into<String>) -> Self {
        StageError {
            stage: stage.into(),
            message: message.into(),
            traceback: None,
        }
    }
}

/// The result of executing one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkRunResult {
    /// The benchmark that ran.
    pub spec: BenchmarkSpec,
    /// How it ended. Exports older than this field get it from `success`
    /// when loaded with [`crate::load_suite_run`].
    pub status: RunStatus,
    /// `status == passed`, kept for consumers of the original shape.
    pub success: bool,
    /// What went wrong, or why it was skipped.
    #[serde(default)]
    pub error_message: Option<String>,
    /// Every error met, in order, each with its stage and traceback
    /// (`error_message` is the first one's text). Empty when nothing failed.
    #[serde(default)]
    pub errors: Vec<StageError>,
    /// When the benchmark started (UTC).
    pub start_time: Timestamp,
    /// When it ended (UTC).
    pub end_time: Timestamp,
    /// The effective parameters: defaults with overrides applied.
    #[serde(default, deserialize_with = "crate::params::null_as_default")]
    pub params: Params,
    /// The measured values.
    #[serde(default, deserialize_with = "crate::params::null_as_default")]
    pub metrics: Vec<BenchmarkMetric>,
    /// Why measurement stopped; with several series, the worst of them.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// The check of the answer.
    #[serde(default)]
    pub validation: Option<Validation>,
    /// Benchmark-specific facts: the ISA used, array sizes, the derivation
    /// of a theoretical peak and the share of it reached.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, ParamValue>,
    /// Warnings about this measurement (page cache, noisy host, fallbacks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// How far the figures can be trusted, given the host's state while
    /// they were taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Quality>,
    /// Why `quality` is not `good`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quality_reasons: Vec<String>,
    /// The grade of the measurement's conditions alone (interference,
    /// frequency, governor), leaving out the build profile and the precision
    /// of single metrics: a debug build is `unreliable` as a figure of the
    /// machine but two debug builds can still be compared, and one poorly
    /// known metric says nothing about its neighbours. `benchmark compare`
    /// gates whole results on this and single metrics on their own CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement_quality: Option<Quality>,
    /// The run was stopped by the user (SIGINT/SIGTERM) while this ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// How the benchmark's worker process died, for `crashed` results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<CrashInfo>,
    /// What the benchmark process consumed.
    #[serde(default)]
    pub resources: Option<Resources>,
    /// Per-stage durations and limits.
    #[serde(default)]
    pub watchdog: Option<Watchdog>,
    /// What the monitor (`--monitor`) saw during the measurement window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::TelemetrySummary>,
    /// Steal time, other processes' CPU time and the run queue during the
    /// measurement window: the evidence behind `steal` and `foreign_cpu`
    /// quality reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<crate::Interference>,
    /// What the regime probes (effective clock, cache canary,
    /// thread scaling) read while it measured: the evidence behind
    /// `regime:` quality reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<crate::RegimeProbes>,
    /// A per-result system snapshot (older exports); new runs store it once
    /// in the suite run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<ListOutput>,
}

impl BenchmarkRunResult {
    /// A result with no metrics yet, for `spec` and `params`, started and
    /// ended at `at`, with the given status.
    pub fn new(spec: BenchmarkSpec, params: Params, status: RunStatus, at: Timestamp) -> Self {
        BenchmarkRunResult {
            spec,
            status,
            success: status == RunStatus::Passed,
            error_message: None,
            errors: Vec::new(),
            start_time: at,
            end_time: at,
            params,
            metrics: Vec::new(),
            stop_reason: None,
            validation: None,
            details: BTreeMap::new(),
            warnings: Vec::new(),
            quality: None,
            quality_reasons: Vec::new(),
            measurement_quality: None,
            interrupted: false,
            crash: None,
            resources: None,
            watchdog: None,
            telemetry: None,
            interference: None,
            regime: None,
            system: None,
        }
    }

    /// Whether this result can stand for its run among repeated trials:
    /// it passed, and its measurement conditions were not unreliable (the
    /// build profile aside, as it is the same in every trial).
    pub fn undisturbed(&self) -> bool {
        self.status == RunStatus::Passed
            && self.measurement_quality.or(self.quality) != Some(Quality::Unreliable)
    }

    /// Sets the status and keeps `success` in step with it.
    pub fn set_status(&mut self, status: RunStatus) {
        self.status = status;
        self.success = status == RunStatus::Passed;
    }

    /// The first metric called `name`, whatever its tags.
    pub fn metric(&self, name: &str) -> Option<&BenchmarkMetric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// The value of the first metric called `name`.
    pub fn value_of(&self, name: &str) -> Option<f64> {
        self.metric(name).map(|m| m.value)
    }
}
