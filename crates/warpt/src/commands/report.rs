//! `warpt report RUN_OR_FILE...` and `warpt report --by machine`.

use std::collections::HashMap;

use anyhow::Result;
use warpt_export::{Document, ExportTarget};
use warpt_report::fleet;
use warpt_report::report::{self, Input};
use warpt_store::CrossFilter;

use crate::cli::ReportArgs;
use crate::stored::machine_rows;
use crate::{Outcome, UsageError};
use warpt_run::history::load_side;

/// Writes the report to stdout or `-o`.
pub fn run(args: &ReportArgs) -> Result<Outcome> {
    let needs_file = warpt_export::REPORT.get(&args.format)?.needs_file();
    if needs_file && args.output.is_none() {
        let e = format!("--format {} writes a file: give -o PATH", args.format);
        return Err(UsageError(e).into());
    }
    // The destination is checked before the store is read or a browser started.
    let target = args
        .output
        .as_deref()
        .map(ExportTarget::prepare)
        .transpose()?;
    if args.by.is_some() {
        return by_machine(args, target);
    }
    let mut input = Input::default();
    for what in &args.runs {
        let (run, label) = load_side(what, args.store.store.as_deref())?;
        input.runs.push((label, run));
    }
    if let Some(path) = &args.telemetry {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("--telemetry {}: {e}", path.display())))?;
        input.telemetry = serde_json::from_str(&text).map_err(|e| {
            UsageError(format!(
                "--telemetry {}: not a monitor timeline (--monitor-output): {e}",
                path.display()
            ))
        })?;
    }
    let flags = warpt_run::StoreChoice::from_flags(args.store.store.clone(), false);
    let ids = input.runs.iter().map(|(_, r)| r.id.clone()).collect();
    let noise = warpt_run::history::noise_lookup(&flags, None, ids);
    input.comparisons = report::compare_with_first(&input.runs, noise.as_ref());
    write(
        target,
        &warpt_export::REPORT.get(&args.format)?.render(&input)?,
    )
}

/// Writes the rendered report to `-o`'s reserved place, or stdout.
fn write(target: Option<ExportTarget>, doc: &Document) -> Result<Outcome> {
    let written = match target {
        Some(t) => t.write(doc)?,
        None => doc.write(None)?,
    };
    for p in written {
        eprintln!("wrote {}", p.display());
    }
    Ok(Outcome::Success)
}

/// `warpt report --by machine`.
fn by_machine(args: &ReportArgs, target: Option<ExportTarget>) -> Result<Outcome> {
    let costs = fleet::costs::load(args.machines_file.as_deref()).map_err(UsageError)?;
    let filter = CrossFilter {
        machines: args.machine.clone(),
        since: args.since.clone(),
        until: args.until.clone(),
        suite: args.suite.clone(),
        benchmark: args.benchmark.clone(),
        slurm_job: args.fleet_job.clone(),
    };
    let selection = "--machine, --since, --until, --suite, --benchmark, --fleet-job";
    let m = machine_rows(args.store.store.as_deref(), &filter, selection)?;
    let mut analysis = fleet::analyse(&m.rows, &m.classes, &costs);
    let mut failed = None;
    fleet::recommend(
        &mut analysis,
        &mut |ids| match m.store.metric_samples(ids) {
            Ok(s) => s,
            Err(e) => {
                failed = Some(e);
                HashMap::new()
            }
        },
    );
    if let Some(e) = failed {
        return Err(e.into());
    }
    write(
        target,
        &warpt_export::MACHINES
            .get(&args.format)?
            .render(&analysis)?,
    )
}
