//! `GET /api/v1/overview`: the dashboard's first view, one line per
//! machine — its latest run; the headline figures of its latest run of
//! each suite, each with a sparkline of its recent history on the machine;
//! and the figures whose history ends in a regression step (as `warpt
//! results trend` finds it).

use serde::Serialize;
use warpt_model::RunStatus;
use warpt_store::{RunFilter, Store, StoreError, TrendQuery};

/// Headline figures shown per machine.
pub const HEADLINES: usize = 10;
/// Headline figures taken from one run.
pub const PER_RUN: usize = 4;
/// Suites whose latest run a machine's line covers.
pub const SUITES: usize = 4;
/// Points of history a sparkline holds (the latest).
pub const SPARK_POINTS: usize = 20;

/// One headline figure of a machine's latest run.
#[derive(Debug, Serialize)]
pub struct Figure {
    /// Suite.
    pub suite: String,
    /// Benchmark.
    pub benchmark: String,
    /// Metric (the result's first).
    pub metric: String,
    /// Its tags (the first combination the result reports).
    pub tags: std::collections::BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether more is better.
    pub higher_is_better: bool,
    /// The latest run's median.
    pub value: f64,
    /// The figure's recent history on this machine, oldest first.
    pub spark: Vec<f64>,
    /// Runs in the whole history.
    pub runs: usize,
    /// The step the history ends in, where it is a regression.
    pub regression: Option<Step>,
}

/// A regression step.
#[derive(Debug, Serialize)]
pub struct Step {
    /// The first run after it.
    pub run_id: String,
    /// When that run started.
    pub start_time: String,
    /// The change, percent.
    pub change_pct: f64,
}

/// A machine's line.
#[derive(Debug, Serialize)]
pub struct Machine {
    /// Fingerprint.
    pub fingerprint: String,
    /// Host name.
    pub hostname: String,
    /// CPU model.
    pub cpu_model: String,
    /// Logical CPUs.
    pub logical_cores: i64,
    /// The latest benchmark run: id, suite, start, passed of benchmarks.
    pub latest: Latest,
    /// The headline figures of its latest run of each suite (at most
    /// [`HEADLINES`], [`PER_RUN`] a run, [`SUITES`] suites).
    pub figures: Vec<Figure>,
    /// How many of them end in a regression.
    pub regressions: usize,
}

/// A machine's latest run.
#[derive(Debug, Serialize)]
pub struct Latest {
    /// Run id.
    pub id: String,
    /// Suite.
    pub suite: String,
    /// Start (RFC 3339).
    pub start_time: Option<String>,
    /// Results that passed.
    pub passed: usize,
    /// Results.
    pub benchmarks: usize,
}

/// Every machine's line, the most recently measured first.
pub fn overview(store: &Store) -> Result<Vec<Machine>, StoreError> {
    let mut out = Vec::new();
    for m in store.list_machines()? {
        let runs = store.list_runs(&RunFilter {
            machine: Some(m.fingerprint.clone()),
            limit: Some(200),
            ..RunFilter::default()
        })?;
        // The latest benchmark run of each suite, the most recent first.
        let mut latest_of_suite: Vec<&warpt_model::RunSummary> = Vec::new();
        for r in runs.iter().filter(|r| {
            r.kind == "benchmark" && r.machine.as_deref() == Some(m.fingerprint.as_str())
        }) {
            if latest_of_suite.len() < SUITES && !latest_of_suite.iter().any(|x| x.suite == r.suite)
            {
                latest_of_suite.push(r);
            }
        }
        let Some(latest) = latest_of_suite.first() else {
            continue;
        };
        let run = store.load_run(&latest.id)?;
        let mut figures = Vec::new();
        for summary in &latest_of_suite {
            let of_suite = if summary.id == run.id {
                run.clone()
            } else {
                store.load_run(&summary.id)?
            };
            for r in of_suite
                .benchmarks
                .iter()
                .filter(|r| r.status == RunStatus::Passed)
                .take(PER_RUN)
            {
                if figures.len() >= HEADLINES {
                    break;
                }
                if let Some(f) = figure(store, &m.fingerprint, r)? {
                    figures.push(f);
                }
            }
        }
        out.push(Machine {
            regressions: figures.iter().filter(|f| f.regression.is_some()).count(),
            fingerprint: m.fingerprint,
            hostname: m.hostname,
            cpu_model: m.cpu_model,
            logical_cores: m.logical_cores,
            latest: Latest {
                id: run.id.clone(),
                suite: run.suite.clone(),
                start_time: run.start_time.map(|t| t.to_string()),
                passed: run
                    .benchmarks
                    .iter()
                    .filter(|r| r.status == RunStatus::Passed)
                    .count(),
                benchmarks: run.benchmarks.len(),
            },
            figures,
        });
    }
    out.sort_by(|a, b| b.latest.start_time.cmp(&a.latest.start_time));
    Ok(out)
}

/// A result's headline figure (its first metric with a value) and that
/// figure's history on the machine.
fn figure(
    store: &Store,
    machine: &str,
    r: &warpt_model::BenchmarkRunResult,
) -> Result<Option<Figure>, StoreError> {
    let Some(metric) = r.metrics.iter().find(|x| x.value.is_finite()) else {
        return Ok(None);
    };
    let rows = store.trend(&TrendQuery {
        suite: Some(&r.spec.id.suite),
        benchmark: &r.spec.id.name,
        metric: &metric.name,
        tags: &metric.tags,
        machine: Some(machine),
    })?;
    // The series of exactly these tags (the query also matches rows
    // carrying more).
    let rows: Vec<_> = rows.into_iter().filter(|x| x.tags == metric.tags).collect();
    let values: Vec<f64> = rows.iter().map(|x| x.value).collect();
    let steps = warpt_report::trend::change_points(&values);
    let regression = warpt_report::history::latest_regression(&steps, metric.higher_is_better, 0.0)
        .and_then(|s| {
            let at = rows.get(s.index)?;
            Some(Step {
                run_id: at.run_id.clone(),
                start_time: at.start_time.clone(),
                change_pct: s.change_pct,
            })
        });
    Ok(Some(Figure {
        suite: r.spec.id.suite.clone(),
        benchmark: r.spec.id.name.clone(),
        metric: metric.name.clone(),
        tags: metric.tags.clone(),
        unit: metric.unit.clone(),
        higher_is_better: metric.higher_is_better,
        value: metric.value,
        spark: values[values.len().saturating_sub(SPARK_POINTS)..].to_vec(),
        runs: values.len(),
        regression,
    }))
}
