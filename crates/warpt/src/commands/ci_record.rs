//! `warpt ci record`: one run of the current commit into the history, the
//! history's trend per metric, and an alert when the newest run sits after
//! a regression step.
//!
//! The history is the store (kept between CI jobs by the CI's cache), or
//! with `--history-dir` a directory of exports committed to the repository
//! (`benchmarks/history/`, one file per run). Either way the trend is
//! `results trend`'s change-point detection over every metric of the new
//! run, on this machine.

use anyhow::{Context, Result};
use warpt_model::BenchmarkSuiteRun;
use warpt_report::history as history_view;
use warpt_report::trend;
use warpt_run::child::ChildRun;
use warpt_store::TrendQuery;

use crate::Outcome;
use crate::cli::CiRecordArgs;
use warpt_run::ci::{split_command, store_of_dir, write_export};
use warpt_run::history;
use warpt_run::trials::{self as rerun, TrialOutput, Warpt};

/// Runs the command once in this directory (its progress on our stderr):
/// its suite run.
fn run_once(command: Warpt, run_args: &[String]) -> Result<BenchmarkSuiteRun> {
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

/// `warpt ci record`.
pub fn record(args: &CiRecordArgs) -> Result<Outcome> {
    let (command, run_args) = split_command(&args.args, "ci record")?;
    rerun::check_reserved(command, &run_args, rerun::Runs::One)?;
    let mut run = run_once(command, &run_args)?;
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
    let machine = run.system.as_ref().map(|s| s.os.hostname.clone());
    let mut alerts = Vec::new();
    let mut series = 0;
    for r in run
        .benchmarks
        .iter()
        .filter(|r| r.status == warpt_model::RunStatus::Passed)
    {
        for m in &r.metrics {
            let rows = store.trend(&TrendQuery {
                suite: Some(&r.spec.id.suite),
                benchmark: &r.spec.id.name,
                metric: &m.name,
                tags: &m.tags,
                machine: machine.as_deref(),
            })?;
            let values: Vec<f64> = rows.iter().map(|x| x.value).collect();
            series += 1;
            let steps = trend::change_points(&values);
            if let Some(s) =
                history_view::latest_regression(&steps, m.higher_is_better, args.threshold)
            {
                alerts.push(history_view::alert_line(
                    &r.spec.id,
                    m,
                    s,
                    &rows[s.index].run_id,
                    rows.len(),
                ));
            }
        }
    }
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
    Ok(if alerts.is_empty() {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}
