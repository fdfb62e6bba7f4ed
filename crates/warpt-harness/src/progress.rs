//! Progress events: what a run reports while it works.
//!
//! The harness knows nothing of terminals. The CLI turns these events into a
//! progress bar; a worker process (later) forwards them as JSON lines.

use warpt_model::{BenchmarkId, BenchmarkRunResult, StopReason};

use crate::SeriesDef;

/// One thing that happened during a run.
#[derive(Debug, Clone)]
pub enum ProgressEvent<'a> {
    /// A benchmark is about to start (`index` counts from 0 of `total`).
    BenchmarkStarted {
        /// Which benchmark.
        id: &'a BenchmarkId,
        /// Its position in the plan.
        index: usize,
        /// How many benchmarks the plan has.
        total: usize,
    },
    /// A stage began: `setup`, `warmup`, `measure` or `validate`.
    Stage {
        /// The stage's name.
        stage: &'static str,
    },
    /// The benchmark set the limit of a stage from what it knows of its
    /// own work (an external tool whose time grows with the problem), and
    /// named the part of the work the limit covers.
    StageLimit {
        /// The stage: `setup`, `warmup`, `measure` or `validate`.
        stage: &'static str,
        /// The stage's total time limit, seconds, before the timeout multiplier.
        seconds: f64,
        /// What runs in the stage now and how the limit was reckoned, for
        /// the progress display and a timeout's message.
        part: &'a str,
    },
    /// Measurement advanced: `fraction` (0..=1) of the expected time passed,
    /// for the series named `label`.
    Measuring {
        /// What is being measured, e.g. `fp64 threads=all`.
        label: &'a str,
        /// Share of the minimum measurement time elapsed, capped at 1.
        fraction: f64,
        /// Samples taken so far.
        samples: usize,
    },
    /// A series begins sampling; `key` numbers the benchmark's series from 0.
    SeriesStarted {
        /// The series' number within this benchmark run.
        key: usize,
        /// What it measures.
        def: &'a SeriesDef,
    },
    /// One counted sample of series `key`, already converted to the metric's unit.
    Sample {
        /// The series.
        key: usize,
        /// The metric value of this sample.
        value: f64,
    },
    /// Series `key` stopped sampling.
    SeriesFinished {
        /// The series.
        key: usize,
        /// Why.
        stop_reason: StopReason,
    },
    /// A benchmark finished, whatever its status.
    BenchmarkFinished {
        /// Its result.
        result: &'a BenchmarkRunResult,
    },
}

/// Receives progress events. Implementations must be cheap: they are called
/// between samples, never inside a timed region.
pub trait Progress: Sync {
    /// Handles one event.
    fn event(&self, event: ProgressEvent<'_>);

    /// A sample of the monitor, as it is taken (`--monitor`): for a display
    /// that streams telemetry; ignored by default.
    fn telemetry(&self, _sample: &warpt_model::TelemetrySample) {}
}

/// Discards every event (tests, `--json` without a terminal).
pub struct NoProgress;

impl Progress for NoProgress {
    fn event(&self, _: ProgressEvent<'_>) {}
}
