//! What the engine and the duet share: each job's state through the
//! rounds and its result, the shell's cost subtracted from every run, and
//! the observer that shows progress.

use std::time::{Duration, Instant};

use warpt_model::{RunStatus, StopReason};

use crate::ExecError;
use crate::plan::{ExecPlan, Job};
use crate::spawn::{Exit, Sample, Spawn};

/// The shell's own cost per run (medians over the runs of an empty command
/// a [`Calibration`] made), subtracted from every measured run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ShellCost {
    /// Wall seconds.
    pub wall_s: f64,
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Runs measured.
    pub runs: usize,
}

/// The runs of the shell's empty command (`sh -c ''`): those before any
/// job runs, and one a round among the jobs' runs. Their cost is the
/// median of them all, subtracted from the median of each job's: with the
/// empty command interleaved with the jobs, a host that slows down or
/// speeds up while measuring moves both alike. Measured apart, before the
/// jobs only, the cost read 0.67 ms in a quiet moment while the runs
/// after it, beside other work, paid 1.05 ms (`sh -c true` then read
/// 0.38 ms); and a mean carries every spawn the host delayed (one late
/// wake-up among 20 made `sleep 0.002` read 1.03 ms).
#[derive(Debug, Clone)]
pub struct Calibration {
    empty: Spawn,
    wall: Vec<f64>,
    user: Vec<f64>,
    sys: Vec<f64>,
}

impl Calibration {
    /// `runs` spawns of `sh -c ''` (after three unmeasured ones), in or
    /// out of a process group of its own as the measured commands will be.
    pub fn measure(sh: &str, runs: usize, own_group: bool) -> Result<Calibration, ExecError> {
        let empty = Spawn {
            argv: vec![sh.to_string(), "-c".into(), String::new()],
            input: None,
            output: crate::spawn::Output::Null,
            own_group,
            cwd: None,
        };
        for _ in 0..3 {
            empty.run(None)?;
        }
        let mut c = Calibration {
            empty,
            wall: Vec::new(),
            user: Vec::new(),
            sys: Vec::new(),
        };
        for _ in 0..runs.max(1) {
            c.run_once()?;
        }
        Ok(c)
    }

    /// One more run of the empty command, counted.
    pub fn run_once(&mut self) -> Result<(), ExecError> {
        let s = self.empty.run(None)?;
        if !s.exit.success() {
            return Err(ExecError::Usage(format!(
                "the shell '{}' fails on an empty command ({})",
                self.empty.argv[0], s.exit
            )));
        }
        self.wall.push(s.wall_s);
        self.user.push(s.user_s);
        self.sys.push(s.sys_s);
        Ok(())
    }

    /// The cost so far: each time's median over the runs.
    pub fn cost(&self) -> ShellCost {
        ShellCost {
            wall_s: warpt_stats::median(&self.wall),
            user_s: warpt_stats::median(&self.user),
            sys_s: warpt_stats::median(&self.sys),
            runs: self.wall.len(),
        }
    }
}

/// What happened to one job.
#[derive(Debug, Clone)]
pub struct JobResult {
    /// The job.
    pub job: Job,
    /// Measured runs (shell cost subtracted), in order.
    pub samples: Vec<Sample>,
    /// Passed, failed (a non-zero exit without `--ignore-failure`, or a
    /// set-up that failed) or timeout.
    pub status: RunStatus,
    /// Why it did not pass.
    pub message: Option<String>,
    /// Why measuring stopped.
    pub stop_reason: Option<StopReason>,
    /// Runs that exited non-zero (with `--ignore-failure`).
    pub failed_runs: usize,
    /// When its measured runs began and ended.
    pub window: (jiff::Timestamp, jiff::Timestamp),
    /// `--measure instructions`: each counted run's counts (the shell's
    /// subtracted from the instructions).
    pub counts: Vec<warpt_counts::Counts>,
    /// Where the counts came from (`perf_event`, `cachegrind`).
    pub count_source: Option<&'static str>,
    /// The shell's empty command's instructions, subtracted from each count.
    pub shell_instructions: Option<u64>,
}

impl JobResult {
    /// `job` before any run, at `now`: passed until something says otherwise.
    pub fn new(job: Job, now: jiff::Timestamp) -> JobResult {
        JobResult {
            job,
            samples: Vec::new(),
            status: RunStatus::Passed,
            message: None,
            stop_reason: None,
            failed_runs: 0,
            window: (now, now),
            counts: Vec::new(),
            count_source: None,
            shell_instructions: None,
        }
    }
}

/// Reports progress (rounds, runs) to the caller's display.
pub trait Observer {
    /// A job finished one measured run.
    fn run_done(&self, job: &Job, runs: usize, sample: &Sample);
    /// The shell's spawn time was measured (before any job runs).
    fn calibrated(&self, _cost: &ShellCost) {}
}

/// Observes nothing.
pub struct Quiet;

impl Observer for Quiet {
    fn run_done(&self, _: &Job, _: usize, _: &Sample) {}
}

/// One job's progress through the rounds.
pub(crate) struct State {
    pub(crate) result: JobResult,
    /// Each measured run as it was timed, before the shell's cost came off.
    raw: Vec<Sample>,
    started: Option<Instant>,
    pub(crate) done: bool,
}

pub(crate) fn auxiliary(
    what: &str,
    job: &Job,
    spawn: &Spawn,
    limit: Option<Duration>,
) -> Result<(), String> {
    match spawn.run(limit) {
        Ok(s) if s.exit.success() => Ok(()),
        Ok(s) => Err(format!("--{what} of '{}' ended with {}", job.name, s.exit)),
        Err(e) => Err(format!("--{what} of '{}': {e}", job.name)),
    }
}

impl State {
    /// `job` before its first run, at `now`.
    pub(crate) fn new(job: Job, now: jiff::Timestamp) -> State {
        State {
            result: JobResult::new(job, now),
            raw: Vec::new(),
            started: None,
            done: false,
        }
    }

    pub(crate) fn fail(&mut self, status: RunStatus, message: String) {
        self.result.status = status;
        self.result.message = Some(message);
        self.done = true;
    }

    /// Runs the job's `--prepare` and starts its clock: whether the run
    /// may go ahead (a failed prepare fails the job).
    pub(crate) fn before_run(&mut self, limit: Option<Duration>) -> bool {
        let job = self.result.job.clone();
        if let Some(p) = &job.prepare
            && let Err(m) = auxiliary("prepare", &job, p, limit)
        {
            self.fail(RunStatus::Failed, m);
            return false;
        }
        if self.started.is_none() {
            self.started = Some(Instant::now());
            self.result.window.0 = jiff::Timestamp::now();
        }
        true
    }

    /// Records one measured run's `outcome`: a timeout or a failure (unless
    /// ignored) ends the job, a sample has the shell's cost subtracted, and
    /// the stopping rule is checked.
    pub(crate) fn record(
        &mut self,
        outcome: Result<Sample, ExecError>,
        plan: &ExecPlan,
        cost: Option<ShellCost>,
        observer: &dyn Observer,
    ) {
        let job = &self.result.job;
        let mut s = match outcome {
            Ok(s) => s,
            Err(e) => {
                self.fail(RunStatus::Failed, e.to_string());
                return;
            }
        };
        self.result.window.1 = jiff::Timestamp::now();
        let run = self.result.samples.len() + 1;
        match s.exit {
            Exit::TimedOut => {
                let m = format!("run {run} of '{}' was killed at the --timeout", job.name);
                self.fail(RunStatus::Timeout, m);
                return;
            }
            e if !e.success() && !plan.ignore_failure => {
                let m = format!(
                    "'{}' ended with {e} on run {run} (--ignore-failure records it instead)",
                    job.name
                );
                self.fail(RunStatus::Failed, m);
                return;
            }
            e if !e.success() => self.result.failed_runs += 1,
            _ => {}
        }
        self.raw.push(s);
        if let Some(c) = cost {
            s = less(s, &c);
        }
        self.result.samples.push(s);
        observer.run_done(&self.result.job, self.result.samples.len(), &s);
        if let Some(reason) = self.should_stop(plan) {
            self.result.stop_reason = Some(reason);
            self.done = true;
        }
    }

    /// Every run again with `cost` (the calibration's final figure) taken
    /// off, in place of the figure each had when it ran.
    pub(crate) fn recorrect(&mut self, cost: &ShellCost) {
        self.result.samples = self.raw.iter().map(|s| less(*s, cost)).collect();
    }

    /// Whether the stopping rule holds after the latest run.
    pub(crate) fn should_stop(&self, plan: &ExecPlan) -> Option<StopReason> {
        let n = self.result.samples.len() as u32;
        if let Some(runs) = plan.runs {
            return (n >= runs).then_some(StopReason::SampleCap);
        }
        if n >= plan.max_runs {
            return Some(StopReason::SampleCap);
        }
        let elapsed = self.started.map_or(Duration::ZERO, |s| s.elapsed());
        if elapsed >= plan.max_time && n >= 2 {
            return Some(StopReason::TimeCap);
        }
        if n < plan.min_runs || elapsed < plan.min_time {
            return None;
        }
        let walls: Vec<f64> = self.result.samples.iter().map(|s| s.wall_s).collect();
        let precise = warpt_model::MetricStats::summarize(&walls)
            .is_some_and(|st| st.relative_half_width() <= plan.target_rel_ci);
        precise.then_some(StopReason::TargetMet)
    }
}

/// `s` with the shell's `cost` taken off (never below zero).
fn less(mut s: Sample, cost: &ShellCost) -> Sample {
    s.wall_s = (s.wall_s - cost.wall_s).max(0.0);
    s.user_s = (s.user_s - cost.user_s).max(0.0);
    s.sys_s = (s.sys_s - cost.sys_s).max(0.0);
    s
}
