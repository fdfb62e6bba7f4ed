//! `benchmark run --events`: the run's progress as JSON lines on stdout,
//! for `warpt serve` (which starts runs as child processes and forwards
//! these lines to WebSocket clients).
//!
//! Every line is a [`RunEvent`]: an object with a `type`. The worker's own events keep the
//! worker protocol's names (`stage`, `stage_limit`, `progress`, `series_started`,
//! `sample`, `series_finished`, `result`) and gain the benchmark they belong
//! to; `benchmark_started` opens each benchmark and `telemetry` carries the
//! monitor's samples as they are taken.

use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use warpt_harness::{Progress, ProgressEvent};
use warpt_model::RunEvent;
use warpt_system::monitor::Monitor;

/// Writes events on stdout, one JSON object per line, flushed at once.
/// A write that fails (the server went away) is ignored: the server's
/// death also signals this process, which then stops as on Ctrl-C.
#[derive(Default)]
pub struct EventLines {
    benchmark: Mutex<String>,
}

impl EventLines {
    /// A writer on stdout.
    pub fn new() -> Self {
        EventLines::default()
    }

    fn benchmark(&self) -> String {
        self.benchmark.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

/// Writes one line.
fn emit(event: &RunEvent) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", event.to_line());
    let _ = out.flush();
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
        emit(&line);
    }
}

/// Forwards the monitor's samples as `telemetry` lines until dropped.
pub struct TelemetryFeed {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TelemetryFeed {
    /// Polls `monitor` every `interval` for new samples.
    pub fn start(monitor: Arc<Monitor>, interval: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut seen = 0;
            while !flag.load(Ordering::Relaxed) {
                std::thread::park_timeout(interval);
                let new = monitor.since(seen);
                seen += new.len();
                for sample in new {
                    emit(&RunEvent::Telemetry {
                        sample: Box::new(sample),
                    });
                }
            }
        });
        TelemetryFeed {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for TelemetryFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
