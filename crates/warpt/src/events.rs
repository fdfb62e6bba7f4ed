//! `benchmark run --events`: the run's progress as JSON lines on stdout,
//! for `warpt serve` (which starts runs as child processes and forwards
//! these lines to WebSocket clients).
//!
//! Every line is an object with a `type`. The worker's own events keep the
//! worker protocol's names (`stage`, `stage_limit`, `progress`, `series_started`,
//! `sample`, `series_finished`, `result`) and gain the benchmark they belong
//! to; `benchmark_started` opens each benchmark and `telemetry` carries the
//! monitor's samples as they are taken.

use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use warpt_harness::{Progress, ProgressEvent};
use warpt_system::monitor::Monitor;

/// Writes events on stdout, one JSON object per line, flushed at once.
/// A write that fails (the server went away) is ignored: the server's
/// death also signals this process, which then stops as on Ctrl-C.
pub struct EventLines {
    benchmark: Mutex<String>,
}

impl EventLines {
    /// A writer on stdout.
    pub fn new() -> Self {
        EventLines {
            benchmark: Mutex::new(String::new()),
        }
    }

    fn benchmark(&self) -> String {
        self.benchmark.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

/// Writes one line.
fn emit(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

impl Progress for EventLines {
    fn event(&self, event: ProgressEvent<'_>) {
        let line = match event {
            ProgressEvent::BenchmarkStarted { id, index, total } => {
                if let Ok(mut b) = self.benchmark.lock() {
                    *b = id.to_string();
                }
                json!({"type": "benchmark_started", "benchmark": id.to_string(), "index": index, "total": total})
            }
            ProgressEvent::Stage { stage } => {
                json!({"type": "stage", "benchmark": self.benchmark(), "stage": stage})
            }
            ProgressEvent::StageLimit {
                stage,
                seconds,
                part,
            } => {
                json!({"type": "stage_limit", "benchmark": self.benchmark(), "stage": stage, "seconds": seconds, "part": part})
            }
            ProgressEvent::Measuring {
                label,
                fraction,
                samples,
            } => {
                json!({"type": "progress", "benchmark": self.benchmark(), "label": label, "fraction": fraction, "samples": samples})
            }
            ProgressEvent::SeriesStarted { key, def } => {
                json!({"type": "series_started", "benchmark": self.benchmark(), "key": key, "def": def})
            }
            ProgressEvent::Sample { key, value } => {
                json!({"type": "sample", "benchmark": self.benchmark(), "key": key, "value": value})
            }
            ProgressEvent::SeriesFinished { key, stop_reason } => {
                json!({"type": "series_finished", "benchmark": self.benchmark(), "key": key, "stop_reason": stop_reason})
            }
            ProgressEvent::BenchmarkFinished { result } => {
                json!({"type": "result", "benchmark": result.spec.id.to_string(), "result": result})
            }
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
                    emit(&json!({"type": "telemetry", "sample": sample}));
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
