//! The cross-hardware answers of `warpt report --by machine`: for every
//! workload (a benchmark's metric at one set of tags) each machine's
//! figure with its 95% CI; which machine is best by throughput, by
//! throughput per watt where power was measured and by throughput per unit
//! of cost where `machines.toml` gives a price, with the margin to the
//! runner-up and whether that margin is significant; and scaling lines
//! where a numeric parameter was swept.
//!
//! A machine's figure is the median of its runs' figures. Its CI is the
//! run's own CI of the median when it ran once, the order-statistic interval
//! of the median over its runs when it ran ten times or more, else a
//! percentile bootstrap of that median. The winner's margin is tested with the
//! strongest evidence both machines have: Welch's t test on their runs'
//! figures when each ran at least twice (run-to-run variation included),
//! else a Mann-Whitney test on the two runs' raw samples (within-run noise
//! only), else whether the two CIs overlap.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use warpt_model::CrossRow;
use warpt_model::tag_label;

use warpt_stats::{bootstrap_paired_ci, mann_whitney, median, welch_t};

/// Looks up the raw samples of metric rows by id (absent: none stored).
pub type SampleSource<'a> = &'a mut dyn FnMut(&[i64]) -> HashMap<i64, Vec<f64>>;

/// The significance level of the margin tests.
pub const ALPHA: f64 = 0.05;

/// A machine in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineInfo {
    /// Host name.
    pub hostname: String,
    /// Fingerprint.
    pub fingerprint: String,
    /// Hardware class.
    pub class: Option<String>,
    /// Price per hour from `machines.toml`.
    pub cost_per_hour: Option<f64>,
    /// Runs selected.
    pub runs: usize,
}

/// One machine's figure for one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Host name.
    pub hostname: String,
    /// Median over its runs.
    pub value: f64,
    /// 95% CI of that median.
    pub ci95: Option<(f64, f64)>,
    /// Runs behind it.
    pub runs: usize,
    /// Figure per watt of mean package power (throughput metrics, where
    /// power was measured).
    pub per_watt: Option<f64>,
    /// Figure per unit of cost per hour (throughput metrics, where
    /// `machines.toml` prices the machine).
    pub per_cost: Option<f64>,
    /// Each run's figure.
    #[serde(skip)]
    pub run_values: Vec<f64>,
    /// Each run's figure per watt.
    #[serde(skip)]
    pub run_per_watt: Vec<f64>,
    /// The metric rows of its runs (for their samples).
    #[serde(skip)]
    pub metric_ids: Vec<i64>,
    /// Each run's mean power, in the order of `metric_ids` (NaN: none).
    #[serde(skip)]
    pub run_power: Vec<f64>,
}

/// A workload: one metric of one benchmark at one set of tags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Suite.
    pub suite: String,
    /// Benchmark.
    pub benchmark: String,
    /// Metric.
    pub metric: String,
    /// Tags.
    pub tags: BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// Each machine that ran it, best first.
    pub figures: Vec<Figure>,
}

impl Workload {
    /// `suite/benchmark metric tags`.
    pub fn label(&self) -> String {
        let tags = tag_label(&self.tags);
        if tags.is_empty() {
            format!("{}/{} {}", self.suite, self.benchmark, self.metric)
        } else {
            format!("{}/{} {} {tags}", self.suite, self.benchmark, self.metric)
        }
    }
}

/// What a pick ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    /// The figure itself.
    Throughput,
    /// Figure per watt.
    PerWatt,
    /// Figure per cost per hour.
    PerCost,
}

impl Criterion {
    /// Printed name.
    pub fn as_str(self) -> &'static str {
        match self {
            Criterion::Throughput => "throughput",
            Criterion::PerWatt => "per watt",
            Criterion::PerCost => "per cost",
        }
    }
}

/// The best machine for a workload by one criterion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pick {
    /// What was ranked.
    pub criterion: Criterion,
    /// The best machine.
    pub winner: String,
    /// Its figure by this criterion.
    pub value: f64,
    /// The second best, if another machine qualified.
    pub runner_up: Option<String>,
    /// How much better the winner is, as a fraction (0.08 = 8% better).
    pub margin: Option<f64>,
    /// The test's p-value, where one applied.
    pub p_value: Option<f64>,
    /// The evidence: `runs` (Welch on run figures), `samples`
    /// (Mann-Whitney on raw samples), `ci` (CI overlap) or `none`.
    pub basis: &'static str,
    /// Whether the margin is significant at [`ALPHA`] (or the CIs do not
    /// overlap).
    pub significant: bool,
}

/// A workload's picks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The workload's label.
    pub workload: String,
    /// Unit of the figure.
    pub unit: String,
    /// By throughput, then per watt and per cost where they apply.
    pub picks: Vec<Pick>,
}

/// A metric against a swept numeric tag, one line per machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scaling {
    /// `suite/benchmark metric`.
    pub title: String,
    /// The swept tag.
    pub axis: String,
    /// The other tags, fixed along the lines.
    pub fixed: String,
    /// Unit.
    pub unit: String,
    /// Per machine: (tag value, figure), in tag order.
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// The whole analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineReport {
    /// The machines, by host name.
    pub machines: Vec<MachineInfo>,
    /// Every workload.
    pub workloads: Vec<Workload>,
    /// Picks for workloads that two or more machines ran.
    pub recommendations: Vec<Recommendation>,
    /// Scaling lines.
    pub scaling: Vec<Scaling>,
}

/// The CI of a machine's figure: its one run's CI; with ten runs or more
/// the distribution-free interval of the median between order statistics
/// (the binomial's normal approximation); else a bootstrap over its runs.
fn figure_ci(values: &[f64], run_cis: &[Option<(f64, f64)>]) -> Option<(f64, f64)> {
    match values {
        [] => None,
        [_] => run_cis.first().copied().flatten(),
        _ if values.len() >= 10 => {
            let mut sorted = values.to_vec();
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len() as f64;
            let half = 1.96 * n.sqrt() / 2.0;
            // 1-based ranks, clamped to the sample.
            let lo = ((n / 2.0 - half).floor() as usize).clamp(1, sorted.len());
            let hi = ((n / 2.0 + 1.0 + half).ceil() as usize).clamp(1, sorted.len());
            Some((sorted[lo - 1], sorted[hi - 1]))
        }
        _ if values.iter().all(|v| *v > 0.0) => {
            let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
            bootstrap_paired_ci(&logs, 2000, 0x5eed)
        }
        _ => Some((
            values.iter().copied().fold(f64::INFINITY, f64::min),
            values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )),
    }
}

/// Builds the report from `rows`; `class_of` and `cost_of` give each
/// fingerprint's hardware class and each host's price per hour.
pub fn analyse(
    rows: &[CrossRow],
    class_of: &HashMap<String, String>,
    cost_of: &HashMap<String, f64>,
) -> MachineReport {
    type Key = (String, String, String, String);
    let mut groups: BTreeMap<Key, Vec<&CrossRow>> = BTreeMap::new();
    let mut runs: BTreeMap<(&str, &str), std::collections::BTreeSet<&str>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.value.is_finite()) {
        groups
            .entry((
                r.suite.clone(),
                r.benchmark.clone(),
                r.metric.clone(),
                tag_label(&r.tags),
            ))
            .or_default()
            .push(r);
        runs.entry((&r.hostname, &r.fingerprint))
            .or_default()
            .insert(&r.run_id);
    }
    let machines = runs
        .iter()
        .map(|((host, fp), ids)| MachineInfo {
            hostname: host.to_string(),
            fingerprint: fp.to_string(),
            class: class_of.get(*fp).cloned(),
            cost_per_hour: cost_of.get(*host).copied(),
            runs: ids.len(),
        })
        .collect();
    let mut workloads = Vec::new();
    for ((suite, benchmark, metric, _), members) in groups {
        let first = members[0];
        let hib = first.higher_is_better;
        let mut by_host: BTreeMap<&str, Vec<&CrossRow>> = BTreeMap::new();
        for r in &members {
            by_host.entry(&r.hostname).or_default().push(r);
        }
        let mut figures: Vec<Figure> = by_host
            .into_iter()
            .map(|(host, rs)| {
                let values: Vec<f64> = rs.iter().map(|r| r.value).collect();
                let cis: Vec<Option<(f64, f64)>> = rs.iter().map(|r| r.ci95).collect();
                let run_per_watt: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| r.mean_power_w.filter(|w| *w > 0.0).map(|w| r.value / w))
                    .collect();
                let value = median(&values);
                let cost = cost_of.get(host).copied().filter(|c| *c > 0.0);
                Figure {
                    hostname: host.to_string(),
                    value,
                    ci95: figure_ci(&values, &cis),
                    runs: values.len(),
                    per_watt: (hib && !run_per_watt.is_empty()).then(|| median(&run_per_watt)),
                    per_cost: cost.filter(|_| hib).map(|c| value / c),
                    run_values: values,
                    run_per_watt,
                    metric_ids: rs.iter().map(|r| r.metric_id).collect(),
                    run_power: rs
                        .iter()
                        .map(|r| r.mean_power_w.filter(|w| *w > 0.0).unwrap_or(f64::NAN))
                        .collect(),
                }
            })
            .collect();
        figures.sort_by(|a, b| {
            if hib {
                b.value.total_cmp(&a.value)
            } else {
                a.value.total_cmp(&b.value)
            }
        });
        workloads.push(Workload {
            suite,
            benchmark,
            metric,
            tags: first.tags.clone(),
            unit: first.unit.clone(),
            higher_is_better: hib,
            figures,
        });
    }
    // Tags in natural order: size_kib=16 before size_kib=128.
    workloads.sort_by(|a, b| {
        (&a.suite, &a.benchmark, &a.metric)
            .cmp(&(&b.suite, &b.benchmark, &b.metric))
            .then_with(|| natural(&a.tags, &b.tags))
    });
    let scaling = scaling(&workloads);
    MachineReport {
        machines,
        workloads,
        recommendations: Vec::new(),
        scaling,
    }
}

/// Tag sets compared key by key, numbers as numbers.
fn natural(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> std::cmp::Ordering {
    for ((ka, va), (kb, vb)) in a.iter().zip(b) {
        let by_key = ka.cmp(kb);
        if by_key.is_ne() {
            return by_key;
        }
        let by_value = match (va.parse::<f64>(), vb.parse::<f64>()) {
            (Ok(x), Ok(y)) => x.total_cmp(&y),
            _ => va.cmp(vb),
        };
        if by_value.is_ne() {
            return by_value;
        }
    }
    a.len().cmp(&b.len())
}

/// The picks of every workload two or more machines ran; `samples` gives
/// the raw samples of metric rows (asked only for winners and runners-up
/// that ran once).
pub fn recommend(report: &mut MachineReport, samples: SampleSource<'_>) {
    let cost_of: HashMap<&str, f64> = report
        .machines
        .iter()
        .filter_map(|m| m.cost_per_hour.map(|c| (m.hostname.as_str(), c)))
        .collect();
    let mut out = Vec::new();
    for w in &report.workloads {
        if w.figures.len() < 2 {
            continue;
        }
        let mut picks = Vec::new();
        let by = |f: &Figure, c: Criterion| match c {
            Criterion::Throughput => Some(f.value),
            Criterion::PerWatt => f.per_watt,
            Criterion::PerCost => f.per_cost,
        };
        for criterion in [
            Criterion::Throughput,
            Criterion::PerWatt,
            Criterion::PerCost,
        ] {
            let mut ranked: Vec<(&Figure, f64)> = w
                .figures
                .iter()
                .filter_map(|f| by(f, criterion).map(|v| (f, v)))
                .collect();
            if ranked.len() < 2 {
                continue;
            }
            let hib = w.higher_is_better || criterion != Criterion::Throughput;
            ranked.sort_by(|a, b| {
                if hib {
                    b.1.total_cmp(&a.1)
                } else {
                    a.1.total_cmp(&b.1)
                }
            });
            let (win, wv) = ranked[0];
            let (run, rv) = ranked[1];
            // Each criterion scales a run's figure by a per-run (power) or
            // per-machine (price) factor; the test runs on scaled figures.
            let scale = |f: &Figure| -> Vec<f64> {
                match criterion {
                    Criterion::Throughput => vec![1.0; f.run_values.len()],
                    Criterion::PerWatt => f.run_power.iter().map(|p| 1.0 / p).collect(),
                    Criterion::PerCost => {
                        let c = cost_of
                            .get(f.hostname.as_str())
                            .copied()
                            .unwrap_or(f64::NAN);
                        vec![1.0 / c; f.run_values.len()]
                    }
                }
            };
            let (p, basis, significant) = margin_test(win, run, &scale(win), &scale(run), samples);
            let margin = if hib { wv / rv - 1.0 } else { rv / wv - 1.0 };
            picks.push(Pick {
                criterion,
                winner: win.hostname.clone(),
                value: wv,
                runner_up: Some(run.hostname.clone()),
                margin: margin.is_finite().then_some(margin),
                p_value: p,
                basis,
                significant,
            });
        }
        out.push(Recommendation {
            workload: w.label(),
            unit: w.unit.clone(),
            picks,
        });
    }
    report.recommendations = out;
}

/// `test` of `x` against `y` where each has at least `min` values and the
/// p-value is a number: (p, `basis`, significant).
fn tested(
    x: &[f64],
    y: &[f64],
    min: usize,
    test: fn(&[f64], &[f64]) -> f64,
    basis: &'static str,
) -> Option<(Option<f64>, &'static str, bool)> {
    if x.len() < min || y.len() < min {
        return None;
    }
    let p = test(x, y);
    p.is_finite().then_some((Some(p), basis, p < ALPHA))
}

/// Tests the winner against the runner-up on per-run figures scaled by
/// `sa` and `sb`: (p, basis, significant).
fn margin_test(
    a: &Figure,
    b: &Figure,
    sa: &[f64],
    sb: &[f64],
    samples: SampleSource<'_>,
) -> (Option<f64>, &'static str, bool) {
    let scaled = |f: &Figure, s: &[f64]| -> Vec<f64> {
        f.run_values
            .iter()
            .zip(s)
            .map(|(v, k)| v * k)
            .filter(|v| v.is_finite())
            .collect()
    };
    if let Some(verdict) = tested(&scaled(a, sa), &scaled(b, sb), 2, welch_t, "runs") {
        return verdict;
    }
    // One run on a side: the runs' raw samples, each scaled like its run.
    let ids: Vec<i64> = a.metric_ids.iter().chain(&b.metric_ids).copied().collect();
    let got = samples(&ids);
    let pooled = |f: &Figure, s: &[f64]| -> Vec<f64> {
        f.metric_ids
            .iter()
            .zip(s)
            .flat_map(|(id, k)| {
                got.get(id)
                    .map(|v| v.iter().map(|x| x * k).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .filter(|v| v.is_finite())
            .collect()
    };
    let (xa, xb) = (pooled(a, sa), pooled(b, sb));
    if let Some(verdict) = tested(&xa, &xb, 3, mann_whitney, "samples") {
        return verdict;
    }
    match (a.ci95, b.ci95, sa.first(), sb.first()) {
        (Some(ca), Some(cb), Some(ka), Some(kb)) if ka.is_finite() && kb.is_finite() => {
            let (la, ha) = (ca.0 * ka, ca.1 * ka);
            let (lb, hb) = (cb.0 * kb, cb.1 * kb);
            (None, "ci", ha < lb || hb < la)
        }
        _ => (None, "none", false),
    }
}

/// Scaling lines: within each (benchmark, metric), a tag whose values are
/// all numbers and take three or more values is an axis; the other tags
/// fixed, each machine's figures along it form a line.
fn scaling(workloads: &[Workload]) -> Vec<Scaling> {
    let mut by_metric: BTreeMap<(String, String, String), Vec<&Workload>> = BTreeMap::new();
    for w in workloads {
        by_metric
            .entry((w.suite.clone(), w.benchmark.clone(), w.metric.clone()))
            .or_default()
            .push(w);
    }
    let mut out = Vec::new();
    for ((suite, benchmark, metric), ws) in by_metric {
        let keys: std::collections::BTreeSet<&String> =
            ws.iter().flat_map(|w| w.tags.keys()).collect();
        for axis in keys {
            let numeric = ws
                .iter()
                .all(|w| w.tags.get(axis).is_some_and(|v| v.parse::<f64>().is_ok()));
            let distinct: std::collections::BTreeSet<&String> =
                ws.iter().filter_map(|w| w.tags.get(axis)).collect();
            if !numeric || distinct.len() < 3 {
                continue;
            }
            // The other tags pick the line family.
            let mut families: BTreeMap<String, Vec<&Workload>> = BTreeMap::new();
            for w in &ws {
                let mut rest = w.tags.clone();
                rest.remove(axis);
                families.entry(tag_label(&rest)).or_default().push(w);
            }
            for (fixed, fam) in families {
                let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
                for w in fam {
                    let x: f64 = w.tags[axis].parse().unwrap_or(f64::NAN);
                    for f in &w.figures {
                        lines
                            .entry(f.hostname.clone())
                            .or_default()
                            .push((x, f.value));
                    }
                }
                let lines: Vec<(String, Vec<(f64, f64)>)> = lines
                    .into_iter()
                    .map(|(h, mut pts)| {
                        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                        (h, pts)
                    })
                    .filter(|(_, pts)| pts.len() >= 2)
                    .collect();
                if !lines.is_empty() {
                    out.push(Scaling {
                        title: format!("{suite}/{benchmark} {metric}"),
                        axis: axis.clone(),
                        fixed,
                        unit: ws[0].unit.clone(),
                        lines,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "machines_tests.rs"]
mod tests;
