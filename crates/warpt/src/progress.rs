//! A progress bar on stderr for a running suite.

use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use warpt_harness::{Progress, ProgressEvent};

/// Draws one bar per benchmark and prints a line when each finishes.
/// The bar hides itself when stderr is not a terminal; the lines do not.
pub struct BarProgress {
    bar: Mutex<Option<ProgressBar>>,
    prefix: Mutex<String>,
}

impl BarProgress {
    /// A progress reporter writing to stderr.
    pub fn new() -> Self {
        BarProgress {
            bar: Mutex::new(None),
            prefix: Mutex::new(String::new()),
        }
    }

    fn with_bar(&self, f: impl FnOnce(&ProgressBar)) {
        if let Ok(guard) = self.bar.lock()
            && let Some(bar) = guard.as_ref()
        {
            f(bar);
        }
    }
}

impl Progress for BarProgress {
    fn event(&self, event: ProgressEvent<'_>) {
        match event {
            ProgressEvent::BenchmarkStarted { id, index, total } => {
                let prefix = format!("[{}/{}] {}", index + 1, total, id);
                let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                bar.set_prefix(prefix.clone());
                bar.set_message("setup");
                bar.enable_steady_tick(std::time::Duration::from_millis(200));
                if let Ok(mut p) = self.prefix.lock() {
                    *p = prefix;
                }
                if let Ok(mut slot) = self.bar.lock() {
                    *slot = Some(bar);
                }
            }
            ProgressEvent::Stage { stage } => self.with_bar(|b| b.set_message(stage)),
            ProgressEvent::StageLimit { stage, part, .. } => {
                self.with_bar(|b| b.set_message(format!("{stage}: {part}")))
            }
            ProgressEvent::Measuring {
                label,
                fraction,
                samples,
            } => self.with_bar(|b| {
                b.set_position((fraction * 1000.0) as u64);
                b.set_message(format!("{label}: {samples} samples"));
            }),
            ProgressEvent::SeriesStarted { .. }
            | ProgressEvent::Sample { .. }
            | ProgressEvent::SeriesFinished { .. } => {}
            ProgressEvent::BenchmarkFinished { result } => {
                if let Ok(mut slot) = self.bar.lock()
                    && let Some(bar) = slot.take()
                {
                    bar.finish_and_clear();
                }
                let prefix = self.prefix.lock().map(|p| p.clone()).unwrap_or_default();
                let secs = (result.end_time - result.start_time)
                    .total(jiff::Unit::Second)
                    .unwrap_or(0.0);
                let why = result
                    .error_message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                eprintln!("{prefix} {} in {secs:.1} s{why}", result.status);
            }
        }
    }
}
