//! A planned benchmark run in a worker process under the supervisor (or
//! in a kept one, [`crate::KeptWorker`]), and the probe of its own
//! configuration.

use std::path::PathBuf;

use jiff::Timestamp;
use warpt_model::{BenchmarkRunResult, RunStatus};

use super::{RunOptions, limits_for};
use crate::PlannedBenchmark;
use crate::progress::Progress;
use crate::supervisor::FreqTrace;
use crate::worker::WorkerRequest;

/// A result, the CPU frequency seen while it measured, and its measurement window.
type Isolated = (
    BenchmarkRunResult,
    FreqTrace,
    Option<(Timestamp, Timestamp)>,
);

#[cfg(unix)]
pub(super) fn run_isolated(
    planned: &PlannedBenchmark,
    options: &RunOptions,
    progress: &dyn Progress,
) -> Isolated {
    let request = worker_request(planned, options);
    let exe = match worker_exe(options) {
        Ok(exe) => exe,
        Err(e) => {
            let mut r = BenchmarkRunResult::new(
                planned.spec.clone(),
                planned.params.clone(),
                RunStatus::Failed,
                Timestamp::now(),
            );
            r.error_message = Some(format!(
                "cannot locate the warpt executable to start a worker: {e}"
            ));
            return (r, FreqTrace::default(), None);
        }
    };
    let limits = limits_for(planned, options);
    let s = crate::supervisor::supervise_in(
        options.kept_worker.as_ref(),
        &exe,
        &planned.spec,
        &request,
        &limits,
        progress,
        &crate::supervisor::Control {
            interrupt: options.interrupt.as_deref(),
            suite_limit: options.suite_limit,
            log: options.output_log.as_deref(),
        },
    );
    let mut result = s.result;
    result.interference = s.interference;
    (result, s.freq, s.window)
}

/// The request a worker gets for `planned`.
fn worker_request(planned: &PlannedBenchmark, options: &RunOptions) -> WorkerRequest {
    let ctx = options.context(planned);
    WorkerRequest {
        id: planned.spec.id.clone(),
        params: planned.params.clone(),
        seed: ctx.seed,
        duration_s: ctx.duration.as_secs_f64(),
        burnin_s: ctx.burnin.as_secs_f64(),
        target_rel_ci: ctx.target_rel_ci,
        clock_probe: ctx.clock_probe,
        probe: false,
    }
}

/// The executable workers start from: the configured one, else this one.
fn worker_exe(options: &RunOptions) -> std::io::Result<PathBuf> {
    options
        .worker_exe
        .clone()
        .map(Ok)
        .unwrap_or_else(std::env::current_exe)
}

/// The benchmark's own configuration ([`crate::Benchmark::own_config`]),
/// read in a worker under the setup stage's limit (in `options`' kept
/// worker when it has one, which then stays for the runs that follow):
/// `Ok(None)` when it has none, `Err` with why it could not be read.
#[cfg(unix)]
pub fn probe_config(
    planned: &PlannedBenchmark,
    options: &RunOptions,
) -> Result<Option<serde_json::Value>, String> {
    let mut request = worker_request(planned, options);
    request.probe = true;
    let exe = worker_exe(options)
        .map_err(|e| format!("cannot locate the warpt executable to start a worker: {e}"))?;
    let s = crate::supervisor::supervise_in(
        options.kept_worker.as_ref(),
        &exe,
        &planned.spec,
        &request,
        &limits_for(planned, options),
        &crate::NoProgress,
        &crate::supervisor::Control {
            interrupt: options.interrupt.as_deref(),
            suite_limit: options.suite_limit,
            log: options.output_log.as_deref(),
        },
    );
    match s.result.status {
        RunStatus::Passed => Ok(s.config.filter(|c| !c.is_null())),
        _ => Err(s
            .result
            .error_message
            .unwrap_or_else(|| s.result.status.as_str().to_string())),
    }
}

#[cfg(not(unix))]
pub(super) fn run_isolated(
    planned: &PlannedBenchmark,
    options: &RunOptions,
    progress: &dyn Progress,
) -> Isolated {
    unreachable!("run_plan runs in-process where there are no worker processes")
}
