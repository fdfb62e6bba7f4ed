//! One `warpt exec` invocation: the shell's spawn time measured, every job
//! run to its stopping rule, and the suite run and text that report them.

use std::sync::atomic::{AtomicBool, Ordering};

use warpt_model::BenchmarkSuiteRun;

use crate::counts;
use crate::duet::{self, Cpus, Paired};
use crate::engine::{Calibration, JobResult, Observer, ShellCost, calibrate, measure};
use crate::plan::{ExecPlan, Job, Measure};
use crate::{ExecError, hyperfine, report};

/// A measured `exec` plan.
#[derive(Debug)]
pub struct Session {
    /// Each job's runs, in the plan's order.
    pub results: Vec<JobResult>,
    /// The shell's spawn time, subtracted from every run (none without a shell).
    pub cost: Option<ShellCost>,
    /// The same, as one `exec` suite run (export, store).
    pub suite_run: BenchmarkSuiteRun,
    /// `--duet`: the CPUs of each side and the paired verdict.
    pub duet: Option<(Cpus, Option<Paired>)>,
}

impl Session {
    /// Measures `jobs` of `plan` ([`ExecPlan::jobs`], checked by the caller
    /// before anything else): calibrates the shell (telling `observer`), runs
    /// the jobs until each stops or `interrupt` is set, and builds the suite
    /// run recording `command_line`.
    pub fn run(
        plan: &ExecPlan,
        jobs: Vec<Job>,
        observer: &dyn Observer,
        interrupt: Option<&AtomicBool>,
        command_line: Vec<String>,
    ) -> Result<Session, ExecError> {
        let start = jiff::Timestamp::now();
        // Where counts come from, found before minutes of timing.
        let source = match plan.measure {
            Measure::Time => None,
            Measure::Instructions => match warpt_counts::detect() {
                Ok(source) => Some(source),
                Err(why) => {
                    let results = counts::skipped(jobs, &why);
                    let suite_run =
                        report::suite_run(plan, &results, None, start, command_line, false);
                    return Ok(Session {
                        results,
                        cost: None,
                        suite_run,
                        duet: None,
                    });
                }
            },
        };
        let cpus = plan
            .duet
            .then(Cpus::split)
            .transpose()
            .map_err(ExecError::Usage)?;
        let mut calibration = calibrate(plan)?;
        if let Some(c) = &calibration {
            observer.calibrated(&c.cost());
        }
        let mut results = measure(
            plan,
            jobs,
            calibration.as_mut(),
            observer,
            interrupt,
            cpus.as_ref(),
        );
        // The cost every run had taken off: before the jobs and among them.
        let cost = calibration.as_ref().map(Calibration::cost);
        let interrupted = interrupt.is_some_and(|i| i.load(Ordering::Relaxed));
        if let Some(source) = &source
            && !interrupted
        {
            let shell = counts::shell_count(plan, source).map_err(ExecError::Io)?;
            counts::count(&mut results, source, shell);
        }
        let mut suite_run =
            report::suite_run(plan, &results, cost, start, command_line, interrupted);
        let duet = cpus.map(|cpus| {
            let walls = |r: &JobResult| r.samples.iter().map(|s| s.wall_s).collect::<Vec<_>>();
            let paired = match &results[..] {
                [a, b] => duet::judge(&walls(a), &walls(b), DUET_THRESHOLD_PCT),
                _ => None,
            };
            if let (Some(p), Some(r)) = (&paired, suite_run.benchmarks.get_mut(1)) {
                report::add_duet_details(r, &cpus, p);
            }
            (cpus, paired)
        });
        Ok(Session {
            results,
            cost,
            suite_run,
            duet,
        })
    }

    /// What a terminal shows: hyperfine's lines per job, warpt's table and
    /// the relative summary (`seed` drives its bootstrap).
    pub fn text(&self, seed: u64) -> String {
        let mut text = String::new();
        for (i, r) in self.results.iter().enumerate() {
            text += &hyperfine::describe(i, r);
            text += &counts::describe(r).unwrap_or_default();
            text.push('\n');
        }
        text += &warpt_report::terminal::results(&self.suite_run);
        if let Some((cpus, paired)) = &self.duet {
            text += &report::duet_text(&self.results, cpus, paired.as_ref());
        }
        text + &report::summary_text(&self.results, seed)
    }
}

/// The smallest change `--duet` calls a regression or an improvement,
/// percent (`benchmark compare`'s default `--threshold`).
pub const DUET_THRESHOLD_PCT: f64 = warpt_report::compare::DEFAULT_THRESHOLD_PCT;

/// The line that reports the shell's spawn time.
pub fn calibration_line(c: &ShellCost) -> String {
    format!(
        "shell spawn time (subtracted from every run): {} wall, {} user, {} system (median of {} runs of an empty command; one more runs each round, and the results subtract the median of all)",
        hyperfine::time(c.wall_s),
        hyperfine::time(c.user_s),
        hyperfine::time(c.sys_s),
        c.runs
    )
}
