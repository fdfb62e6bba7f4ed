//! `warpt report RUN_OR_FILE...` and `warpt report --by machine`.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use warpt_report::fleet;
use warpt_report::report::{self, Input};
use warpt_store::CrossFilter;

use crate::cli::{ReportArgs, ReportFormat};
use crate::commands::compare::load_side;
use crate::{Outcome, UsageError};
use warpt_run::history;

/// Writes the report to stdout or `-o`.
pub fn run(args: &ReportArgs) -> Result<Outcome> {
    if args.format == ReportFormat::Pdf && args.output.is_none() {
        return Err(UsageError("--format pdf writes a file: give -o PATH".into()).into());
    }
    if args.by.is_some() {
        return by_machine(args);
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
    let text = match args.format {
        ReportFormat::Md => report::markdown(&input),
        ReportFormat::Html | ReportFormat::Pdf => report::html(&input),
        ReportFormat::Json => serde_json::to_string_pretty(&report::json(&input))? + "\n",
    };
    write(args, &text)
}

/// Writes `text` (HTML printed to PDF for `--format pdf`) to `-o` or stdout.
fn write(args: &ReportArgs, text: &str) -> Result<Outcome> {
    match (&args.output, args.format) {
        (Some(p), ReportFormat::Pdf) => {
            warpt_run::ExportTarget::prepare(p)?;
            crate::pdf::print(text, p)?;
            eprintln!("wrote {}", p.display());
        }
        (Some(p), _) => {
            warpt_run::ExportTarget::prepare(p)?.write_text(text)?;
            eprintln!("wrote {}", p.display());
        }
        (None, _) => print!("{text}"),
    }
    Ok(Outcome::Success)
}

/// `machines.toml`: `[machines.HOST] cost_per_hour = 3.2`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MachinesFile {
    #[serde(default)]
    machines: HashMap<String, MachineEntry>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MachineEntry {
    cost_per_hour: Option<f64>,
}

/// Each host's price per hour from `machines.toml` (`--machines-file`, or
/// `./machines.toml` when it exists).
fn costs(file: Option<&Path>) -> Result<HashMap<String, f64>> {
    let default = Path::new("machines.toml");
    let path = match file {
        Some(p) => p,
        None if default.is_file() => default,
        None => return Ok(HashMap::new()),
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let parsed: MachinesFile =
        toml::from_str(&text).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let mut out = HashMap::new();
    for (host, entry) in parsed.machines {
        if let Some(c) = entry.cost_per_hour {
            if !(c.is_finite() && c > 0.0) {
                return Err(UsageError(format!(
                    "{}: [machines.{host}] cost_per_hour = {c}: a price above 0 is needed",
                    path.display()
                ))
                .into());
            }
            out.insert(host, c);
        }
    }
    Ok(out)
}

/// `warpt report --by machine`.
fn by_machine(args: &ReportArgs) -> Result<Outcome> {
    let costs = costs(args.machines_file.as_deref())?;
    let (store, location) = history::open_existing(args.store.store.as_deref())?;
    let filter = CrossFilter {
        machines: args.machine.clone(),
        since: args.since.clone(),
        until: args.until.clone(),
        suite: args.suite.clone(),
        benchmark: args.benchmark.clone(),
        slurm_job: args.fleet_job.clone(),
    };
    let rows = store.cross_rows(&filter)?;
    if rows.is_empty() {
        return Err(UsageError(format!(
            "no passed results in {location} match the selection (--machine, --since, --until, \
             --suite, --benchmark, --fleet-job)"
        ))
        .into());
    }
    let class_of = crate::commands::outliers::classes(&store, &rows)?;
    let mut analysis = fleet::analyse(&rows, &class_of, &costs);
    let mut failed = None;
    fleet::recommend(&mut analysis, &mut |ids| match store.metric_samples(ids) {
        Ok(s) => s,
        Err(e) => {
            failed = Some(e);
            HashMap::new()
        }
    });
    if let Some(e) = failed {
        return Err(e.into());
    }
    let text = match args.format {
        ReportFormat::Md => fleet::render::markdown(&analysis),
        ReportFormat::Html | ReportFormat::Pdf => fleet::render::html(&analysis),
        ReportFormat::Json => serde_json::to_string_pretty(&analysis)? + "\n",
    };
    write(args, &text)
}
