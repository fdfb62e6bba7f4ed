//! `warpt ci record`: one run of the current commit into the history, the
//! history's trend per metric, and an alert when the newest run sits after
//! a regression step.
//!
//! The history is the store (kept between CI jobs by the CI's cache), or
//! with `--history-dir` a directory of exports committed to the repository
//! (`benchmarks/history/`, one file per run). Either way the trend is
//! `results trend`'s change-point detection over every metric of the new
//! run, on this machine.

use anyhow::Result;
use warpt_ci::{regression_alerts, split_command, store_of_dir, write_export};
use warpt_report::history as history_view;
use warpt_run::history;
use warpt_run::trials::{self as rerun, TrialOutput};

use crate::Outcome;
use crate::cli::CiRecordArgs;

/// `warpt ci record`.
pub fn record(args: &CiRecordArgs) -> Result<Outcome> {
    let (command, run_args) = split_command(&args.args, "ci record")?;
    rerun::check_reserved(command, &run_args, rerun::Runs::One)?;
    let mut run = TrialOutput::run_once(command, &run_args)?;
    if let Some(branch) = &args.branch
        && let Some(git) = run.manifest.as_mut().and_then(|m| m.git.as_mut())
    {
        git.branch = Some(branch.clone());
    }
    let scratch = tempfile::tempdir()?;
    let store = match &args.history_dir {
        Some(dir) => {
            write_export(dir, &run)?;
            store_of_dir(dir, &scratch.path().join("history.db"))?
        }
        None => {
            history::record_run(&args.store.choice(), None, &run);
            history::open_existing(args.store.store.as_deref())?.0
        }
    };
    let (series, alerts) = regression_alerts(&store, &run, args.threshold)?;
    println!(
        "ci record: run {} recorded; {series} metric series, {} ending after a regression",
        run.id,
        alerts.len()
    );
    for a in &alerts {
        println!("{a}");
    }
    if let (Some(path), false) = (&args.alert_file, alerts.is_empty()) {
        let commit = run
            .manifest
            .as_ref()
            .and_then(|m| m.git.as_ref())
            .map(|g| g.commit.chars().take(10).collect::<String>())
            .unwrap_or_default();
        let text = history_view::alert_markdown(&run.id, &commit, &alerts);
        warpt_run::ExportTarget::prepare(path)?.write_text(&text)?;
    }
    Ok(Outcome::success_if(alerts.is_empty()))
}
