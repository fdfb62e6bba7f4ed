//! Runs a plan, benchmark by benchmark, into a suite run.
//!
//! By default each benchmark runs in its own worker process (the warpt
//! binary started with a hidden subcommand) under stage time limits; with
//! `in_process` it runs in the calling process, where a panic is caught but
//! a hang or a crash cannot be. Either way one benchmark's failure never
//! stops the suite, and an interrupt keeps everything finished so far.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use warpt_model::{
    BenchmarkRunResult, BenchmarkSuiteRun, RunConfig, RunStatus, StageError, StageLimits,
    StageStatus, Trial, Validation,
};

use crate::execute::{ClockedProgress, execute};
use crate::limits::{EffectiveLimits, Stage};
use crate::manifest::build_manifest;
use crate::progress::{Progress, ProgressEvent};
use crate::quality::{HostConditions, assess};
use crate::supervisor::FreqTrace;
use crate::trials::{aggregate_trials, trial_order};
use crate::{Plan, PlannedBenchmark, Registry, RunContext};

/// A planned benchmark in a worker process, and its probe.
mod isolated;
#[cfg(unix)]
pub use isolated::probe_config;
use isolated::run_isolated;

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
    /// Run benchmarks in this process instead of a worker each (debugging).
    pub in_process: bool,
    /// The executable to start workers from (normally the running binary).
    pub worker_exe: Option<PathBuf>,
    /// Stage limits from configuration, for every benchmark.
    pub timeouts: StageLimits,
    /// Stage limits from configuration for single benchmarks (`suite/name`).
    pub benchmark_timeouts: BTreeMap<String, StageLimits>,
    /// `--timeout-multiplier`.
    pub timeout_multiplier: f64,
    /// Set by a signal handler to stop the run.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// The configuration file the options came from, if any.
    pub config_file: Option<String>,
    /// The export this run replays, if any.
    pub replay_of: Option<String>,
    /// The background monitor, when `--monitor` is on: each result gets a
    /// summary of the samples taken during its measurement window.
    pub monitor: Option<Arc<warpt_system::monitor::Monitor>>,
    /// `--repeat`: how many times the whole plan runs (each a trial).
    pub repeat: u32,
    /// The host's state at the start, if the caller captured it already.
    pub host: Option<HostConditions>,
    /// The machine's snapshot, if the caller took it already (a front end
    /// running many one-benchmark plans takes it once: it starts every
    /// tool on the PATH to read its version).
    pub system: Option<warpt_model::ListOutput>,
    /// The manifest's machine and source facts, if the caller captured
    /// them already (as `system`, once for many one-benchmark plans).
    pub machine: Option<crate::MachineFacts>,
    /// The suite run's id, when the caller chose it (`warpt serve` names a
    /// run before it starts); otherwise one is made from the start time.
    pub run_id: Option<String>,
    /// Where each worker's stderr (the benchmark's own output: its prints,
    /// its libraries' messages) is appended in full; without it only a
    /// crash keeps the last lines. A harness run sets it per benchmark.
    pub output_log: Option<PathBuf>,
    /// The whole run's time limit (`--suite-timeout`): past it the
    /// benchmark running is stopped and the rest are not started, each
    /// `timeout`; `None` for none.
    pub suite_limit: Option<crate::SuiteLimit>,
    /// Percentiles added to every metric's stats (`--percentiles`).
    pub percentiles: warpt_model::Percentiles,
    /// The run's labels (`--label`), for its manifest.
    pub labels: BTreeMap<String, String>,
    /// The run's description (`--description`), for its manifest.
    pub description: Option<String>,
    /// One worker for every run of this (one-benchmark) plan: a front end
    /// that runs a benchmark's trials as one-benchmark plans keeps its
    /// worker here, so each trial after the first skips starting one
    /// (and whatever the benchmark keeps, see [`crate::Benchmark::runs_again`]).
    /// `None`: a fresh worker per benchmark run.
    pub kept_worker: Option<crate::KeptWorker>,
}

impl RunOptions {
    /// Options with every default: in a worker per benchmark, 1 s warm-up,
    /// seed 42, ±1% precision, no interrupt flag.
    pub fn new(tool_version: &str, build_profile: &str) -> Self {
        RunOptions {
            duration: None,
            burnin: Duration::from_secs(1),
            seed: 42,
            target_rel_ci: 0.01,
            tool_version: tool_version.to_string(),
            build_profile: build_profile.to_string(),
            command_line: Vec::new(),
            in_process: false,
            worker_exe: None,
            timeouts: StageLimits::default(),
            benchmark_timeouts: BTreeMap::new(),
            timeout_multiplier: 1.0,
            interrupt: None,
            config_file: None,
            replay_of: None,
            monitor: None,
            repeat: 1,
            host: None,
            system: None,
            machine: None,
            run_id: None,
            output_log: None,
            suite_limit: None,
            percentiles: warpt_model::Percentiles::default(),
            labels: BTreeMap::new(),
            description: None,
            kept_worker: None,
        }
    }

    /// The configuration recorded in the manifest.
    pub fn config(&self, plan: &Plan) -> RunConfig {
        RunConfig {
            plan: plan.entries.iter().map(|e| e.spec.id.clone()).collect(),
            duration_s: self.duration.map(|d| d.as_secs_f64()),
            burnin_s: self.burnin.as_secs_f64(),
            seed: self.seed,
            param_overrides: plan.overrides.clone(),
            target_rel_ci: self.target_rel_ci,
            timeouts: self.timeouts,
            benchmark_timeouts: self.benchmark_timeouts.clone(),
            timeout_multiplier: self.timeout_multiplier,
            in_process: self.in_process,
            config_file: self.config_file.clone(),
            repeat: self.repeat.max(1),
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
            clock_probe: planned
                .spec
                .components
                .iter()
                .any(|c| {
                    matches!(
                        c,
                        warpt_model::BenchmarkComponent::Cpu | warpt_model::BenchmarkComponent::Ram
                    )
                })
                .then_some(planned.spec.clock_probe),
        }
    }

    fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Runs every benchmark of `plan` and assembles the suite run, with the
/// machine snapshot and manifest captured once. With `repeat` > 1 the plan
/// runs that many times, each repetition (a [`Trial`]) in its own seeded
/// order, and `benchmarks` holds the aggregates over the trials (see
/// [`crate::trials`]). Stops early, with `interrupted` set, when the
/// interrupt flag is raised.
pub fn run_plan(
    registry: &Registry,
    plan: &Plan,
    options: &RunOptions,
    progress: &dyn Progress,
) -> BenchmarkSuiteRun {
    let start = Timestamp::now();
    let host = options
        .host
        .clone()
        .unwrap_or_else(|| HostConditions::capture(&options.build_profile));
    let mut manifest = build_manifest(options, plan);
    manifest.warnings = host.warnings();
    // Power the monitor cannot read, said once with its fix.
    if let Some(why) = options
        .monitor
        .as_ref()
        .and_then(|m| crate::energy::unmeasured(m.missing()))
    {
        manifest.warnings.push(why);
    }
    let system = options
        .system
        .clone()
        .unwrap_or_else(warpt_system::snapshot);
    let planned = plan.entries.len();
    let repeat = options.repeat.max(1);
    let total = planned * repeat as usize;
    let mut trials = Vec::new();
    let mut interrupted = false;
    let mut done = 0;
    for index in 1..=repeat {
        let order = if repeat == 1 {
            (0..planned).collect()
        } else {
            trial_order(planned, options.seed, index)
        };
        let mut trial = Trial {
            index,
            start_time: Some(Timestamp::now()),
            end_time: None,
            order: Vec::new(),
            benchmarks: Vec::new(),
        };
        for position in order {
            if options.interrupted() {
                interrupted = true;
                break;
            }
            let entry = &plan.entries[position];
            progress.event(ProgressEvent::BenchmarkStarted {
                id: &entry.spec.id,
                index: done,
                total,
            });
            done += 1;
            let result = match options.suite_limit.filter(crate::SuiteLimit::passed) {
                Some(limit) => not_started(entry, &limit),
                None => run_entry(registry, entry, options, &host, progress),
            };
            progress.event(ProgressEvent::BenchmarkFinished { result: &result });
            let stop = result.interrupted;
            trial.order.push(position);
            trial.benchmarks.push(result);
            if stop {
                interrupted = true;
                break;
            }
        }
        trial.end_time = Some(Timestamp::now());
        trials.push(trial);
        if interrupted {
            break;
        }
    }
    let (mut benchmarks, mut trials) = if repeat == 1 {
        let only = trials.pop().map(|t| t.benchmarks).unwrap_or_default();
        (only, Vec::new())
    } else {
        crate::trials::mark_regimes_across_trials(&mut trials, planned);
        (aggregate_trials(&trials, planned), trials)
    };
    for r in benchmarks
        .iter_mut()
        .chain(trials.iter_mut().flat_map(|t| t.benchmarks.iter_mut()))
    {
        add_percentiles(r, &options.percentiles);
    }
    let mut metadata = BTreeMap::new();
    for u in &plan.unavailable {
        metadata.insert(format!("unavailable.{}", u.id), u.reason.clone());
    }
    BenchmarkSuiteRun {
        id: options
            .run_id
            .clone()
            .unwrap_or_else(|| crate::new_run_id(start)),
        suite: plan.suite.clone(),
        components: plan.components.clone(),
        benchmarks,
        metadata: (!metadata.is_empty()).then_some(metadata),
        start_time: Some(start),
        end_time: Some(Timestamp::now()),
        interrupted,
        manifest: Some(manifest),
        system: Some(system),
        trials,
    }
}

/// Adds `ps` to the stats of every metric of `r`.
pub fn add_percentiles(r: &mut BenchmarkRunResult, ps: &warpt_model::Percentiles) {
    for m in &mut r.metrics {
        if let Some(st) = m.stats.as_mut() {
            st.add_percentiles(ps);
        }
    }
}

/// The `timeout` result of a benchmark the suite's limit left unstarted.
fn not_started(planned: &PlannedBenchmark, limit: &crate::SuiteLimit) -> BenchmarkRunResult {
    let now = Timestamp::now();
    let mut r = BenchmarkRunResult::new(
        planned.spec.clone(),
        planned.params.clone(),
        RunStatus::Timeout,
        now,
    );
    r.end_time = now;
    r.error_message = Some(format!(
        "TIMEOUT: not started: the suite's time limit ({}) had passed",
        limit.describe()
    ));
    r
}

/// Runs one planned benchmark (in a worker unless `in_process`) and
/// completes its result: telemetry, sweep tags, interference and quality.
fn run_entry(
    registry: &Registry,
    planned: &PlannedBenchmark,
    options: &RunOptions,
    host: &HostConditions,
    progress: &dyn Progress,
) -> BenchmarkRunResult {
    let (mut result, freq, window) = if options.in_process || !cfg!(unix) {
        let r = run_one(registry, planned, options, progress);
        let window = Some((r.start_time, r.end_time));
        (r, FreqTrace::default(), window)
    } else {
        run_isolated(planned, options, progress)
    };
    if let (Some(monitor), Some((from, to))) = (&options.monitor, window) {
        let seconds = (to - from).total(jiff::Unit::Second).unwrap_or(0.0);
        let samples = monitor.window(from, to);
        let mut summary =
            warpt_system::monitor::summarize(&samples, Some(from), seconds, monitor.missing());
        let energy = crate::energy::energy_metrics(&mut summary, &result.metrics);
        result.metrics.extend(energy);
        result.telemetry = Some(summary);
    }
    sweep_tags(&mut result.metrics, &planned.sweep);
    record_error(&mut result);
    let grade = assess(&result, host, freq, options.target_rel_ci);
    result.quality = Some(grade.quality);
    result.measurement_quality = Some(grade.measurement_quality);
    result.quality_reasons = grade.reasons;
    result
}

/// A swept entry's parameters tell its metrics apart from the other
/// entries': each becomes a tag. Where a metric already has a tag of that
/// name with another value (cpu_flops' `threads=all` series under
/// `--param threads=1,2`), the swept value goes to `param.<name>`, so the
/// two entries' series never share a key.
fn sweep_tags(metrics: &mut [warpt_model::BenchmarkMetric], sweep: &BTreeMap<String, String>) {
    for m in metrics {
        for (k, v) in sweep {
            match m.tags.get(k) {
                None => {
                    m.tags.insert(k.clone(), v.clone());
                }
                Some(own) if own == v => {}
                Some(_) => {
                    m.tags.insert(format!("param.{k}"), v.clone());
                }
            }
        }
    }
}

/// A result that failed, timed out or crashed without an `errors` entry
/// (the supervisor ended it, not the benchmark) gets one: its message, at
/// the stage the watchdog saw end badly.
fn record_error(result: &mut BenchmarkRunResult) {
    let ended_badly = matches!(
        result.status,
        RunStatus::Failed | RunStatus::Timeout | RunStatus::Crashed
    );
    let (true, true, Some(message)) = (
        ended_badly,
        result.errors.is_empty(),
        result.error_message.clone(),
    ) else {
        return;
    };
    let stage = result.watchdog.as_ref().and_then(|w| {
        [
            ("setup", &w.setup),
            ("warmup", &w.warmup),
            ("measure", &w.measure),
            ("validate", &w.validate),
        ]
        .into_iter()
        .find(|(_, r)| {
            r.as_ref()
                .is_some_and(|r| matches!(r.status, StageStatus::Failed | StageStatus::Timeout))
        })
        .map(|(name, _)| name)
    });
    // A failed check of the answer ends no stage badly: it is validate's.
    let refuted = result.validation.as_ref().is_some_and(|v| !v.passed);
    let stage = stage.unwrap_or(if refuted { "validate" } else { "run" });
    result.errors.push(StageError::new(stage, message));
}

/// The limits one planned benchmark runs under.
pub fn limits_for(planned: &PlannedBenchmark, options: &RunOptions) -> EffectiveLimits {
    let ctx = options.context(planned);
    let configured = options.timeouts.overridden_by(
        options
            .benchmark_timeouts
            .get(&planned.spec.id.to_string())
            .copied()
            .unwrap_or_default(),
    );
    EffectiveLimits::new(
        ctx.duration,
        ctx.burnin,
        planned.spec.timeouts,
        configured,
        options.timeout_multiplier,
    )
}

/// Runs one planned benchmark in this process: prepare, measure, validate.
/// Errors and panics become `skipped`, `failed` or `crashed` results;
/// limits are recorded but cannot be enforced here.
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
    let limits = limits_for(planned, options);
    let clocked = ClockedProgress::new(progress, bench.measured_in());
    let stop = options.interrupt.as_deref();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        execute(bench.as_mut(), &ctx, &clocked, stop)
    }));
    let now = Instant::now();
    result.interference = clocked
        .probe
        .into_inner()
        .ok()
        .and_then(crate::interference::Probe::finish);
    let mut clock = clocked.clock.into_inner().unwrap_or_default();
    let current = clock.current();
    clock.close(now);
    let mut ended_in = None;
    match outcome {
        Ok(o) => {
            if o.status == RunStatus::Failed && o.validation.is_none() {
                ended_in = current.map(|s| (s, StageStatus::Failed));
            }
            o.apply_to(&mut result);
            if options.interrupted() {
                result.interrupted = true;
                result.set_status(RunStatus::Failed);
                result.error_message = Some("interrupted: sampling was cut short".into());
            }
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
            ended_in = Some((current.unwrap_or(Stage::Setup), StageStatus::Failed));
        }
    }
    result.watchdog = Some(clock.watchdog(now, Some(&limits), ended_in));
    result.end_time = Timestamp::now();
    result
}
