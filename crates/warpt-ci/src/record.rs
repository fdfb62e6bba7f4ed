//! `ci record`'s history directory: each run written into it as an
//! export, read back into a store, and the alerts of its regressions.

use std::path::Path;

use anyhow::{Context, Result};
use warpt_model::BenchmarkSuiteRun;
use warpt_run::UsageError;
use warpt_store::{Location, Source, Store, TrendQuery};

/// Writes `run` into `dir` as `<start time>_<id>.json` (names sort by time).
pub fn write_export(dir: &Path, run: &BenchmarkSuiteRun) -> Result<()> {
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
    warpt_run::ExportTarget::prepare(&path)?.write_json(run)?;
    eprintln!("ci record: wrote {}", path.display());
    Ok(())
}

/// Every export in `dir`, recorded into a new SQLite store at `db`.
pub fn store_of_dir(dir: &Path, db: &Path) -> Result<Store> {
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

/// `ci record`'s alerts: every metric of `run`'s passed results, its
/// history on this machine in `store`, and a line for each whose history
/// ends after a regression step of at least `threshold_pct` percent. With
/// the number of series looked at.
pub fn regression_alerts(
    store: &Store,
    run: &BenchmarkSuiteRun,
    threshold_pct: f64,
) -> Result<(usize, Vec<String>)> {
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
            let steps = warpt_report::trend::change_points(&values);
            if let Some(s) =
                warpt_report::history::latest_regression(&steps, m.higher_is_better, threshold_pct)
            {
                alerts.push(warpt_report::history::alert_line(
                    &r.spec.id,
                    m,
                    s,
                    &rows[s.index].run_id,
                    rows.len(),
                ));
            }
        }
    }
    Ok((series, alerts))
}
