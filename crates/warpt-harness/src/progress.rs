//! Progress events: what a run reports while it works.
//!
//! The harness knows nothing of terminals. The CLI turns these events into a
//! progress bar; a worker process (later) forwards them as JSON lines.

use warpt_model::{BenchmarkId, BenchmarkRunResult};

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
}

/// Discards every event (tests, `--json` without a terminal).
pub struct NoProgress;

impl Progress for NoProgress {
    fn event(&self, _: ProgressEvent<'_>) {}
}
