//! `warpt results trend`: a metric's history on one machine with its
//! change points, for trend tracking and nightly regression alerts.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;
use warpt_report::render::num;
use warpt_report::trend::{self, Step};
use warpt_store::{TrendQuery, TrendRow};

use crate::cli::ResultsTrendArgs;
use crate::{Outcome, UsageError, history, output};

/// One run's value.
#[derive(Serialize)]
struct Point<'a> {
    run_id: &'a str,
    start_time: &'a str,
    value: f64,
}

/// A step in the series.
#[derive(Serialize)]
struct ChangePoint<'a> {
    /// The first run after the step.
    run_id: &'a str,
    index: usize,
    before: f64,
    after: f64,
    change_pct: f64,
    confidence: f64,
    p_value: f64,
    /// `regressed` or `improved`, by the metric's direction.
    direction: &'static str,
}

/// `warpt results trend --json`.
#[derive(Serialize)]
struct TrendJson<'a> {
    suite: &'a str,
    benchmark: &'a str,
    metric: &'a str,
    tags: &'a BTreeMap<String, String>,
    machine: &'a str,
    unit: &'a str,
    higher_is_better: bool,
    method: &'static str,
    points: Vec<Point<'a>>,
    change_points: Vec<ChangePoint<'a>>,
    /// Whether the latest run sits after a step in the bad direction.
    latest_regressed: bool,
}

fn parse_tags(raw: &[String]) -> Result<BTreeMap<String, String>> {
    raw.iter()
        .map(|t| {
            t.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| UsageError(format!("--tags '{t}' is not KEY=VALUE")).into())
        })
        .collect()
}

/// The one series `rows` hold, or a usage error naming the choices.
fn one_series(rows: Vec<TrendRow>) -> Result<Vec<TrendRow>> {
    let mut machines: Vec<String> = rows
        .iter()
        .map(|r| format!("{} ({})", r.hostname, &r.fingerprint))
        .collect();
    machines.sort();
    machines.dedup();
    if machines.len() > 1 {
        return Err(UsageError(format!(
            "the history holds this metric for {} machines; pick one with --machine: {}",
            machines.len(),
            machines.join(", ")
        ))
        .into());
    }
    let mut series: Vec<String> = rows
        .iter()
        .map(|r| format!("{} [{}]", r.suite, warpt_model::tag_label(&r.tags)))
        .collect();
    series.sort();
    series.dedup();
    if series.len() > 1 {
        return Err(UsageError(format!(
            "several series match; narrow with --suite or --tags KEY=VALUE: {}",
            series.join(", ")
        ))
        .into());
    }
    Ok(rows)
}

/// Prints the series and its change points; `Failures` (exit 1) when the
/// last step is in the bad direction.
pub fn run(args: &ResultsTrendArgs) -> Result<Outcome> {
    let tags = parse_tags(&args.tags)?;
    let (store, path) = history::open_existing(args.store.store.as_deref())?;
    let rows = store.trend(&TrendQuery {
        suite: args.suite.as_deref(),
        benchmark: &args.benchmark,
        metric: &args.metric,
        tags: &tags,
        machine: args.machine.as_deref(),
    })?;
    if rows.is_empty() {
        return Err(UsageError(format!(
            "no passed run in {} has metric '{}' of benchmark '{}'{}",
            path,
            args.metric,
            args.benchmark,
            if tags.is_empty() && args.machine.is_none() {
                String::new()
            } else {
                " with those tags on that machine".into()
            }
        ))
        .into());
    }
    let rows = one_series(rows)?;
    let values: Vec<f64> = rows.iter().map(|r| r.value).collect();
    let steps = trend::change_points(&values);
    let first = &rows[0];
    let bad = |s: &Step| (s.after > s.before) != first.higher_is_better;
    let latest_regressed = steps.last().is_some_and(bad);
    if args.json {
        let json = TrendJson {
            suite: &first.suite,
            benchmark: &args.benchmark,
            metric: &args.metric,
            tags: &first.tags,
            machine: &first.hostname,
            unit: &first.unit,
            higher_is_better: first.higher_is_better,
            method: trend::METHOD,
            points: rows
                .iter()
                .map(|r| Point {
                    run_id: &r.run_id,
                    start_time: &r.start_time,
                    value: r.value,
                })
                .collect(),
            change_points: steps
                .iter()
                .map(|s| ChangePoint {
                    run_id: &rows[s.index].run_id,
                    index: s.index,
                    before: s.before,
                    after: s.after,
                    change_pct: s.change_pct,
                    confidence: s.confidence,
                    p_value: s.p_value,
                    direction: if bad(s) { "regressed" } else { "improved" },
                })
                .collect(),
            latest_regressed,
        };
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        let mut t = output::table(&["run", "started", "value", "step"]);
        for (i, r) in rows.iter().enumerate() {
            let step = steps
                .iter()
                .find(|s| s.index == i)
                .map_or(String::new(), |s| {
                    format!(
                        "{} {:+.1}% ({} -> {}, confidence {:.3})",
                        if bad(s) { "regressed" } else { "improved" },
                        s.change_pct,
                        num(s.before),
                        num(s.after),
                        s.confidence
                    )
                });
            t.add_row(vec![
                r.run_id.clone(),
                r.start_time.clone(),
                format!("{} {}", num(r.value), r.unit),
                step,
            ]);
        }
        println!("{t}");
        println!(
            "{}/{} {} [{}] on {}: {} run(s), {} change point(s); {}",
            first.suite,
            args.benchmark,
            args.metric,
            warpt_model::tag_label(&first.tags),
            first.hostname,
            rows.len(),
            steps.len(),
            trend::METHOD
        );
        if latest_regressed {
            println!("the latest run sits after a regression");
        }
    }
    Ok(if latest_regressed {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}
