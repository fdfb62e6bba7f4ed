//! `warpt ci record`: one run of the current commit into the history, the
//! history's trend per metric, and an alert when the newest run sits after
//! a regression step.
//!
//! The history is the store (kept between CI jobs by the CI's cache), or
//! with `--history-dir` a directory of exports committed to the repository
//! (`benchmarks/history/`, one file per run). Either way the trend is
//! `results trend`'s change-point detection over every metric of the new
//! run, on this machine.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use warpt_model::BenchmarkSuiteRun;
use warpt_report::render::num;
use warpt_report::trend;
use warpt_store::{Location, Source, Store, TrendQuery};

use super::ci::split_command;
use super::rerun::{self, TrialOutput, Warpt};
use crate::cli::CiRecordArgs;
use crate::{Outcome, UsageError, history};

/// Runs the command once in this directory (its progress on our stderr):
/// its suite run.
fn run_once(command: Warpt, run_args: &[String]) -> Result<BenchmarkSuiteRun> {
    let output = TrialOutput::new(command, run_args, None).map_err(anyhow::Error::msg)?;
    let out = Command::new(std::env::current_exe()?)
        .args(command.words())
        .args(run_args)
        .args(output.flags())
        .env("WARPT_NO_PROGRESS", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("running warpt")?;
    // 0: all passed; 1: a benchmark failed, and the run is still handed over.
    if !matches!(out.status.code(), Some(0) | Some(1)) {
        anyhow::bail!(
            "`warpt {}` exited with {}",
            command.words().join(" "),
            out.status
        );
    }
    output
        .read(&String::from_utf8_lossy(&out.stdout))
        .map_err(anyhow::Error::msg)
}

/// Writes `run` into `dir` as `<start time>_<id>.json` (names sort by time).
fn write_export(dir: &Path, run: &BenchmarkSuiteRun) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stamp: String = run
        .start_time
        .map(|t| t.to_string())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = dir.join(format!("{stamp}_{}.json", run.id));
    // Atomic, as every export: the history directory is read back into a
    // store, and a half-written run there would poison every later record.
    crate::export::ExportTarget::prepare(&path)?.write(run)?;
    eprintln!("ci record: wrote {}", path.display());
    Ok(())
}

/// Every export in `dir`, recorded into a new SQLite store at `db`.
fn store_of_dir(dir: &Path, db: &Path) -> Result<Store> {
    let mut store = Store::open(Location::Sqlite(db.to_path_buf()))?;
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        let run = warpt_model::load_suite_run(&text)
            .map_err(|e| UsageError(format!("{}: not a warpt export: {e}", f.display())))?;
        store.record_run(&run, &Source::Run)?;
    }
    Ok(store)
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
            history::record_run(&args.store, None, &run);
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
            let bad = |s: &trend::Step| {
                (s.after > s.before) != m.higher_is_better && s.change_pct.abs() >= args.threshold
            };
            if let Some(s) = steps.last().filter(|s| bad(s)) {
                alerts.push(format!(
                    "- `{}` {} [{}]: {:+.1}% ({} -> {} {}) from run {} on, over {} runs (confidence {:.3})",
                    r.spec.id,
                    m.name,
                    warpt_model::tag_label(&m.tags),
                    s.change_pct,
                    num(s.before),
                    num(s.after),
                    m.unit,
                    rows[s.index].run_id,
                    rows.len(),
                    s.confidence
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
        let text = format!(
            "### warpt: regression in the benchmark history\n\nThe newest run ({}, commit `{commit}`) sits after a \
             step in the bad direction ({}):\n\n{}\n",
            run.id,
            trend::METHOD,
            alerts.join("\n")
        );
        crate::export::ExportTarget::prepare(path)?.write_text(&text)?;
    }
    Ok(if alerts.is_empty() {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}
