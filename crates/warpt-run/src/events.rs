//! A run's progress as typed events ([`RunEvent`]): JSON lines on stdout
//! for `benchmark run --events`, or handed to a sink (`warpt serve` feeds
//! its WebSocket clients from one, running the request in process).
//!
//! The worker's own events keep the worker protocol's names (`stage`,
//! `stage_limit`, `progress`, `series_started`, `sample`,
//! `series_finished`, `result`) and gain the benchmark they belong to;
//! `benchmark_started` opens each benchmark and `telemetry` carries the
//! monitor's samples as they are taken.

use std::io::Write;
use std::sync::{Arc, Mutex};

use warpt_harness::{Progress, ProgressEvent};
use warpt_model::{RunEvent, TelemetrySample};

/// Where events go.
pub type Sink = Arc<dyn Fn(&RunEvent) + Send + Sync>;

/// Turns a run's progress into events for a sink.
pub struct EventLines {
    benchmark: Mutex<String>,
    sink: Sink,
}

impl EventLines {
    /// Events as JSON lines on stdout, each flushed at once. A write that
    /// fails (the reader went away) is ignored: a parent's death also
    /// signals this process, which then stops as on Ctrl-C.
    pub fn stdout() -> Self {
        EventLines::to(Arc::new(|event: &RunEvent| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", event.to_line());
            let _ = out.flush();
        }))
    }

    /// Events handed to `sink`.
    pub fn to(sink: Sink) -> Self {
        EventLines {
            benchmark: Mutex::new(String::new()),
            sink,
        }
    }

    fn benchmark(&self) -> String {
        self.benchmark.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Progress for EventLines {
    fn event(&self, event: ProgressEvent<'_>) {
        let line = match event {
            ProgressEvent::BenchmarkStarted { id, index, total } => {
                if let Ok(mut b) = self.benchmark.lock() {
                    *b = id.to_string();
                }
                RunEvent::BenchmarkStarted {
                    benchmark: id.to_string(),
                    index,
                    total,
                }
            }
            ProgressEvent::Stage { stage } => RunEvent::Stage {
                benchmark: self.benchmark(),
                stage: stage.into(),
            },
            ProgressEvent::StageLimit {
                stage,
                seconds,
                part,
            } => RunEvent::StageLimit {
                benchmark: self.benchmark(),
                stage: stage.into(),
                seconds,
                part: part.into(),
            },
            ProgressEvent::Measuring {
                label,
                fraction,
                samples,
            } => RunEvent::Progress {
                benchmark: self.benchmark(),
                label: label.into(),
                fraction,
                samples,
            },
            ProgressEvent::SeriesStarted { key, def } => RunEvent::SeriesStarted {
                benchmark: self.benchmark(),
                key,
                def: def.clone(),
            },
            ProgressEvent::Sample { key, value } => RunEvent::Sample {
                benchmark: self.benchmark(),
                key,
                value,
            },
            ProgressEvent::SeriesFinished { key, stop_reason } => RunEvent::SeriesFinished {
                benchmark: self.benchmark(),
                key,
                stop_reason,
            },
            ProgressEvent::BenchmarkFinished { result } => RunEvent::Result {
                benchmark: result.spec.id.to_string(),
                result: Box::new(result.clone()),
            },
        };
        (self.sink)(&line);
    }

    fn telemetry(&self, sample: &TelemetrySample) {
        (self.sink)(&RunEvent::Telemetry {
            sample: Box::new(sample.clone()),
        });
    }
}
