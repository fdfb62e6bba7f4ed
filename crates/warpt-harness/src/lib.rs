//! The warpt measurement core.
//!
//! - [`Benchmark`] and [`Suite`]: the protocol every workload implements
//!   (prepare, measure under [`Measure`], validate);
//! - [`Measure`] and [`MeasurePolicy`]: warm-up, then samples until a minimum
//!   time and a precision target are met, or a cap is hit;
//! - the statistics every metric carries: [`warpt_model::MetricStats::summarize`];
//! - [`Registry`] (suites, and the benchmarks standing for each component)
//!   and [`Plan`]: from the user's selection to benchmarks with effective
//!   parameters;
//! - [`run_plan`]: executes a plan into a [`warpt_model::BenchmarkSuiteRun`],
//!   each benchmark in a worker process ([`worker_main`], [`supervise`])
//!   under stage limits ([`EffectiveLimits`]), graded by [`assess`] with the
//!   [`interference`] measured over each measurement window;
//! - [`RegimeRecorder`]: what the regime probes read while a benchmark measures;
//! - [`trials`]: `--repeat` (the run as the unit of replication): orders and
//!   aggregates, trials in another clock regime left out;
//! - [`interleave`]: randomized interleaved A/B trials (`compare --rerun`);
//! - [`duet`]: A and B at the same time on separate CPUs (`--duet`);
//! - [`Progress`]: the events a run reports while it works;
//! - [`energy`]: a monitored result's energy as metrics (`energy_j`,
//!   `mean_power_w`, `energy_per_<unit>`);
//! - [`InProcess`]: one suite's benchmarks run briefly in this process
//!   (a suite's tests).

/// The protocol every benchmark and suite implements.
mod benchmark;
pub mod duet;
pub mod energy;
/// The stages of one benchmark run, and the clock that times them.
mod execute;
/// One suite's benchmarks run briefly in this process, without a worker.
mod in_process;
pub mod interference;
pub mod interleave;
/// Stage time limits: defaults, overrides, the effective limits.
mod limits;
/// The reproducibility manifest recorded with every suite run.
mod manifest;
/// The sampling loop and its stopping rule.
mod measure;
/// From the user's selection to a plan of benchmarks with checked parameters.
mod plan;
/// Progress events from the runner to whoever shows them.
mod progress;
/// Noise diagnostics: grading each result's measurement.
mod quality;
/// What the regime probes read while a benchmark measures.
mod regime;
/// The registry of suites and their benchmarks.
mod registry;
/// Runs a plan, benchmark by benchmark, into a suite run.
mod runner;
#[cfg(unix)]
/// A worker's stderr: the tail for crash reports, the whole in a log.
mod stderr;
/// The parent side of process isolation: a worker per benchmark, under limits.
mod supervisor;
pub mod trials;
mod worker;

pub use benchmark::{
    Benchmark, BenchmarkError, Listed, ListedSuite, MeasureResult, Measured, RunContext, Suite,
    prepared, prepared_mut,
};
pub use execute::{Outcome, execute};
pub use in_process::InProcess;
pub use limits::{
    EffectiveLimits, MEASURE_MARGIN, SETUP_LIMIT, SUITE_LIMIT, Stage, SuiteLimit, VALIDATE_LIMIT,
    WARMUP_MARGIN, WorkLimit, at_floor_rate,
};
pub use manifest::{MachineFacts, build_manifest, new_run_id, random_suffix};
pub use measure::{
    Convert, MAX_TIME_FACTOR, Measure, MeasurePolicy, Measurement, SeriesDef, SeriesMetrics,
};
pub use plan::{
    Gate, ParamArg, Plan, PlanError, PlannedBenchmark, Selection, Unavailable, is_sweep,
    param_name_problem,
};
pub use progress::{NoProgress, Progress, ProgressEvent};
pub use quality::{Assessment, HostConditions, assess};
pub use regime::RegimeRecorder;
pub use registry::Registry;
#[cfg(unix)]
pub use runner::probe_config;
pub use runner::{FALLBACK_DURATION, RunOptions, add_percentiles, limits_for, run_one, run_plan};
#[cfg(unix)]
pub use supervisor::{
    FreqTrace, KeptWorker, WORKER_SUBCOMMAND, signal_name, supervise, supervise_in,
};
pub use worker::{WorkerError, WorkerEvent, WorkerRequest, worker_main};

/// docs/architecture.md, whose worked example (a complete benchmark) is
/// compiled with the tests so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/architecture.md")]
pub struct ArchitectureGuide;
