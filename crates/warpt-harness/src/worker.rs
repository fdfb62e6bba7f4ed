//! The worker side of process isolation: the protocol between warpt and
//! the worker it starts for each benchmark, and the worker's main loop.
//!
//! The parent writes [`WorkerRequest`]s as JSON, one per line, on the
//! worker's stdin. The worker answers each with newline-delimited
//! [`WorkerEvent`]s on stdout, ending with exactly one `result`, then reads
//! the next request; it exits 0 when stdin closes. A parent that runs one
//! benchmark once writes one request and closes stdin; one that runs a
//! benchmark's trials in one worker ([`crate::KeptWorker`]) keeps it open
//! and writes the next request after each result. Anything else on stdout
//! is a protocol violation; stderr is free-form and kept for crash reports.

use std::io::{BufRead, Write};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use warpt_model::{BenchmarkId, ClockProbe, Params, StopReason};

use crate::execute::{Outcome, execute};
use crate::progress::{Progress, ProgressEvent};
use crate::{Registry, RunContext, SeriesDef};

/// What the parent asks a worker to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerRequest {
    /// The benchmark.
    pub id: BenchmarkId,
    /// Effective parameters.
    pub params: Params,
    /// Seed.
    pub seed: u64,
    /// Measurement time, seconds.
    pub duration_s: f64,
    /// Warm-up time, seconds.
    pub burnin_s: f64,
    /// Target relative CI half-width.
    pub target_rel_ci: f64,
    /// How to read the core's speed around each series, if at all.
    #[serde(default)]
    pub clock_probe: Option<ClockProbe>,
    /// Only read the benchmark's own configuration
    /// ([`crate::Benchmark::own_config`]), answered with a `config` event
    /// before the result; nothing is measured.
    #[serde(default)]
    pub probe: bool,
}

impl WorkerRequest {
    /// The run context the request describes.
    pub fn context(&self) -> RunContext {
        RunContext {
            params: self.params.clone(),
            seed: self.seed,
            duration: Duration::from_secs_f64(self.duration_s),
            burnin: Duration::from_secs_f64(self.burnin_s),
            target_rel_ci: self.target_rel_ci,
            clock_probe: self.clock_probe,
        }
    }
}

/// One line of the worker's stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WorkerEvent {
    /// A stage began: `setup`, `warmup`, `measure` or `validate`.
    Stage {
        /// The stage.
        stage: String,
    },
    /// The benchmark set a stage's limit (see [`ProgressEvent::StageLimit`]).
    StageLimit {
        /// The stage.
        stage: String,
        /// Its total limit, seconds, before the timeout multiplier.
        seconds: f64,
        /// The part of the work it covers.
        part: String,
    },
    /// Measurement progress.
    Progress {
        /// What is measured.
        label: String,
        /// Share of the minimum time elapsed.
        fraction: f64,
        /// Samples so far.
        samples: usize,
    },
    /// A series began.
    SeriesStarted {
        /// Its number.
        key: usize,
        /// What it measures.
        def: SeriesDef,
    },
    /// One sample of a series, in the metric's unit.
    Sample {
        /// The series.
        key: usize,
        /// The value.
        value: f64,
    },
    /// A series stopped sampling.
    SeriesFinished {
        /// The series.
        key: usize,
        /// Why.
        stop_reason: StopReason,
    },
    /// The benchmark's own configuration, the answer to a probe request
    /// (`null`: it has none).
    Config {
        /// What it said.
        config: serde_json::Value,
    },
    /// The benchmark's outcome; the last event of each request.
    Result {
        /// What it produced.
        outcome: Outcome,
    },
}

/// How long sample events may wait in the worker before they are written.
const SAMPLE_BATCH: Duration = Duration::from_millis(100);

/// Writes protocol lines on stdout. Sample events are batched (written at
/// most every [`SAMPLE_BATCH`], by a flusher thread if the benchmark is busy
/// or hung) so the parent wakes ten times a second instead of once per
/// sample while a benchmark uses every CPU; all other events go at once.
struct EventWriter {
    pending: Mutex<String>,
}

impl EventWriter {
    fn write_out(text: &str) {
        // A closed stdout means the parent is gone; the worker is about to be
        // killed anyway, so a write error is ignored.
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    /// Writes whatever is pending.
    fn flush(&self) {
        if let Ok(mut pending) = self.pending.lock()
            && !pending.is_empty()
        {
            Self::write_out(&pending);
            pending.clear();
        }
    }

    fn send(&self, event: &WorkerEvent) {
        let Ok(line) = serde_json::to_string(event) else {
            return;
        };
        if let Ok(mut pending) = self.pending.lock() {
            pending.push_str(&line);
            pending.push('\n');
            if !matches!(event, WorkerEvent::Sample { .. }) {
                Self::write_out(&pending);
                pending.clear();
            }
        }
    }
}

impl Progress for EventWriter {
    fn event(&self, event: ProgressEvent<'_>) {
        let e = match event {
            ProgressEvent::Stage { stage } => WorkerEvent::Stage {
                stage: stage.into(),
            },
            ProgressEvent::StageLimit {
                stage,
                seconds,
                part,
            } => WorkerEvent::StageLimit {
                stage: stage.into(),
                seconds,
                part: part.into(),
            },
            ProgressEvent::Measuring {
                label,
                fraction,
                samples,
            } => WorkerEvent::Progress {
                label: label.into(),
                fraction,
                samples,
            },
            ProgressEvent::SeriesStarted { key, def } => WorkerEvent::SeriesStarted {
                key,
                def: def.clone(),
            },
            ProgressEvent::Sample { key, value } => WorkerEvent::Sample { key, value },
            ProgressEvent::SeriesFinished { key, stop_reason } => {
                WorkerEvent::SeriesFinished { key, stop_reason }
            }
            ProgressEvent::BenchmarkStarted { .. } | ProgressEvent::BenchmarkFinished { .. } => {
                return;
            }
        };
        self.send(&e);
    }
}

/// Why a worker could not start its benchmark.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// stdin did not hold a request.
    #[error("worker: cannot read the request on stdin: {0}")]
    Request(String),
    /// The requested benchmark is not in this binary.
    #[error("worker: {0} is not in this build")]
    Unknown(BenchmarkId),
}

/// The worker's main: reads requests from `input`, one per line, runs each
/// and writes its events to stdout, until `input` ends. The benchmark of
/// one request stays for the next of the same id when it says it can run
/// again ([`crate::Benchmark::runs_again`]); otherwise each request gets a
/// fresh one. Panics propagate (the parent reports the crash with the
/// panic message from stderr).
pub fn worker_main(registry: &Registry, input: impl BufRead) -> Result<(), WorkerError> {
    let writer = EventWriter {
        pending: Mutex::new(String::new()),
    };
    let mut kept: Option<(BenchmarkId, Box<dyn crate::Benchmark>)> = None;
    let mut any = false;
    for line in input.lines() {
        let line = line.map_err(|e| WorkerError::Request(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        any = true;
        let request: WorkerRequest =
            serde_json::from_str(&line).map_err(|e| WorkerError::Request(e.to_string()))?;
        let mut bench = match kept.take() {
            Some((id, bench)) if id == request.id => bench,
            _ => registry
                .create(&request.id)
                .ok_or_else(|| WorkerError::Unknown(request.id.clone()))?,
        };
        if request.probe {
            probe(bench.as_mut(), &request, &writer);
        } else {
            run(bench.as_mut(), &request, &writer);
        }
        if bench.runs_again() {
            kept = Some((request.id, bench));
        }
    }
    if any {
        Ok(())
    } else {
        Err(WorkerError::Request("stdin held no request".into()))
    }
}

/// One request's stages, its events written as they come (samples by a
/// flusher thread, see [`EventWriter`]).
fn run(bench: &mut dyn crate::Benchmark, request: &WorkerRequest, writer: &EventWriter) {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let flusher = scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::park_timeout(SAMPLE_BATCH);
                writer.flush();
            }
        });
        let outcome = execute(bench, &request.context(), writer, None);
        writer.send(&WorkerEvent::Result { outcome });
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        flusher.thread().unpark();
    });
}

/// A probe request: the benchmark's own configuration, then a result
/// (passed, or the error that stopped it).
fn probe(bench: &mut dyn crate::Benchmark, request: &WorkerRequest, writer: &EventWriter) {
    writer.send(&WorkerEvent::Stage {
        stage: "setup".into(),
    });
    let outcome = match bench.own_config(&request.context()) {
        Ok(config) => {
            writer.send(&WorkerEvent::Config {
                config: config.unwrap_or(serde_json::Value::Null),
            });
            Outcome::passed()
        }
        Err(e) => Outcome::from_error(e, "setup"),
    };
    writer.send(&WorkerEvent::Result { outcome });
}
