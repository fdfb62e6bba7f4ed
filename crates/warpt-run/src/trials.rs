//! Interleaved A/B trials (`compare --rerun`, `ci pr`): both sides run
//! again now, in randomized order, each trial a warpt run in its own
//! process; and [`TrialOutput`], how one such run hands over its suite run
//! (`ci record` uses it for its single run).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use warpt_harness::interleave::{self, Side, TrialEvent, TrialSource};
use warpt_model::BenchmarkSuiteRun;

use crate::UsageError;
use crate::child::{ChildRun, Finished, is_flag};

/// Flags each trial sets itself (or that make no sense per trial).
const RESERVED: [&str; 9] = [
    "--json",
    "--no-store",
    "--store",
    "--repeat",
    "--replay",
    "--dry-run",
    "--export",
    "--export-file",
    "--monitor-output",
];

/// `harness run` flags a run sets itself: the comparison is the caller's,
/// not `--compare-to`'s.
const RESERVED_HARNESS: [&str; 1] = ["--compare-to"];

/// `harness run` flags several trials cannot share: the trials put their
/// reports where the caller says (a directory per side for `ci pr`).
const RESERVED_HARNESS_TRIALS: [&str; 2] = ["--output-dir", "--compare-to"];

/// One side: a warpt executable, this warpt with a configuration file, or
/// this warpt in a directory (a checkout of one git ref, for `ci pr`).
pub struct Subprocess {
    label: String,
    program: PathBuf,
    prefix: Vec<String>,
    run_args: Vec<String>,
    cwd: Option<PathBuf>,
    /// The command the prefix runs: how a trial gets its suite run.
    command: Warpt,
    /// Where a `harness run` trial writes its reports (else a scratch
    /// directory per trial).
    reports: Option<PathBuf>,
}

impl Subprocess {
    /// The side named `what`: an executable file is a warpt binary, any
    /// other file a configuration for this warpt.
    pub fn new(what: &str, run_args: &[String]) -> Result<Self> {
        let path = Path::new(what);
        let meta = std::fs::metadata(path).map_err(|e| {
            UsageError(format!(
                "--rerun side '{what}': {e} (give a warpt executable or a configuration file)"
            ))
        })?;
        if !meta.is_file() {
            return Err(UsageError(format!(
                "--rerun side '{what}' is not a file (give a warpt executable or a configuration file)"
            ))
            .into());
        }
        use std::os::unix::fs::PermissionsExt;
        let executable =
            meta.permissions().mode() & 0o111 != 0 && path.extension().is_none_or(|e| e != "toml");
        let (program, prefix) = if executable {
            (absolute(path)?, vec!["benchmark".into(), "run".into()])
        } else {
            if run_args
                .iter()
                .any(|a| a == "--config" || a.starts_with("--config="))
            {
                return Err(UsageError(
                    "--rerun with configuration files sets --config itself; remove it from the run arguments"
                        .into(),
                )
                .into());
            }
            (
                std::env::current_exe()?,
                vec![
                    "benchmark".into(),
                    "run".into(),
                    "--config".into(),
                    absolute(path)?.display().to_string(),
                ],
            )
        };
        Ok(Subprocess {
            label: what.to_string(),
            program,
            prefix,
            run_args: run_args.to_vec(),
            cwd: None,
            command: Warpt::BenchmarkRun,
            reports: None,
        })
    }

    /// This warpt's `command` (`benchmark run`, `exec` or `harness run`)
    /// with `run_args`, in directory `dir`.
    pub fn in_dir(label: &str, dir: &Path, command: Warpt, run_args: &[String]) -> Result<Self> {
        Ok(Subprocess {
            label: label.to_string(),
            program: std::env::current_exe()?,
            prefix: command.words().iter().map(|w| w.to_string()).collect(),
            run_args: run_args.to_vec(),
            cwd: Some(dir.to_path_buf()),
            command,
            reports: None,
        })
    }

    /// Every trial of a `harness run` writes its reports to `dir` (the
    /// last one's stay), so the paths in its parameters are the same in
    /// every trial.
    pub fn reports_in(mut self, dir: &Path) -> Self {
        self.reports = Some(dir.to_path_buf());
        self
    }

    fn child(&self, extra: &[OsString]) -> ChildRun {
        let c = ChildRun::program(&self.program)
            .args(&self.prefix)
            .args(&self.run_args)
            .args(extra);
        match &self.cwd {
            Some(dir) => c.current_dir(dir),
            None => c,
        }
    }

    /// Runs the side once with `extra` flags.
    fn call(&self, extra: &[OsString]) -> Result<Finished, String> {
        self.child(extra)
            .output()
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))
    }

    /// Checks, before anything is measured, that this side accepts the run
    /// arguments (a `--dry-run`); its error is a usage error.
    pub fn check(&self) -> Result<()> {
        if self.command != Warpt::BenchmarkRun {
            return Ok(());
        }
        let done = self
            .call(&["--dry-run".into()])
            .map_err(|e| UsageError(format!("--rerun side '{}': {e}", self.label)))?;
        if done.exit != crate::outcome::ChildExit::Ran(crate::RunOutcome::Success) {
            return Err(UsageError(format!(
                "--rerun side '{}' refused the run arguments: {}",
                self.label,
                done.stderr_tail(3)
            ))
            .into());
        }
        Ok(())
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

impl TrialSource for Subprocess {
    fn label(&self) -> &str {
        &self.label
    }

    fn run_trial(&mut self) -> Result<BenchmarkSuiteRun, String> {
        let output = TrialOutput::new(self.command, &self.run_args, self.reports.as_deref())?;
        let done = self.call(&output.flags())?;
        // 0: all passed; 1: a benchmark failed, and the run is still printed.
        if !done.exit.handed_over() {
            return Err(format!(
                "exited with {}: {}",
                done.exit,
                done.stderr_tail(3)
            ));
        }
        output.read(&done.stdout)
    }
}

/// Where one run of a warpt command leaves its suite run: `benchmark run`
/// and `exec` print it (`--json`); `harness run`, whose `--json` is its
/// summary, exports it to a file in a scratch directory, with its reports
/// there too unless they have a place (the run arguments' `--output-dir`,
/// or the caller's).
pub struct TrialOutput {
    scratch: Option<tempfile::TempDir>,
    reports: Option<PathBuf>,
}

impl TrialOutput {
    /// Prepares for one run of `command` with `run_args`; a `harness run`
    /// without an `--output-dir` among them writes its reports to
    /// `reports`, or to the scratch directory.
    pub fn new(
        command: Warpt,
        run_args: &[String],
        reports: Option<&Path>,
    ) -> Result<Self, String> {
        if command != Warpt::HarnessRun {
            return Ok(TrialOutput {
                scratch: None,
                reports: None,
            });
        }
        let scratch = tempfile::Builder::new()
            .prefix("warpt-trial-")
            .tempdir()
            .map_err(|e| format!("creating a directory for the trial: {e}"))?;
        let reports = if run_args.iter().any(|a| is_flag(a, "--output-dir")) {
            None
        } else {
            Some(reports.map_or_else(|| scratch.path().join("reports"), Path::to_path_buf))
        };
        Ok(TrialOutput {
            scratch: Some(scratch),
            reports,
        })
    }

    /// Runs `command` once in this directory, its progress on this
    /// process's stderr (`ci record`): its suite run.
    pub fn run_once(command: Warpt, run_args: &[String]) -> Result<BenchmarkSuiteRun> {
        let output = TrialOutput::new(command, run_args, None).map_err(anyhow::Error::msg)?;
        let done = ChildRun::this_warpt()?
            .args(command.words())
            .args(run_args)
            .args(output.flags())
            .stderr_inherit()
            .output()
            .context("running warpt")?;
        // 0: all passed; 1: a benchmark failed, and the run is still handed over.
        if !done.exit.handed_over() {
            anyhow::bail!(
                "`warpt {}` exited with {}",
                command.words().join(" "),
                done.exit
            );
        }
        output.read(&done.stdout).map_err(anyhow::Error::msg)
    }

    /// The flags that make the command hand over its suite run (and keep
    /// it out of the store: the caller records it).
    pub fn flags(&self) -> Vec<OsString> {
        let mut flags: Vec<OsString> = vec!["--no-store".into()];
        match &self.scratch {
            None => flags.push("--json".into()),
            Some(dir) => {
                if let Some(reports) = &self.reports {
                    flags.push("--output-dir".into());
                    flags.push(reports.into());
                }
                flags.push("--export-file".into());
                flags.push(dir.path().join("run.json").into());
            }
        }
        flags
    }

    /// The suite run, from the command's stdout or its export.
    pub fn read(&self, stdout: &str) -> Result<BenchmarkSuiteRun, String> {
        let text = match &self.scratch {
            None => stdout.to_string(),
            Some(dir) => {
                let path = dir.path().join("run.json");
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("it wrote no run to {}: {e}", path.display()))?
            }
        };
        warpt_model::load_suite_run(&text)
            .map_err(|e| format!("its output is not a suite run: {e}"))
    }
}

/// Runs the two sides' trials as `rounds` and `schedule` say and returns
/// each side's trials as one suite run. Fails (usage) on reserved run
/// arguments or a side that refuses them.
pub fn rerun(
    base: &str,
    current: &str,
    run_args: &[String],
    rounds: Rounds,
    schedule: Schedule,
    unresolved: &mut dyn FnMut(&Sides) -> Vec<String>,
) -> Result<Sides> {
    check_reserved(Warpt::BenchmarkRun, run_args, Runs::Several)?;
    let a = Subprocess::new(base, run_args)?;
    let b = Subprocess::new(current, run_args)?;
    run_sides(a, b, rounds, schedule, unresolved)
}

/// How many rounds the trials run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounds {
    /// Exactly this many (`--trials N`).
    Fixed(u32),
    /// The schedule's default rounds; then, while the comparison so far
    /// names verdicts more rounds could sharpen, as many again, up to
    /// [`ADAPTIVE_BATCHES`] times the default.
    Adaptive,
}

/// The most batches of the default rounds an adaptive rerun runs: with 15
/// rounds instead of 5 the band the trials can resolve is about a third
/// as wide.
pub const ADAPTIVE_BATCHES: u32 = 3;

impl Rounds {
    /// `--trials N` fixes the rounds; without it they adapt.
    pub fn from_flag(trials: Option<u32>) -> Self {
        trials.map_or(Rounds::Adaptive, Rounds::Fixed)
    }

    /// Rounds per batch, and the most in all.
    fn batch_and_most(self, schedule: Schedule) -> (u32, u32) {
        match self {
            Rounds::Fixed(n) => (n, n),
            Rounds::Adaptive => {
                let d = schedule.default_rounds();
                (d, d * ADAPTIVE_BATCHES)
            }
        }
    }
}

/// How the two sides' trials are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// One after the other in randomized order each round (RMIT), seeded.
    Interleaved {
        /// Seed of the orders.
        seed: u64,
    },
    /// At the same time on separate CPU halves, swapped every round
    /// ([`warpt_harness::duet`]).
    Duet,
}

impl Schedule {
    /// The rounds when the user gives none: 5 interleaved; 10 in a duet,
    /// whose verdict rests on couples of rounds, and whose rounds take
    /// the time of one side.
    pub fn default_rounds(self) -> u32 {
        match self {
            Schedule::Interleaved { .. } => 5,
            Schedule::Duet => 10,
        }
    }

    /// The comparison's pairing of these trials.
    pub fn pairing(self) -> warpt_report::compare::Pairing {
        match self {
            Schedule::Interleaved { .. } => warpt_report::compare::Pairing::Rounds,
            Schedule::Duet => warpt_report::compare::Pairing::Duet,
        }
    }
}

/// Runs the two sides' trials as `schedule` says, in batches as `rounds`
/// says: after each batch but the last, `unresolved` reads the sides so
/// far and names the verdicts more rounds could sharpen (none: done).
///
/// SIGINT or SIGTERM ends the trials: a signal to this process alone after
/// the round under way, a terminal's Ctrl-C (which reaches the trial too)
/// at once; either way the complete rounds are compared, if there are two.
pub fn run_sides(
    mut a: Subprocess,
    mut b: Subprocess,
    rounds: Rounds,
    schedule: Schedule,
    unresolved: &mut dyn FnMut(&Sides) -> Vec<String>,
) -> Result<Sides> {
    let (base, current) = (a.label.clone(), b.label.clone());
    a.check()?;
    b.check()?;
    let how = match schedule {
        Schedule::Duet => {
            let cpus = warpt_harness::duet::Cpus::split().map_err(UsageError)?;
            eprintln!(
                "duet: {base} and {current} at the same time, {} (swapped every round)",
                cpus.describe()
            );
            Batches::Duet(cpus)
        }
        Schedule::Interleaved { seed } => Batches::Interleaved(seed),
    };
    let stop = crate::interrupt::flag_only()?;
    let stopped = || stop.load(Ordering::Relaxed);
    let (batch, most) = rounds.batch_and_most(schedule);
    let mut done = interleave::Interleaved::default();
    let mut ran = 0;
    loop {
        let n = batch.min(most - ran);
        let got = match &how {
            Batches::Interleaved(seed) => {
                interleaved(&mut a, &mut b, (ran, n, most), *seed, &stopped)
            }
            Batches::Duet(cpus) => duet(&mut a, &mut b, cpus, (ran, n, most), &stopped),
        };
        done.base.extend(got.base);
        done.current.extend(got.current);
        done.failure = got.failure;
        ran += n;
        let sides = finish(&done, stopped(), &base, &current)?;
        if sides.interrupted || ran >= most {
            return Ok(sides);
        }
        let why = unresolved(&sides);
        if why.is_empty() {
            return Ok(sides);
        }
        eprintln!(
            "{ran} rounds leave {} unresolved ({}): {} more, up to {most}",
            if why.len() == 1 {
                "a verdict".to_string()
            } else {
                format!("{} verdicts", why.len())
            },
            why.iter().take(3).cloned().collect::<Vec<_>>().join("; "),
            batch.min(most - ran)
        );
    }
}

/// The warpt commands a trial can be: each hands over a suite run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warpt {
    /// `warpt benchmark run`.
    BenchmarkRun,
    /// `warpt exec`.
    Exec,
    /// `warpt harness run`.
    HarnessRun,
}

impl Warpt {
    /// The command's words.
    pub fn words(self) -> &'static [&'static str] {
        match self {
            Warpt::BenchmarkRun => &["benchmark", "run"],
            Warpt::Exec => &["exec"],
            Warpt::HarnessRun => &["harness", "run"],
        }
    }
}

/// How many runs one command line makes, for [`check_reserved`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// One run (`ci record`): a `harness run` may keep its reports where
    /// the user says.
    One,
    /// Several trials (`compare --rerun`, `ci pr`).
    Several,
}

/// Refuses run arguments each trial sets itself.
pub fn check_reserved(command: Warpt, run_args: &[String], runs: Runs) -> Result<()> {
    let harness: &[&str] = match (command, runs) {
        (Warpt::HarnessRun, Runs::Several) => &RESERVED_HARNESS_TRIALS,
        (Warpt::HarnessRun, Runs::One) => &RESERVED_HARNESS,
        _ => &[],
    };
    if let Some(bad) = run_args
        .iter()
        .find(|a| RESERVED.iter().chain(harness).any(|r| is_flag(a, r)))
    {
        return Err(UsageError(format!(
            "'{bad}' cannot be among the run arguments: each trial is one run, handed over \
             as JSON and recorded by the comparison"
        ))
        .into());
    }
    Ok(())
}

/// Each side's trials as one suite run.
pub struct Sides {
    /// The base's trials.
    pub base: BenchmarkSuiteRun,
    /// The current side's trials.
    pub current: BenchmarkSuiteRun,
    /// Whether SIGINT or SIGTERM ended the trials early (the runs hold the
    /// complete rounds).
    pub interrupted: bool,
}

/// How each batch of rounds runs: in orders from the seed, or as a duet on
/// the CPU halves.
enum Batches {
    Interleaved(u64),
    Duet(warpt_harness::duet::Cpus),
}

/// One batch of interleaved rounds (`at`: rounds run before it, rounds in
/// it, most in all), each round's order randomized from the schedule's
/// seed and the batch.
fn interleaved(
    a: &mut Subprocess,
    b: &mut Subprocess,
    (before, rounds, most): (u32, u32, u32),
    seed: u64,
    stop: &dyn Fn() -> bool,
) -> interleave::Interleaved {
    let seed = seed.wrapping_add(u64::from(before));
    let (base, current) = (a.label.clone(), b.label.clone());
    let mut report = |e: &TrialEvent<'_>| match e.outcome {
        None => eprintln!(
            "round {}/{most}: {} ({})...",
            before + e.round,
            e.side.as_str(),
            if e.side == Side::Base {
                &base
            } else {
                &current
            }
        ),
        Some(Ok(run)) => eprintln!(
            "round {}/{most}: {} done: {} benchmarks, {} passed",
            before + e.round,
            e.side.as_str(),
            run.benchmarks.len(),
            run.benchmarks
                .iter()
                .filter(|r| r.status == warpt_model::RunStatus::Passed)
                .count()
        ),
        Some(Err(_)) => {}
    };
    interleave::run_interleaved(a, b, rounds, seed, &mut report, stop)
}

/// One batch of duet rounds: both sides at the same time, each on its half
/// of the CPUs (swapped every round). Their interference grades cleared:
/// the other side is the foreign CPU every trial sees, and the pairing is
/// the defence against the host (the results keep their reasons).
fn duet(
    a: &mut Subprocess,
    b: &mut Subprocess,
    cpus: &warpt_harness::duet::Cpus,
    (before, rounds, most): (u32, u32, u32),
    stop: &dyn Fn() -> bool,
) -> interleave::Interleaved {
    let mut report = |e: &TrialEvent<'_>| {
        if e.side == Side::Base
            && let Some(Ok(run)) = e.outcome
        {
            eprintln!(
                "round {}/{most}: both done: {} benchmarks a side",
                before + e.round,
                run.benchmarks.len()
            );
        }
    };
    let mut done = warpt_harness::duet::run_duet(a, b, cpus, rounds, &mut report, stop);
    for run in done.base.iter_mut().chain(done.current.iter_mut()) {
        for r in &mut run.benchmarks {
            r.quality = None;
            r.measurement_quality = None;
        }
    }
    done
}

/// The complete rounds of `done` as each side's suite run, or why there
/// are too few.
fn finish(
    done: &interleave::Interleaved,
    interrupted: bool,
    base: &str,
    current: &str,
) -> Result<Sides> {
    match &done.failure {
        // The trial under way got the terminal's Ctrl-C too.
        Some(e) if interrupted => eprintln!("interrupted: {e}"),
        Some(e) => return Err(anyhow::anyhow!("--rerun stopped: {e}")),
        None => {}
    }
    if interrupted {
        eprintln!(
            "interrupted: comparing the {} complete rounds",
            done.base.len()
        );
    }
    if done.base.len() < 2 {
        return Err(anyhow::anyhow!(
            "--rerun needs at least 2 complete rounds to compare; {} finished",
            done.base.len()
        ));
    }
    let side = |runs: &[BenchmarkSuiteRun], label: &str| {
        interleave::combine(runs.to_vec(), label)
            .ok_or_else(|| anyhow::anyhow!("no trial of {label} finished"))
    };
    Ok(Sides {
        base: side(&done.base, base)?,
        current: side(&done.current, current)?,
        interrupted,
    })
}
