//! `warpt benchmark compare BASE CURRENT`.

use std::path::Path;

use anyhow::Result;
use warpt_model::BenchmarkSuiteRun;
use warpt_report::{Options, render};

use crate::cli::{CompareArgs, CompareFormat};
use crate::{Outcome, UsageError, history};

/// A run named by an export file or by an id in the store, with its label.
pub fn load_side(what: &str, store: Option<&Path>) -> Result<(BenchmarkSuiteRun, String)> {
    let path = Path::new(what);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| UsageError(format!("{what}: {e}")))?;
        let run = warpt_model::load_suite_run(&text)
            .map_err(|e| UsageError(format!("{what}: not a warpt export: {e}")))?;
        return Ok((run, what.to_string()));
    }
    let (store, p) = history::open_existing(store).map_err(|e| {
        UsageError(format!(
            "'{what}' is not a file, and there is no store to look it up in: {e}"
        ))
    })?;
    let run = store.load_run(what).map_err(|e| {
        UsageError(format!(
            "'{what}' is neither a file nor a run in {}: {e}",
            p.display()
        ))
    })?;
    let label = format!("run {}", run.id);
    Ok((run, label))
}

/// Prints the comparison; exit status 1 when a metric regressed.
pub fn run(args: &CompareArgs) -> Result<Outcome> {
    let (base, base_label) = load_side(&args.base, args.store.store.as_deref())?;
    let (current, current_label) = load_side(&args.current, args.store.store.as_deref())?;
    let options = Options {
        threshold_pct: args.threshold,
        ..Options::default()
    };
    let c = warpt_report::compare(&base, &base_label, &current, &current_label, &options);
    match args.format {
        CompareFormat::Table => print!("{}", render::text(&c)),
        CompareFormat::Md => print!("{}", render::markdown(&c)),
        CompareFormat::Json => println!("{}", render::json(&c)?),
    }
    if c.metrics.is_empty() {
        eprintln!("no metric is in both runs");
    }
    Ok(if c.regressed() {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}
