//! `warpt results trend`: a metric's history on one machine with its
//! change points, for trend tracking and nightly regression alerts.

use std::collections::BTreeMap;

use anyhow::Result;
use warpt_report::history as history_view;
use warpt_report::trend;
use warpt_store::{TrendQuery, TrendRow};

use crate::cli::ResultsTrendArgs;
use crate::{Outcome, UsageError};
use warpt_report::terminal as output;
use warpt_run::history;

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
    let latest_regressed =
        history_view::latest_regression(&steps, first.higher_is_better, 0.0).is_some();
    if args.json {
        let json = history_view::trend_json(&rows, &steps, &args.benchmark, &args.metric);
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        let mut t = output::table(&["run", "started", "value", "step"]);
        for row in history_view::trend_rows(&rows, &steps) {
            t.add_row(row.to_vec());
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
