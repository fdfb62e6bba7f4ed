//! A metric's history as `results trend` and `ci record` present it: the
//! regression rule (once, for both), the JSON of `results trend --json`,
//! the table's step column and `ci record`'s alert.

use std::collections::BTreeMap;

use serde::Serialize;
use warpt_model::{BenchmarkId, BenchmarkMetric, TrendRow};

use crate::render::num;
use crate::trend::{METHOD, Step};

/// Whether `step` goes the bad way for a metric whose larger values are
/// better (`higher_is_better`) or worse.
pub fn regressed(step: &Step, higher_is_better: bool) -> bool {
    (step.after > step.before) != higher_is_better
}

/// The step the latest value sits after, when it went the bad way by at
/// least `threshold_pct` percent: the one alert rule.
pub fn latest_regression(
    steps: &[Step],
    higher_is_better: bool,
    threshold_pct: f64,
) -> Option<&Step> {
    steps
        .last()
        .filter(|s| regressed(s, higher_is_better) && s.change_pct.abs() >= threshold_pct)
}

/// One run's value.
#[derive(Serialize)]
struct Point<'a> {
    run_id: &'a str,
    start_time: &'a str,
    value: f64,
    /// The 95% CI of the median, where the value came from samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    ci95_low: Option<f64>,
    /// Its upper bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    ci95_high: Option<f64>,
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
pub struct TrendJson<'a> {
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

fn direction(s: &Step, higher_is_better: bool) -> &'static str {
    if regressed(s, higher_is_better) {
        "regressed"
    } else {
        "improved"
    }
}

/// The JSON of one series (`rows`, one machine and tag set, oldest first,
/// not empty) and its change points.
pub fn trend_json<'a>(
    rows: &'a [TrendRow],
    steps: &[Step],
    benchmark: &'a str,
    metric: &'a str,
) -> Option<TrendJson<'a>> {
    let first = rows.first()?;
    let hib = first.higher_is_better;
    Some(TrendJson {
        suite: &first.suite,
        benchmark,
        metric,
        tags: &first.tags,
        machine: &first.hostname,
        unit: &first.unit,
        higher_is_better: hib,
        method: METHOD,
        points: rows
            .iter()
            .map(|r| Point {
                run_id: &r.run_id,
                start_time: &r.start_time,
                value: r.value,
                ci95_low: r.ci95.map(|c| c.0),
                ci95_high: r.ci95.map(|c| c.1),
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
                direction: direction(s, hib),
            })
            .collect(),
        latest_regressed: latest_regression(steps, hib, 0.0).is_some(),
    })
}

/// The table's rows: run, start, value with unit, and the step that run
/// begins, if any.
pub fn trend_rows(rows: &[TrendRow], steps: &[Step]) -> Vec<[String; 4]> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let step = steps
                .iter()
                .find(|s| s.index == i)
                .map_or(String::new(), |s| {
                    format!(
                        "{} {:+.1}% ({} -> {}, confidence {:.3})",
                        direction(s, r.higher_is_better),
                        s.change_pct,
                        num(s.before),
                        num(s.after),
                        s.confidence
                    )
                });
            [
                r.run_id.clone(),
                r.start_time.clone(),
                format!("{} {}", num(r.value), r.unit),
                step,
            ]
        })
        .collect()
}

/// `ci record`'s line for a metric whose history ends after a regression
/// step `s` (`rows` long, the step beginning at run `first_after`).
pub fn alert_line(
    id: &BenchmarkId,
    m: &BenchmarkMetric,
    s: &Step,
    first_after: &str,
    rows: usize,
) -> String {
    format!(
        "- `{}` {} [{}]: {:+.1}% ({} -> {} {}) from run {} on, over {} runs (confidence {:.3})",
        id,
        m.name,
        warpt_model::tag_label(&m.tags),
        s.change_pct,
        num(s.before),
        num(s.after),
        m.unit,
        first_after,
        rows,
        s.confidence
    )
}

/// `ci record`'s alert file: the run, its commit and the alert lines.
pub fn alert_markdown(run_id: &str, commit: &str, alerts: &[String]) -> String {
    format!(
        "### warpt: regression in the benchmark history\n\nThe newest run ({run_id}, commit `{commit}`) sits after a \
         step in the bad direction ({METHOD}):\n\n{}\n",
        alerts.join("\n")
    )
}
