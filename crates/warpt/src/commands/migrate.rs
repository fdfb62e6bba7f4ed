//! `warpt results migrate`: one store's whole history copied into another,
//! typically a machine's SQLite file into the team's PostgreSQL database.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use warpt_store::{Location, Store};

use crate::cli::ResultsMigrateArgs;
use crate::{Outcome, UsageError};

/// `warpt results migrate --from A --to B`.
pub fn run(args: &ResultsMigrateArgs) -> Result<Outcome> {
    let from = Location::parse(&args.from);
    let to = Location::parse(&args.to);
    if from == to {
        return Err(UsageError(format!("--from and --to are the same store ({from})")).into());
    }
    if !from.exists() {
        return Err(UsageError(format!("--from {from}: no such store")).into());
    }
    let source = Store::open(&from).with_context(|| format!("opening --from {from}"))?;
    let target = Store::open(&to).with_context(|| format!("opening --to {to}"))?;
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if std::env::var_os("WARPT_NO_PROGRESS").is_some() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("copying runs [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let report = warpt_store::copy::copy(&source, &target, &mut |done, all| {
        bar.set_length(all as u64);
        bar.set_position(done as u64);
    })
    .with_context(|| {
        format!("copying {from} into {to} (what was copied stays; run again to finish)")
    })?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprintln!(
            "copied {from} into {to}: {} runs added ({} already there), {} stress runs ({}), \
             {} noise profile rows ({}), {} machines",
            report.runs,
            report.runs_present,
            report.stress_runs,
            report.stress_present,
            report.noise_profiles,
            report.noise_present,
            report.machines
        );
    }
    Ok(Outcome::Success)
}
