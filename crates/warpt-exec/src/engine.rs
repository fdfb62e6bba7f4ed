//! Measuring the jobs: the shell's spawn time, set-up, warm-up, then rounds
//! (each job once per round, in a new seeded order every round unless
//! `--no-interleave`) until each job's stopping rule holds, then clean-up.

use std::time::{Duration, Instant};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_model::{RunStatus, StopReason};

use crate::ExecError;
use crate::plan::{ExecPlan, Job, Shell};
use crate::spawn::{Exit, Output, Sample, Spawn};

/// Runs of the empty command that measure the shell's own spawn time.
const CALIBRATION_RUNS: usize = 50;

/// The shell's own cost per run (means over [`CALIBRATION_RUNS`] runs of
/// an empty command), subtracted from every measured run.
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

/// Measures the shell's spawn time on the empty command.
pub fn calibrate(plan: &ExecPlan) -> Result<Option<ShellCost>, ExecError> {
    let Shell::Path(sh) = &plan.shell else {
        return Ok(None);
    };
    shell_cost(sh, CALIBRATION_RUNS, true).map(Some)
}

/// The mean cost of `runs` spawns of `sh -c ''` (after three unmeasured
/// ones), in or out of a process group of its own as the measured
/// commands will be.
pub fn shell_cost(sh: &str, runs: usize, own_group: bool) -> Result<ShellCost, ExecError> {
    let empty = Spawn {
        argv: vec![sh.to_string(), "-c".into(), String::new()],
        input: None,
        output: Output::Null,
        own_group,
        cwd: None,
    };
    for _ in 0..3 {
        empty.run(None)?;
    }
    let mut cost = ShellCost::default();
    for _ in 0..runs.max(1) {
        let s = empty.run(None)?;
        if !s.exit.success() {
            return Err(ExecError::Usage(format!(
                "the shell '{sh}' fails on an empty command ({})",
                s.exit
            )));
        }
        cost.wall_s += s.wall_s;
        cost.user_s += s.user_s;
        cost.sys_s += s.sys_s;
        cost.runs += 1;
    }
    let n = cost.runs as f64;
    cost.wall_s /= n;
    cost.user_s /= n;
    cost.sys_s /= n;
    Ok(cost)
}

/// One job's progress through the rounds.
pub(crate) struct State {
    pub(crate) result: JobResult,
    started: Option<Instant>,
    pub(crate) done: bool,
}

fn auxiliary(what: &str, job: &Job, spawn: &Spawn, limit: Option<Duration>) -> Result<(), String> {
    match spawn.run(limit) {
        Ok(s) if s.exit.success() => Ok(()),
        Ok(s) => Err(format!("--{what} of '{}' ended with {}", job.name, s.exit)),
        Err(e) => Err(format!("--{what} of '{}': {e}", job.name)),
    }
}

impl State {
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
        if let Some(c) = cost {
            s.wall_s = (s.wall_s - c.wall_s).max(0.0);
            s.user_s = (s.user_s - c.user_s).max(0.0);
            s.sys_s = (s.sys_s - c.sys_s).max(0.0);
        }
        self.result.samples.push(s);
        observer.run_done(&self.result.job, self.result.samples.len(), &s);
        if let Some(reason) = self.should_stop(plan) {
            self.result.stop_reason = Some(reason);
            self.done = true;
        }
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

/// Runs every job of `plan` to its stopping rule; with `duet`, the two
/// jobs at the same time on those CPUs ([`crate::duet`]).
pub fn measure(
    plan: &ExecPlan,
    jobs: Vec<Job>,
    cost: Option<ShellCost>,
    observer: &dyn Observer,
    interrupt: Option<&std::sync::atomic::AtomicBool>,
    duet: Option<&crate::duet::Cpus>,
) -> Vec<JobResult> {
    let now = jiff::Timestamp::now();
    let mut states: Vec<State> = jobs
        .into_iter()
        .map(|job| State {
            result: JobResult::new(job, now),
            started: None,
            done: false,
        })
        .collect();
    let interrupted = || interrupt.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
    let limit = plan.timeout;
    // Set-up, then warm-up, per job.
    for st in &mut states {
        let job = st.result.job.clone();
        if let Some(setup) = &job.setup
            && let Err(m) = auxiliary("setup", &job, setup, limit)
        {
            st.fail(RunStatus::Failed, m);
            continue;
        }
        for _ in 0..plan.warmup {
            if let Some(p) = &job.prepare
                && let Err(m) = auxiliary("prepare", &job, p, limit)
            {
                st.fail(RunStatus::Failed, m);
                break;
            }
            match job.spawn.run(limit) {
                Ok(s) if s.exit == Exit::TimedOut => {
                    st.fail(
                        RunStatus::Timeout,
                        format!(
                            "a warm-up run of '{}' was killed at the --timeout",
                            job.name
                        ),
                    );
                    break;
                }
                Ok(s) if !s.exit.success() && !plan.ignore_failure => {
                    st.fail(RunStatus::Failed, format!("'{}' ended with {} in a warm-up run (--ignore-failure records it instead)", job.name, s.exit));
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    st.fail(RunStatus::Failed, e.to_string());
                    break;
                }
            }
        }
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(plan.seed);
    let mut order: Vec<usize> = (0..states.len()).collect();
    // Interleaved: every job once per round, shuffled each round.
    // Sequential: one job to its end, then the next.
    let mut sequential_at = 0;
    loop {
        if interrupted() {
            break;
        }
        if let Some(cpus) = duet {
            if !crate::duet::round(&mut states, cpus, plan, cost, observer) {
                break;
            }
            continue;
        }
        let round: Vec<usize> = if plan.interleave {
            for i in (1..order.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                order.swap(i, j);
            }
            order.iter().copied().filter(|&i| !states[i].done).collect()
        } else {
            while sequential_at < states.len() && states[sequential_at].done {
                sequential_at += 1;
            }
            (sequential_at < states.len())
                .then_some(sequential_at)
                .into_iter()
                .collect()
        };
        if round.is_empty() {
            break;
        }
        for i in round {
            let st = &mut states[i];
            if !st.before_run(limit) {
                continue;
            }
            let outcome = st.result.job.spawn.run(limit);
            st.record(outcome, plan, cost, observer);
        }
    }
    for st in &mut states {
        let job = st.result.job.clone();
        if let Some(cleanup) = &job.cleanup
            && let Err(m) = auxiliary("cleanup", &job, cleanup, limit)
            && st.result.status == RunStatus::Passed
        {
            st.result.status = RunStatus::Failed;
            st.result.message = Some(m);
        }
    }
    states.into_iter().map(|s| s.result).collect()
}
