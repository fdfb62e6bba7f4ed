//! `warpt ci pr`: two git refs of the user's repository compared on this
//! machine, interleaved, with a verdict for the pull request.
//!
//! Both refs are checked out as detached git worktrees in a temporary
//! directory (the user's tree, index and branches are never touched), built
//! with `--build`, and run with the same `benchmark run` (or `exec`, or
//! `harness run`) arguments in
//! randomized interleaved trials ([`warpt_run::trials::run_sides`]) so slow
//! drifts of the machine hit both sides alike. The worktrees are removed
//! afterwards, on errors and after Ctrl-C too (which ends the trials; the
//! complete rounds are compared and the exit status is 130).

use anyhow::Result;
use warpt_ci::{PrCheckouts, PrSide, same_places, split_command};
use warpt_export::Format;
use warpt_model::BenchmarkSuiteRun;
use warpt_report::{Comparison, Options, render};

use crate::Outcome;
use crate::cli::CiPrArgs;
use warpt_run::history;
use warpt_run::trials::{self as rerun, Schedule, Sides, Subprocess};

/// `warpt ci pr`.
pub fn pr(args: &CiPrArgs) -> Result<Outcome> {
    let (command, run_args) = split_command(&args.args, "ci pr")?;
    rerun::check_reserved(command, &run_args, rerun::Runs::Several)?;
    let checkouts = PrCheckouts::new(&args.workdir, &args.base, &args.head, args.build.as_deref())?;
    let (base, head) = (checkouts.base.clone(), checkouts.head.clone());
    let side = |s: &PrSide| -> Result<Subprocess> {
        Ok(Subprocess::in_dir(&s.label, &s.dir, command, &run_args)?
            .reports_in(&s.root.join("reports")))
    };
    let (a, b) = (side(&base)?, side(&head)?);
    let schedule = schedule(args);
    let mut unresolved = |s: &Sides| {
        comparison(
            args,
            &same_places(&s.base, &base.root),
            "",
            &same_places(&s.current, &head.root),
            "",
        )
        .unresolved()
    };
    let sides = rerun::run_sides(
        a,
        b,
        rerun::Rounds::from_flag(args.trials),
        schedule,
        &mut unresolved,
    )?;
    drop(checkouts);
    for run in [&sides.base, &sides.current] {
        history::record_run(&args.store.choice(), None, run);
    }
    let outcome = verdict(
        args,
        sides.interrupted,
        &same_places(&sides.base, &base.root),
        &base.label,
        &same_places(&sides.current, &head.root),
        &head.label,
    )?;
    Ok(if sides.interrupted {
        Outcome::Interrupted
    } else {
        outcome
    })
}

/// Interleaved rounds, or a duet.
fn schedule(args: &CiPrArgs) -> Schedule {
    if args.duet {
        Schedule::Duet
    } else {
        Schedule::Interleaved { seed: args.seed }
    }
}

/// The comparison of the two sides' trials.
fn comparison(
    args: &CiPrArgs,
    base: &BenchmarkSuiteRun,
    base_label: &str,
    head: &BenchmarkSuiteRun,
    head_label: &str,
) -> Comparison {
    let options = Options {
        threshold_pct: args.threshold,
        count_threshold_pct: args.count_threshold,
        pairing: schedule(args).pairing(),
        ..Options::default()
    };
    history::compare(
        &args.store.choice(),
        None,
        (base, base_label),
        (head, head_label),
        &options,
    )
}

/// The comparison printed, and written as the comment and JUnit files.
fn verdict(
    args: &CiPrArgs,
    interrupted: bool,
    base: &BenchmarkSuiteRun,
    base_label: &str,
    head: &BenchmarkSuiteRun,
    head_label: &str,
) -> Result<Outcome> {
    let c = comparison(args, base, base_label, head, head_label);
    print!("{}", render::text(&c));
    let failed = c.regressed() || (args.fail_on_inconclusive && c.inconclusive());
    if let Some(path) = &args.comment {
        let planned = interrupted.then_some(args.trials.unwrap_or(schedule(args).default_rounds()));
        let text = render::pr_comment(&c, base_label, head_label, base.trial_count(), planned);
        warpt_run::ExportTarget::prepare(path)?.write_text(&text)?;
    }
    if let Some(path) = &args.junit {
        let junit = warpt_export::formats::Junit.render(&warpt_export::RunExport {
            run: head,
            baseline: Some(&c),
        })?;
        warpt_run::ExportTarget::prepare(path)?.write(&junit)?;
    }
    Ok(Outcome::success_if(!failed))
}
