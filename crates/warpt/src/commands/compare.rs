//! `warpt benchmark compare BASE CURRENT`.

use anyhow::Result;
use warpt_model::BenchmarkSuiteRun;
use warpt_report::Options;

use crate::Outcome;
use crate::cli::CompareArgs;
use warpt_report::compare::Pairing;
use warpt_run::history;
use warpt_run::trials::{Rounds, Schedule, Sides};

/// Prints the comparison; exit status 1 when a metric regressed (or, with
/// `--fail-on-inconclusive`, was inconclusive), 130 when the trials of
/// `--rerun` were interrupted (the complete rounds are compared).
pub fn run(args: &CompareArgs) -> Result<Outcome> {
    let store = if args.store.no_store {
        None
    } else {
        args.store.store.as_deref()
    };
    let mut interrupted = false;
    let schedule = if args.duet {
        Schedule::Duet
    } else {
        Schedule::Interleaved { seed: args.seed }
    };
    let options = Options {
        threshold_pct: args.threshold,
        count_threshold_pct: args.count_threshold,
        pairing: if args.rerun {
            schedule.pairing()
        } else {
            Pairing::None
        },
        ..Options::default()
    };
    let ((base, base_label), (current, current_label)) = if args.rerun {
        let mut unresolved = |s: &Sides| {
            history::compare(
                &args.store.choice(),
                args.assume_noise,
                (&s.base, ""),
                (&s.current, ""),
                &options,
            )
            .unresolved()
        };
        let sides = warpt_run::trials::rerun(
            &args.base,
            &args.current,
            &args.run_args,
            Rounds::from_flag(args.trials),
            schedule,
            &mut unresolved,
        )?;
        interrupted = sides.interrupted;
        let (b, c) = (sides.base, sides.current);
        let label = |side: &str, run: &BenchmarkSuiteRun| {
            format!("{side} ({} trials, run {})", run.trial_count(), run.id)
        };
        let (bl, cl) = (label(&args.base, &b), label(&args.current, &c));
        for run in [&b, &c] {
            history::record_run(&args.store.choice(), None, run);
        }
        ((b, bl), (c, cl))
    } else {
        // With --label KEY the sides are values of that label.
        let side = |given: &str| match &args.label {
            Some(key) => format!("label:{key}={given}"),
            None => given.to_string(),
        };
        (
            history::load_side(&side(&args.base), store)?,
            history::load_side(&side(&args.current), store)?,
        )
    };
    let c = history::compare(
        &args.store.choice(),
        args.assume_noise,
        (&base, &base_label),
        (&current, &current_label),
        &options,
    );
    warpt_export::COMPARISON
        .get(&args.format)?
        .render(&c)?
        .write(None)?;
    if c.metrics.is_empty() {
        eprintln!("no metric is in both runs");
    }
    Ok(if interrupted {
        Outcome::Interrupted
    } else if c.regressed() || (args.fail_on_inconclusive && c.inconclusive()) {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}
