//! The parent side of process isolation: start a worker, feed it the
//! request, follow its events, enforce stage limits, and turn however it
//! ends into a structured result.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use warpt_model::{
    BenchmarkRunResult, BenchmarkSpec, CrashInfo, RunStatus, StageStatus, StopReason,
};
use warpt_system::EnergySnapshot;
use warpt_system::procstat::{GroupUsage, Measured};

use crate::SeriesDef;
use crate::SeriesMetrics;
use crate::execute::{Outcome, StageClock};
use crate::interference::Probe;
use crate::limits::{EffectiveLimits, Stage};
use crate::progress::{Progress, ProgressEvent};
use crate::worker::{WorkerEvent, WorkerRequest};

/// The worker process: reaping, stopping, what it used.
mod process;
/// A worker and its channels, used once or kept.
mod session;

pub use process::signal_name;
use process::{Exit, crash_message, gpu_memory_peak, kept_resources, resources};
pub use session::KeptWorker;
use session::Session;

/// The hidden subcommand that makes the warpt binary a worker.
pub const WORKER_SUBCOMMAND: &str = "__worker";
/// Time between SIGTERM and SIGKILL when stopping a worker.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long a worker may take to exit after its result.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(10);

/// The CPU frequency seen while a benchmark measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FreqTrace {
    /// MHz when measurement began.
    pub start_mhz: Option<f64>,
    /// Lowest MHz seen during measurement.
    pub min_mhz: Option<f64>,
}

impl FreqTrace {
    fn observe(&mut self) {
        if let Some(mhz) = warpt_system::current_mhz() {
            self.start_mhz.get_or_insert(mhz);
            self.min_mhz = Some(self.min_mhz.map_or(mhz, |m| m.min(mhz)));
        }
    }
}

/// A supervised run's result and what the supervisor saw.
#[derive(Debug, Clone)]
pub struct Supervised {
    /// The complete result.
    pub result: BenchmarkRunResult,
    /// The run was stopped by an interrupt.
    pub interrupted: bool,
    /// Frequency during measurement.
    pub freq: FreqTrace,
    /// Wall-clock span of the measurement stage, when it ran.
    pub window: Option<(Timestamp, Timestamp)>,
    /// Steal, other processes' CPU time and the run queue over the
    /// measurement window.
    pub interference: Option<warpt_model::Interference>,
    /// A probe request's answer: the benchmark's own configuration.
    pub config: Option<serde_json::Value>,
}

/// How the event loop ended.
enum Ending {
    /// stdout closed (normally after the result).
    Closed,
    /// The result came from a worker that stays for the next request.
    Answered,
    /// A line that is not a protocol event.
    Garbage(String),
    /// A stage ran past its limit.
    Timeout(Stage, Duration),
    /// The user interrupted the run.
    Interrupted,
    /// The suite's time limit passed during this stage.
    SuiteLimit(Stage, crate::SuiteLimit),
}

/// What the run tells the supervisor beside the benchmark: when to stop it
/// and where its output goes.
pub struct Control<'a> {
    /// Set when the user stops the run.
    pub interrupt: Option<&'a AtomicBool>,
    /// The whole run's time limit.
    pub suite_limit: Option<crate::SuiteLimit>,
    /// Where the worker's stderr (the benchmark's own output) is appended.
    pub log: Option<&'a Path>,
}

/// Runs `request` in a worker started from `exe`, under `limits` and
/// `control`; the worker ends with it.
pub fn supervise(
    exe: &Path,
    spec: &BenchmarkSpec,
    request: &WorkerRequest,
    limits: &EffectiveLimits,
    progress: &dyn Progress,
    control: &Control<'_>,
) -> Supervised {
    supervise_in(None, exe, spec, request, limits, progress, control)
}

/// As [`supervise`], in `kept`'s worker when given (started from `exe` if
/// it has none): a request answered with a result leaves the worker there
/// for the next; any other ending stops it, and the next request starts a
/// fresh one.
pub fn supervise_in(
    kept: Option<&KeptWorker>,
    exe: &Path,
    spec: &BenchmarkSpec,
    request: &WorkerRequest,
    limits: &EffectiveLimits,
    progress: &dyn Progress,
    control: &Control<'_>,
) -> Supervised {
    let Control {
        interrupt,
        suite_limit,
        log,
    } = *control;
    let start_time = Timestamp::now();
    let energy_before = EnergySnapshot::read();
    let mut result = BenchmarkRunResult::new(
        spec.clone(),
        request.params.clone(),
        RunStatus::Failed,
        start_time,
    );
    let t0 = Instant::now();
    let mut clock = StageClock::new();
    clock.enter(Stage::Setup, t0);
    // A benchmark may reckon a stage's limit from its own work as it learns
    // it (HPL's solve time from N and the rate it measured).
    let mut limits = *limits;
    let mut parts: BTreeMap<&'static str, String> = BTreeMap::new();

    let mut slot = kept.map(KeptWorker::slot);
    let reused = slot
        .as_mut()
        .and_then(|s| s.take())
        .and_then(|mut s| s.running().then_some(s));
    let mut session = match reused.map_or_else(|| Session::start(exe, log, &spec.id.name), Ok) {
        Ok(s) => s,
        Err(e) => {
            result.error_message = Some(format!(
                "cannot start a worker process from {}: {e}",
                exe.display()
            ));
            result.end_time = Timestamp::now();
            return Supervised {
                result,
                interrupted: false,
                freq: FreqTrace::default(),
                window: None,
                interference: None,
                config: None,
            };
        }
    };
    let pid = session.pid;
    session.clear_tail();
    // A kept worker's use is read from /proc before and after; a worker
    // used once is reaped, and its rusage says.
    let used_before = slot.is_some().then(|| GroupUsage::read(pid));
    session.send(request, slot.is_none());
    let mut config = None;
    let mut series: BTreeMap<usize, (SeriesDef, Vec<f64>, Option<StopReason>)> = BTreeMap::new();
    let mut outcome: Option<Outcome> = None;
    let mut freq = FreqTrace::default();
    let mut probe = Probe::default();
    let measured = Measured::Group(pid);
    let mut last_freq = t0;
    let ending = loop {
        match session.lines.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => match serde_json::from_str::<WorkerEvent>(&line) {
                Ok(event) => {
                    let answered = matches!(event, WorkerEvent::Result { .. });
                    if let WorkerEvent::Config { config: c } = &event {
                        config = Some(c.clone());
                    }
                    if let WorkerEvent::Stage { stage } = &event
                        && let Some(s) = Stage::from_name(stage)
                    {
                        probe.on_stage(s, measured);
                    } else if let WorkerEvent::StageLimit {
                        stage,
                        seconds,
                        part,
                    } = &event
                        && let Some(s) = Stage::from_name(stage)
                    {
                        limits.announce(s, *seconds);
                        parts.insert(s.name(), part.clone());
                    } else if let WorkerEvent::Result { .. } = &event {
                        probe.close();
                    }
                    handle(
                        event,
                        &mut clock,
                        &mut series,
                        &mut outcome,
                        &mut freq,
                        progress,
                    );
                    if answered && slot.is_some() {
                        break Ending::Answered;
                    }
                }
                Err(_) => break Ending::Garbage(line),
            },
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break Ending::Closed,
        }
        let now = Instant::now();
        if let Some(stage) = clock.current()
            && clock.total(stage, now) > limits.of(stage)
        {
            break Ending::Timeout(stage, clock.total(stage, now));
        }
        if interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            break Ending::Interrupted;
        }
        if let (Some(limit), Some(stage)) = (suite_limit, clock.current())
            && limit.passed()
        {
            break Ending::SuiteLimit(stage, limit);
        }
        if clock.current() == Some(Stage::Measure)
            && now.duration_since(last_freq) >= Duration::from_millis(250)
        {
            last_freq = now;
            freq.observe();
            probe.sample();
        }
    };
    // Before the worker is reaped: its group's CPU time is read from /proc.
    probe.close();
    let used_after = used_before.map(|_| GroupUsage::read(pid));
    let stop_stage = clock.current();
    let keep = matches!(ending, Ending::Answered);
    let reaped = match ending {
        Ending::Answered => None,
        Ending::Closed => session.end(true),
        _ => session.end(false),
    };
    clock.close(Instant::now());
    let stderr_tail = session.tail();

    let partial_metrics = || {
        series
            .values()
            .filter(|(_, v, _)| !v.is_empty())
            .map(|(def, v, stop)| def.metric(v, *stop))
            .collect::<Vec<_>>()
    };
    let crash = |exit: Option<Exit>| CrashInfo {
        exit_code: match exit {
            Some(Exit::Code(c)) => Some(c),
            _ => None,
        },
        signal: match exit {
            Some(Exit::Signal(s)) => Some(s),
            _ => None,
        },
        signal_name: match exit {
            Some(Exit::Signal(s)) => Some(signal_name(s)),
            _ => None,
        },
        stderr_tail: stderr_tail.clone(),
    };
    // A kept worker that answered is still running, as sound as one that
    // answered and exited 0.
    let exit = match ending {
        Ending::Answered => Some(Exit::Code(0)),
        _ => reaped.as_ref().map(|r| r.exit),
    };
    let mut ended_in: Option<(Stage, StageStatus)> = None;
    let mut interrupted = false;
    match ending {
        Ending::Timeout(stage, elapsed) => {
            result.set_status(RunStatus::Timeout);
            let part = parts
                .get(stage.name())
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            result.error_message = Some(format!(
                "TIMEOUT: stage '{}'{part} ran {:.1} s, past its limit of {:.1} s; the worker was stopped \
                 (raise --timeout-multiplier if this machine is just slow)",
                stage.name(),
                elapsed.as_secs_f64(),
                limits.of(stage).as_secs_f64()
            ));
            result.metrics = partial_metrics();
            ended_in = Some((stage, StageStatus::Timeout));
        }
        Ending::SuiteLimit(stage, limit) => {
            result.set_status(RunStatus::Timeout);
            result.error_message = Some(format!(
                "TIMEOUT: the suite's time limit ({}) passed during stage '{}'; the worker was \
                 stopped",
                limit.describe(),
                stage.name()
            ));
            result.metrics = partial_metrics();
            ended_in = Some((stage, StageStatus::Timeout));
        }
        Ending::Interrupted => {
            interrupted = true;
            result.set_status(RunStatus::Failed);
            result.error_message =
                Some("interrupted: the run was stopped before this benchmark finished".into());
            result.metrics = partial_metrics();
            ended_in = stop_stage.map(|s| (s, StageStatus::Failed));
        }
        Ending::Garbage(line) => {
            result.set_status(RunStatus::Crashed);
            let shown: String = line.chars().take(120).collect();
            result.error_message = Some(format!(
                "the worker wrote something that is not a protocol event on stdout, and was stopped: {shown:?}"
            ));
            result.metrics = partial_metrics();
            result.crash = Some(crash(exit));
            ended_in = stop_stage.map(|s| (s, StageStatus::Failed));
        }
        Ending::Closed | Ending::Answered => match (outcome, exit) {
            (Some(o), Some(Exit::Code(0))) => {
                if o.status == RunStatus::Failed && o.validation.is_none() {
                    ended_in = stop_stage.map(|s| (s, StageStatus::Failed));
                }
                o.apply_to(&mut result);
            }
            (outcome, exit) => {
                let had_result = outcome.is_some();
                if let Some(o) = outcome {
                    o.apply_to(&mut result);
                } else {
                    result.metrics = partial_metrics();
                }
                result.set_status(RunStatus::Crashed);
                result.error_message = Some(crash_message(exit, had_result, &stderr_tail));
                result.crash = Some(crash(exit));
                ended_in = stop_stage.map(|s| (s, StageStatus::Failed));
            }
        },
    }
    if !result.metrics.is_empty() && result.stop_reason.is_none() {
        result.stop_reason = result
            .metrics
            .iter()
            .filter_map(|m| m.stats.as_ref().and_then(|s| s.stop_reason))
            .max_by_key(|r| r.severity());
    }
    result.interrupted = interrupted;
    result.watchdog = Some(clock.watchdog(Instant::now(), Some(&limits), ended_in));
    let mut used = match (used_before, used_after) {
        (Some(before), Some(after)) => kept_resources(before, after, energy_before),
        _ => resources(reaped.as_ref(), energy_before),
    };
    // A GPU benchmark reports its device memory peak as a detail (the
    // supervisor cannot see into the device); it belongs with the rest.
    used.gpu_memory_peak_bytes = gpu_memory_peak(&result.details);
    result.resources = Some(used);
    result.end_time = Timestamp::now();
    if let (true, Some(slot)) = (keep, slot.as_mut()) {
        **slot = Some(session);
    }
    Supervised {
        result,
        interrupted,
        freq,
        window: clock.measure_window(),
        interference: probe.finish(),
        config,
    }
}

fn handle(
    event: WorkerEvent,
    clock: &mut StageClock,
    series: &mut BTreeMap<usize, (SeriesDef, Vec<f64>, Option<StopReason>)>,
    outcome: &mut Option<Outcome>,
    freq: &mut FreqTrace,
    progress: &dyn Progress,
) {
    match event {
        WorkerEvent::Stage { stage } => {
            if let Some(s) = Stage::from_name(&stage) {
                clock.enter(s, Instant::now());
                if s == Stage::Measure {
                    freq.observe();
                }
                progress.event(ProgressEvent::Stage { stage: s.name() });
            }
        }
        WorkerEvent::StageLimit {
            stage,
            seconds,
            part,
        } => {
            if let Some(s) = Stage::from_name(&stage) {
                progress.event(ProgressEvent::StageLimit {
                    stage: s.name(),
                    seconds,
                    part: &part,
                });
            }
        }
        WorkerEvent::Progress {
            label,
            fraction,
            samples,
        } => progress.event(ProgressEvent::Measuring {
            label: &label,
            fraction,
            samples,
        }),
        WorkerEvent::SeriesStarted { key, def } => {
            progress.event(ProgressEvent::SeriesStarted { key, def: &def });
            series.insert(key, (def, Vec::new(), None));
        }
        WorkerEvent::Sample { key, value } => {
            progress.event(ProgressEvent::Sample { key, value });
            if let Some((_, values, _)) = series.get_mut(&key) {
                values.push(value);
            }
        }
        WorkerEvent::SeriesFinished { key, stop_reason } => {
            progress.event(ProgressEvent::SeriesFinished { key, stop_reason });
            if let Some((_, _, stop)) = series.get_mut(&key) {
                *stop = Some(stop_reason);
            }
        }
        WorkerEvent::Result { outcome: o } => {
            clock.close(Instant::now());
            *outcome = Some(o);
        }
        // A probe's answer: the caller takes it from the event.
        WorkerEvent::Config { .. } => {}
    }
}
