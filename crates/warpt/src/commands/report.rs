//! `warpt report RUN_OR_FILE...`.

use anyhow::Result;
use warpt_report::report::{self, Input};

use crate::cli::{ReportArgs, ReportFormat};
use crate::commands::compare::load_side;
use crate::{Outcome, UsageError};

/// Writes the report to stdout or `-o`.
pub fn run(args: &ReportArgs) -> Result<Outcome> {
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
    let flags = crate::cli::StoreFlags {
        store: args.store.store.clone(),
        no_store: false,
    };
    let ids = input.runs.iter().map(|(_, r)| r.id.clone()).collect();
    let noise = crate::history::noise_lookup(&flags, None, ids);
    input.comparisons = report::compare_with_first(&input.runs, noise.as_ref());
    let text = match args.format {
        ReportFormat::Md => report::markdown(&input),
        ReportFormat::Html => report::html(&input),
        ReportFormat::Json => serde_json::to_string_pretty(&report::json(&input))? + "\n",
    };
    match &args.output {
        Some(p) => {
            crate::export::ExportTarget::prepare(p)?.write_text(&text)?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(Outcome::Success)
}
