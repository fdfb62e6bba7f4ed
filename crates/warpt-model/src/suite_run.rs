//! A suite run: the export shape, with the manifest that makes it reproducible.

use std::collections::BTreeMap;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    BenchmarkComponent, BenchmarkId, BenchmarkRunResult, ListOutput, ParamValue, RunStatus,
};

/// The results of one `warpt benchmark run`: the main export shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkSuiteRun {
    /// A unique id for this run (timestamp and random suffix).
    #[serde(default)]
    pub id: String,
    /// The suite asked for, or `components` when the run was chosen by component.
    pub suite: String,
    /// The components asked for (empty when chosen by suite or benchmark).
    #[serde(default)]
    pub components: Vec<BenchmarkComponent>,
    /// One result per planned benchmark, in plan order.
    pub benchmarks: Vec<BenchmarkRunResult>,
    /// Free-form labels.
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// When the run started (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    /// When the run ended (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Timestamp>,
    /// Whether the run was interrupted before every benchmark finished.
    #[serde(default)]
    pub interrupted: bool,
    /// How to reproduce this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Manifest>,
    /// The machine it ran on, captured once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<ListOutput>,
    /// The repetitions of the plan (`--repeat N`, or one side of
    /// `benchmark compare --rerun`), each with its own results; empty for a
    /// single run. When present, `benchmarks` holds one aggregate per planned
    /// benchmark over the trials (see [`crate::Trial`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<crate::Trial>,
}

impl BenchmarkSuiteRun {
    /// The raw samples its metrics keep, all benchmarks together: the rows
    /// a store's `samples` table gains when it records the run.
    pub fn sample_count(&self) -> usize {
        self.benchmarks
            .iter()
            .flat_map(|b| &b.metrics)
            .filter_map(|m| m.stats.as_ref())
            .map(|s| s.samples.len())
            .sum()
    }

    /// The first figure of a metric that is not a finite number, named
    /// (`benchmarks[0] exec/sleep: wall_time_s: stats.mean = inf`): JSON
    /// has no infinity or NaN (they are written as `null`, which reads back
    /// as no number at all), so such a run is refused where it enters.
    pub fn non_finite(&self) -> Option<String> {
        for (i, b) in self.benchmarks.iter().enumerate() {
            for m in &b.metrics {
                let mut figures = vec![("value", m.value)];
                if let Some(s) = &m.stats {
                    figures.extend([
                        ("stats.mean", s.mean),
                        ("stats.median", s.median),
                        ("stats.std", s.std),
                        ("stats.min", s.min),
                        ("stats.max", s.max),
                        ("stats.p25", s.p25),
                        ("stats.p50", s.p50),
                        ("stats.p75", s.p75),
                        ("stats.p90", s.p90),
                        ("stats.p95", s.p95),
                        ("stats.p99", s.p99),
                        ("stats.ci95_low", s.ci95_low),
                        ("stats.ci95_high", s.ci95_high),
                    ]);
                    if let Some(v) = s.p999 {
                        figures.push(("stats.p999", v));
                    }
                    if let Some(v) = s.samples.iter().find(|v| !v.is_finite()) {
                        figures.push(("stats.samples", *v));
                    }
                }
                if let Some((field, v)) = figures.into_iter().find(|(_, v)| !v.is_finite()) {
                    return Some(format!(
                        "benchmarks[{i}] {}: {}: {field} = {v}",
                        b.spec.id, m.name
                    ));
                }
            }
        }
        None
    }

    /// Whether any benchmark failed, timed out or crashed (exit status 1).
    pub fn has_failures(&self) -> bool {
        self.benchmarks.iter().any(|b| b.status.is_failure())
    }

    /// How many times the plan ran: the number of trials, or 1 for a single run.
    pub fn trial_count(&self) -> usize {
        self.trials.len().max(1)
    }
}

/// The configuration a run was asked for, after every override.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunConfig {
    /// The benchmarks planned, in order.
    pub plan: Vec<BenchmarkId>,
    /// `--duration`, seconds, if given (otherwise each benchmark's default).
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Warm-up before measuring, seconds.
    pub burnin_s: f64,
    /// Seed for every random generator a benchmark uses.
    pub seed: u64,
    /// `--param` overrides as given.
    #[serde(default)]
    pub param_overrides: BTreeMap<String, String>,
    /// Target relative half-width of the median's 95% CI.
    pub target_rel_ci: f64,
    /// Stage limits set by configuration (per benchmark ones are in each spec).
    #[serde(default)]
    pub timeouts: crate::StageLimits,
    /// Stage limits set by configuration for single benchmarks (`suite/name`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub benchmark_timeouts: BTreeMap<String, crate::StageLimits>,
    /// Every stage limit is multiplied by this.
    #[serde(default = "one")]
    pub timeout_multiplier: f64,
    /// Benchmarks ran inside the warpt process instead of a worker each.
    #[serde(default)]
    pub in_process: bool,
    /// The configuration file read, if any.
    #[serde(default)]
    pub config_file: Option<String>,
    /// `--repeat`: how many times the plan ran (trials).
    #[serde(default = "one_trial")]
    pub repeat: u32,
}

fn one() -> f64 {
    1.0
}

fn one_trial() -> u32 {
    1
}

/// The git state of the directory a run started in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GitState {
    /// Commit id of HEAD.
    pub commit: String,
    /// Branch name, or `HEAD` when detached.
    #[serde(default)]
    pub branch: Option<String>,
    /// Whether tracked files differ from HEAD.
    pub dirty: bool,
}

/// Everything needed to explain or repeat a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Manifest {
    /// warpt's version.
    pub warpt_version: String,
    /// `release` or `debug`: a debug build measures the compiler, not the machine.
    #[serde(default)]
    pub build_profile: String,
    /// The command line, argument by argument.
    #[serde(default)]
    pub command_line: Vec<String>,
    /// Host name.
    #[serde(default)]
    pub hostname: String,
    /// Operating system name and version.
    #[serde(default)]
    pub os: String,
    /// Kernel release (`uname -r`).
    #[serde(default)]
    pub kernel: String,
    /// CPU model name.
    #[serde(default)]
    pub cpu_model: String,
    /// The seed used.
    pub seed: u64,
    /// The effective configuration.
    #[serde(default)]
    pub config: RunConfig,
    /// Environment variables that change how benchmarks behave
    /// (OMP_, RAYON_, CUDA_, WARPT_, OPENBLAS_, MKL_ prefixes).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Git state of the working directory, when it is a repository.
    #[serde(default)]
    pub git: Option<GitState>,
    /// CPU microcode revision.
    #[serde(default)]
    pub microcode: Option<String>,
    /// cpufreq scaling governor of CPU 0.
    #[serde(default)]
    pub governor: Option<String>,
    /// Whether turbo/boost is enabled.
    #[serde(default)]
    pub boost: Option<bool>,
    /// SMT (hyper-threading) control state: `on`, `off`, `notsupported`, ...
    #[serde(default)]
    pub smt: Option<String>,
    /// 1-, 5- and 15-minute load averages when the run started.
    #[serde(default)]
    pub load_average: Option<[f64; 3]>,
    /// Warnings about the host's state at the start (governor, load).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Further facts (git state, governor, ...) added by later versions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, ParamValue>,
    /// What the person who ran it says about the run (`--label key=value`):
    /// stored, shown and filtered on ([`crate::labels`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// A sentence about the run (`--description`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A suite run that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("not a warpt suite run: {0}")]
pub struct LoadError(#[from] serde_json::Error);

/// Loads a suite run from JSON, including exports written before `status`
/// existed: their status is taken from `success`.
pub fn load_suite_run(json: &str) -> Result<BenchmarkSuiteRun, LoadError> {
    let mut value: serde_json::Value = serde_json::from_str(json)?;
    if let Some(results) = value.get_mut("benchmarks").and_then(|b| b.as_array_mut()) {
        for result in results {
            if let Some(obj) = result.as_object_mut()
                && !obj.contains_key("status")
            {
                let ok = obj
                    .get("success")
                    .and_then(|s| s.as_bool())
                    .unwrap_or(false);
                let status = if ok {
                    RunStatus::Passed
                } else {
                    RunStatus::Failed
                };
                obj.insert("status".into(), status.as_str().into());
            }
        }
    }
    Ok(serde_json::from_value(value)?)
}

/// The id of a run started at `at`: `YYYYMMDDTHHMMSSZ-SUFFIX`, so ids sort
/// by start time and the suffix (random for a new run, a content hash for
/// an import) tells apart runs started in the same second. Every run id
/// and server job id is made here.
pub fn run_id(at: jiff::Timestamp, suffix: &str) -> String {
    format!("{}-{suffix}", at.strftime("%Y%m%dT%H%M%SZ"))
}
