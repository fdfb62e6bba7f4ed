//! Measuring the jobs: the shell's spawn time, set-up, warm-up, then rounds
//! (each job once per round, in a new seeded order every round unless
//! `--no-interleave`) until each job's stopping rule holds, then clean-up.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_model::RunStatus;

use crate::ExecError;
use crate::plan::{ExecPlan, Job, Shell};
use crate::spawn::Exit;
pub use crate::state::{Calibration, JobResult, Observer, Quiet, ShellCost};
use crate::state::{State, auxiliary};

/// Runs of the empty command that measure the shell's spawn time before
/// any job runs (one more then runs each round).
const CALIBRATION_RUNS: usize = 50;

/// Measures the shell's spawn time on the empty command, before the jobs
/// (none without a shell).
pub fn calibrate(plan: &ExecPlan) -> Result<Option<Calibration>, ExecError> {
    let Shell::Path(sh) = &plan.shell else {
        return Ok(None);
    };
    Calibration::measure(sh, CALIBRATION_RUNS, true).map(Some)
}

/// Runs every job of `plan` to its stopping rule; with `duet`, the two
/// jobs at the same time on those CPUs ([`crate::duet`]). With a shell's
/// `calibration`, its empty command runs once a round too, at a shuffled
/// place among the jobs (not in a duet, whose CPUs the pair holds), and
/// every run ends with the cost of all its runs taken off.
pub fn measure(
    plan: &ExecPlan,
    jobs: Vec<Job>,
    mut calibration: Option<&mut Calibration>,
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
    // The calibration's run goes where this index falls in a round.
    let empty = states.len();
    // Interleaved: every job once per round, shuffled each round.
    // Sequential: one job to its end, then the next.
    let mut sequential_at = 0;
    loop {
        if interrupted() {
            break;
        }
        let cost = calibration.as_deref().map(Calibration::cost);
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
        let mut round = round;
        if calibration.is_some() {
            let at = (rng.next_u64() % (round.len() as u64 + 1)) as usize;
            round.insert(at, empty);
        }
        for i in round {
            if i == empty {
                if let Some(c) = calibration.as_deref_mut()
                    && let Err(e) = c.run_once()
                {
                    // The shell ran an empty command a moment ago: what
                    // fails now fails every job's run too, and says so.
                    for st in states.iter_mut().filter(|st| !st.done) {
                        st.fail(RunStatus::Failed, e.to_string());
                    }
                }
                continue;
            }
            let st = &mut states[i];
            if !st.before_run(limit) {
                continue;
            }
            let outcome = st.result.job.spawn.run(limit);
            st.record(outcome, plan, cost, observer);
        }
    }
    if let Some(c) = calibration.as_deref() {
        let cost = c.cost();
        states.iter_mut().for_each(|st| st.recorrect(&cost));
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
