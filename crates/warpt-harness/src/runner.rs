//! Runs a plan, benchmark by benchmark, into a suite run.
//!
//! This runner executes benchmarks in the calling process. A benchmark's
//! error or panic becomes a structured result and never stops the suite.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use warpt_model::{
    BenchmarkRunResult, BenchmarkSuiteRun, RunConfig, RunStatus, StageRecord, StageStatus,
    Validation, Watchdog,
};

use crate::manifest::{build_manifest, random_suffix};
use crate::progress::{Progress, ProgressEvent};
use crate::{BenchmarkError, Measure, Plan, PlannedBenchmark, Registry, RunContext};

/// Measurement time of a benchmark whose spec names none.
pub const FALLBACK_DURATION: Duration = Duration::from_secs(5);

/// How to run a plan: everything that is not a benchmark parameter.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `--duration`: overrides every benchmark's default measurement time.
    pub duration: Option<Duration>,
    /// `--burnin-seconds`: warm-up before measuring.
    pub burnin: Duration,
    /// `--seed`.
    pub seed: u64,
    /// Target relative half-width of the median's 95% CI.
    pub target_rel_ci: f64,
    /// The version of the warpt binary.
    pub tool_version: String,
    /// `release` or `debug`.
    pub build_profile: String,
    /// The command line that started the run.
    pub command_line: Vec<String>,
}

impl RunOptions {
    /// The configuration recorded in the manifest.
    pub fn config(&self, plan: &Plan) -> RunConfig {
        RunConfig {
            plan: plan.entries.iter().map(|e| e.spec.id.clone()).collect(),
            duration_s: self.duration.map(|d| d.as_secs_f64()),
            burnin_s: self.burnin.as_secs_f64(),
            seed: self.seed,
            param_overrides: plan.overrides.clone(),
            target_rel_ci: self.target_rel_ci,
        }
    }

    fn context(&self, planned: &PlannedBenchmark) -> RunContext {
        let duration = self.duration.unwrap_or_else(|| {
            planned
                .spec
                .default_duration_seconds
                .map(Duration::from_secs_f64)
                .unwrap_or(FALLBACK_DURATION)
        });
        RunContext {
            params: planned.params.clone(),
            seed: self.seed,
            duration,
            burnin: self.burnin,
            target_rel_ci: self.target_rel_ci,
        }
    }
}

/// Runs every benchmark of `plan` in order and assembles the suite run,
/// with the machine snapshot and manifest captured once.
pub fn run_plan(
    registry: &Registry,
    plan: &Plan,
    options: &RunOptions,
    progress: &dyn Progress,
) -> BenchmarkSuiteRun {
    let start = Timestamp::now();
    let manifest = build_manifest(options, plan);
    let system = warpt_system::snapshot();
    let total = plan.entries.len();
    let mut results = Vec::with_capacity(total);
    for (index, planned) in plan.entries.iter().enumerate() {
        progress.event(ProgressEvent::BenchmarkStarted {
            id: &planned.spec.id,
            index,
            total,
        });
        let result = run_one(registry, planned, options, progress);
        progress.event(ProgressEvent::BenchmarkFinished { result: &result });
        results.push(result);
    }
    let mut metadata = BTreeMap::new();
    for u in &plan.unavailable {
        metadata.insert(format!("unavailable.{}", u.id), u.reason.clone());
    }
    BenchmarkSuiteRun {
        id: format!("{}-{}", start.strftime("%Y%m%dT%H%M%SZ"), random_suffix()),
        suite: plan.suite.clone(),
        components: plan.components.clone(),
        benchmarks: results,
        metadata: (!metadata.is_empty()).then_some(metadata),
        start_time: Some(start),
        end_time: Some(Timestamp::now()),
        interrupted: false,
        manifest: Some(manifest),
        system: Some(system),
    }
}

/// Runs one planned benchmark: prepare, measure, validate. Errors and
/// panics become `skipped`, `failed` or `crashed` results.
pub fn run_one(
    registry: &Registry,
    planned: &PlannedBenchmark,
    options: &RunOptions,
    progress: &dyn Progress,
) -> BenchmarkRunResult {
    let spec = planned.spec.clone();
    let mut result = BenchmarkRunResult::new(
        spec.clone(),
        planned.params.clone(),
        RunStatus::Failed,
        Timestamp::now(),
    );
    let Some(mut bench) = registry.create(&spec.id) else {
        result.error_message = Some(format!("{} is not in this build", spec.id));
        result.end_time = Timestamp::now();
        return result;
    };
    let ctx = options.context(planned);
    let mut watchdog = Watchdog::default();
    let stage = |status, t: Instant| StageRecord {
        status,
        duration_s: t.elapsed().as_secs_f64(),
        limit_s: None,
    };

    let outcome = catch_unwind(AssertUnwindSafe(|| {
        progress.event(ProgressEvent::Stage { stage: "setup" });
        let t = Instant::now();
        if let Err(e) = bench.prepare(&ctx) {
            watchdog.setup = Some(stage(StageStatus::Failed, t));
            return Err(e);
        }
        watchdog.setup = Some(stage(StageStatus::Completed, t));

        let mut measure = Measure::new(progress);
        let measured = bench.measure(&ctx, &mut measure);
        watchdog.warmup = Some(StageRecord {
            status: StageStatus::Completed,
            duration_s: measure.warmup_time().as_secs_f64(),
            limit_s: None,
        });
        watchdog.measure = Some(StageRecord {
            status: if measured.is_ok() {
                StageStatus::Completed
            } else {
                StageStatus::Failed
            },
            duration_s: measure.measure_time().as_secs_f64(),
            limit_s: None,
        });
        let measured = measured?;

        progress.event(ProgressEvent::Stage { stage: "validate" });
        let t = Instant::now();
        let validation = bench.validate(&ctx);
        watchdog.validate = Some(stage(StageStatus::Completed, t));
        Ok((measured, validation, measure.stop_reason()))
    }));

    match outcome {
        Ok(Ok((measured, validation, stop_reason))) => {
            result.metrics = measured.metrics;
            result.details = measured.details.into_iter().collect();
            result.warnings = measured.warnings;
            result.stop_reason = stop_reason;
            let status = if validation.passed {
                RunStatus::Passed
            } else {
                RunStatus::Failed
            };
            if !validation.passed {
                result.error_message = Some(format!("validation failed: {}", validation.message));
            }
            result.validation = Some(validation);
            result.set_status(status);
        }
        Ok(Err(BenchmarkError::Skipped(reason))) => {
            result.set_status(RunStatus::Skipped);
            result.error_message = Some(reason);
        }
        Ok(Err(e)) => {
            result.set_status(RunStatus::Failed);
            result.error_message = Some(e.to_string());
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            result.set_status(RunStatus::Crashed);
            result.error_message = Some(format!("benchmark panicked: {msg}"));
            result.validation = Some(Validation::fail("not validated: the benchmark panicked"));
        }
    }
    result.watchdog = Some(watchdog);
    result.end_time = Timestamp::now();
    result
}
