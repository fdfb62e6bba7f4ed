//! The events of a run as it happens: what `benchmark run --events` writes
//! as JSON lines (one object per line, with a `type`) and `warpt serve`
//! reads back and forwards to its WebSocket clients.

use serde::{Deserialize, Serialize};

use crate::{BenchmarkRunResult, SeriesDef, StopReason, TelemetrySample};

/// One event of a run. `benchmark` is the `suite/name` the event belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent {
    /// The server queued job `id` behind `position` others (written by
    /// the server).
    Queued {
        /// The job's id.
        id: String,
        /// Runs ahead of it.
        position: usize,
    },
    /// The server started job `id` (written by the server, not the run).
    RunStarted {
        /// The job's (and run's) id.
        id: String,
    },
    /// A benchmark is about to start (`index` counts from 0 of `total`).
    BenchmarkStarted {
        /// Which.
        benchmark: String,
        /// Its position in the plan.
        index: usize,
        /// How many benchmarks the plan has.
        total: usize,
    },
    /// A stage began: `setup`, `warmup`, `measure` or `validate`.
    Stage {
        /// Which benchmark.
        benchmark: String,
        /// The stage.
        stage: String,
    },
    /// The benchmark set the time limit of a stage from its own work.
    StageLimit {
        /// Which benchmark.
        benchmark: String,
        /// The stage.
        stage: String,
        /// The limit, seconds, before the timeout multiplier.
        seconds: f64,
        /// The part of the work the limit covers.
        part: String,
    },
    /// Measurement advanced.
    Progress {
        /// Which benchmark.
        benchmark: String,
        /// What is measured.
        label: String,
        /// Share of the minimum measurement time elapsed, 0..=1.
        fraction: f64,
        /// Samples so far.
        samples: usize,
    },
    /// A series begins sampling.
    SeriesStarted {
        /// Which benchmark.
        benchmark: String,
        /// The series' number within the benchmark.
        key: usize,
        /// What it measures.
        def: SeriesDef,
    },
    /// One counted sample, in the metric's unit.
    Sample {
        /// Which benchmark.
        benchmark: String,
        /// The series.
        key: usize,
        /// The value.
        value: f64,
    },
    /// A series stopped sampling.
    SeriesFinished {
        /// Which benchmark.
        benchmark: String,
        /// The series.
        key: usize,
        /// Why.
        stop_reason: StopReason,
    },
    /// A benchmark finished, whatever its status.
    Result {
        /// Which benchmark.
        benchmark: String,
        /// Its result.
        result: Box<BenchmarkRunResult>,
    },
    /// A monitor sample, as it is taken.
    Telemetry {
        /// The sample.
        sample: Box<TelemetrySample>,
    },
    /// The server's job ended (written by the server).
    RunFinished {
        /// The job's id.
        id: String,
        /// `finished`, `failed`, `cancelled` or `interrupted`.
        state: String,
        /// Why, when it did not finish.
        message: Option<String>,
    },
}

impl RunEvent {
    /// One JSON line (without the newline).
    pub fn to_line(&self) -> String {
        // A derived Serialize of plain data cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether this is a per-sample event (the ones a long feed may drop).
    pub fn is_sample(&self) -> bool {
        matches!(self, RunEvent::Sample { .. })
    }
}
