//! The parent side of process isolation: start a worker, feed it the
//! request, follow its events, enforce stage limits, and turn however it
//! ends into a structured result.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use warpt_model::{
    BenchmarkRunResult, BenchmarkSpec, CrashInfo, Resources, RunStatus, StageStatus, StopReason,
};
use warpt_system::EnergySnapshot;
use warpt_system::procstat::Measured;

use crate::SeriesDef;
use crate::SeriesMetrics;
use crate::execute::{Outcome, StageClock};
use crate::interference::Probe;
use crate::limits::{EffectiveLimits, Stage};
use crate::progress::{Progress, ProgressEvent};
use crate::worker::{WorkerEvent, WorkerRequest};

/// The hidden subcommand that makes the warpt binary a worker.
pub const WORKER_SUBCOMMAND: &str = "__worker";
/// Time between SIGTERM and SIGKILL when stopping a worker.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long a worker may take to exit after its result.
const EXIT_GRACE: Duration = Duration::from_secs(10);

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
}

/// How the event loop ended.
enum Ending {
    /// stdout closed (normally after the result).
    Closed,
    /// A line that is not a protocol event.
    Garbage(String),
    /// A stage ran past its limit.
    Timeout(Stage, Duration),
    /// The user interrupted the run.
    Interrupted,
    /// The suite's time limit passed during this stage.
    SuiteLimit(Stage, crate::SuiteLimit),
}

/// How the worker process ended.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Exit {
    Code(i32),
    Signal(i32),
}

struct Reaped {
    exit: Exit,
    rusage: libc::rusage,
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
/// `control`.
pub fn supervise(
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

    let spawned = Command::new(exe)
        .arg(WORKER_SUBCOMMAND)
        // A worker never records anything: the store's location (a URL
        // may carry a password) stays with the parent, out of reach of
        // the benchmark's code and the commands it runs.
        .env_remove("WARPT_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
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
            };
        }
    };
    let pid = child.id() as libc::pid_t;
    if let Some(mut stdin) = child.stdin.take() {
        // A worker that dies before reading shows up as a crash below.
        if let Ok(line) = serde_json::to_string(request) {
            let _ = stdin
                .write_all(line.as_bytes())
                .and_then(|_| stdin.write_all(b"\n"));
        }
    }
    let (tx, rx) = mpsc::channel::<String>();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(format!("<unreadable output: {e}>"));
                        break;
                    }
                }
            }
        });
    }
    let (tail, tail_thread) = match child.stderr.take() {
        Some(stderr) => {
            let (tail, thread) = crate::stderr::follow(stderr, log, &spec.id.name);
            (tail, Some(thread))
        }
        None => (crate::stderr::Tail::default(), None),
    };

    let mut series: BTreeMap<usize, (SeriesDef, Vec<f64>, Option<StopReason>)> = BTreeMap::new();
    let mut outcome: Option<Outcome> = None;
    let mut freq = FreqTrace::default();
    let mut probe = Probe::default();
    let measured = Measured::Group(pid);
    let mut last_freq = t0;
    let ending = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => match serde_json::from_str::<WorkerEvent>(&line) {
                Ok(event) => {
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
                    )
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
    let stop_stage = clock.current();
    let reaped = match ending {
        Ending::Closed => wait_or_kill(pid, EXIT_GRACE),
        _ => kill_group(pid),
    };
    clock.close(Instant::now());
    // Whatever the worker left behind in its group goes too.
    // SAFETY: kill with a negative pid signals the process group; ESRCH is harmless.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    if let Some(t) = tail_thread {
        let _ = t.join();
    }
    let stderr_tail: Vec<String> = tail
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();

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
    let exit = reaped.as_ref().map(|r| r.exit);
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
        Ending::Closed => match (outcome, exit) {
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
    let mut used = resources(reaped.as_ref(), energy_before);
    // A GPU benchmark reports its device memory peak as a detail (the
    // supervisor cannot see into the device); it belongs with the rest.
    used.gpu_memory_peak_bytes = gpu_memory_peak(&result.details);
    result.resources = Some(used);
    result.end_time = Timestamp::now();
    Supervised {
        result,
        interrupted,
        freq,
        window: clock.measure_window(),
        interference: probe.finish(),
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
    }
}

fn crash_message(exit: Option<Exit>, had_result: bool, stderr: &[String]) -> String {
    let last_words = stderr
        .iter()
        .rev()
        .find(|l| {
            l.contains("panicked at") || l.contains("memory allocation of") || l.contains("error")
        })
        .or(stderr.last());
    let oom = stderr
        .iter()
        .any(|l| l.contains("memory allocation of") && l.contains("failed"));
    let how = match exit {
        Some(Exit::Code(0)) => "exited with status 0 without a result".to_string(),
        Some(Exit::Code(c)) => format!("exited with status {c}"),
        Some(Exit::Signal(s)) if s == libc::SIGKILL => {
            "was killed by SIGKILL (the kernel's out-of-memory killer does this when memory runs out)".to_string()
        }
        Some(Exit::Signal(s)) => format!("was killed by {}", signal_name(s)),
        None => "could not be waited for".to_string(),
    };
    let mut msg = format!(
        "{}the worker {how}{}",
        if oom { "out of memory: " } else { "" },
        if had_result {
            " after reporting its result"
        } else {
            ""
        }
    );
    if let Some(l) = last_words {
        msg.push_str(&format!("; last stderr line: {l}"));
    }
    msg
}

/// The GPU memory peak a benchmark reported in its details, if any.
fn gpu_memory_peak(
    details: &std::collections::BTreeMap<String, warpt_model::ParamValue>,
) -> Option<u64> {
    details
        .get("gpu_memory_peak_bytes")
        .and_then(warpt_model::ParamValue::as_i64)
        .and_then(|b| u64::try_from(b).ok())
}

fn resources(
    reaped: Option<&Reaped>,
    before: Result<EnergySnapshot, warpt_system::EnergyUnavailable>,
) -> Resources {
    let mut r = Resources::default();
    if let Some(reaped) = reaped {
        let ru = &reaped.rusage;
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        // Linux reports ru_maxrss in KiB.
        r.peak_rss_bytes = Some(ru.ru_maxrss as u64 * 1024);
        r.cpu_user_s = Some(secs(ru.ru_utime));
        r.cpu_sys_s = Some(secs(ru.ru_stime));
    } else {
        r.notes
            .push("the worker could not be reaped, so its rusage is unknown".into());
    }
    match before.and_then(|b| EnergySnapshot::read().map(|a| b.joules_until(&a))) {
        Ok(Some(j)) => {
            r.energy_j = Some(j);
            r.notes
                .push("energy_j: RAPL package energy over the worker's lifetime, whole package (all processes)".into());
        }
        Ok(None) => r
            .notes
            .push("energy_j: RAPL domains changed during the run".into()),
        Err(e) => r.notes.push(format!("energy_j: {e}")),
    }
    r
}

/// Reaps `pid` if it has exited, without blocking.
fn try_reap(pid: libc::pid_t) -> Option<Reaped> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter; wait4 fills it.
    let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child; status and rusage are valid pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut rusage) };
    if rc != pid {
        return None;
    }
    let exit = if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    };
    Some(Reaped { exit, rusage })
}

/// Waits up to `grace` for `pid` to exit by itself, then kills its group.
fn wait_or_kill(pid: libc::pid_t, grace: Duration) -> Option<Reaped> {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Some(r) = try_reap(pid) {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    kill_group(pid)
}

/// SIGTERM to the worker's process group, SIGKILL after a grace period;
/// returns once the worker is reaped.
fn kill_group(pid: libc::pid_t) -> Option<Reaped> {
    // SAFETY: signalling our child's process group.
    unsafe { libc::kill(-pid, libc::SIGTERM) };
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        if let Some(r) = try_reap(pid) {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    for _ in 0..2000 {
        if let Some(r) = try_reap(pid) {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// The conventional name of signal `s`.
pub fn signal_name(s: i32) -> String {
    let name = match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {s}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_model::ParamValue;

    #[test]
    fn a_reported_gpu_memory_peak_moves_into_resources() {
        let mut details = std::collections::BTreeMap::new();
        assert_eq!(gpu_memory_peak(&details), None);
        details.insert(
            "gpu_memory_peak_bytes".to_string(),
            ParamValue::Int(3 << 30),
        );
        assert_eq!(gpu_memory_peak(&details), Some(3 << 30));
        details.insert("gpu_memory_peak_bytes".to_string(), ParamValue::Int(-1));
        assert_eq!(gpu_memory_peak(&details), None);
    }
}
