//! Measuring the jobs: the shell's spawn time, set-up, warm-up, then rounds
//! (each job once per round, in a new seeded order every round unless
//! `--no-interleave`) until each job's stopping rule holds, then clean-up.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_model::RunStatus;

use crate::ExecError;
use crate::plan::{ExecPlan, Job, Shell};
use crate::spawn::{Exit, Output, Spawn};
pub use crate::state::{JobResult, Observer, Quiet, ShellCost};
use crate::state::{State, auxiliary};

/// Runs of the empty command that measure the shell's own spawn time.
const CALIBRATION_RUNS: usize = 50;

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
    let mut states: Vec<State> = jobs.into_iter().map(|job| State::new(job, now)).collect();
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
