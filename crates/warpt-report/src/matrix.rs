//! The machine × workload matrix and the recommendation table: for each
//! workload (a benchmark's headline metric at one tag combination) the
//! median figure of every machine that ran it, each normalised to the best
//! machine (1 = best, in the metric's own direction), and which machine to
//! pick by speed and, where power was measured, by speed per watt.

use std::collections::BTreeMap;

use serde::Serialize;
use warpt_model::MatrixRow;
use warpt_model::tag_label;

use warpt_stats::median;

/// A machine column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    /// Fingerprint.
    pub fingerprint: String,
    /// Host name.
    pub hostname: String,
}

/// One machine's figure for one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// Median over the machine's runs.
    pub value: f64,
    /// Runs behind the median.
    pub runs: usize,
    /// Relative to the best machine: 1 for the best, smaller is worse
    /// (`value / best` when larger is better, `best / value` otherwise).
    pub score: f64,
    /// Value per watt of mean package power (median over the runs that
    /// measured power), for figures where larger is better.
    pub per_watt: Option<f64>,
}

/// One row: a workload and every machine's cell (`None`: never ran it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// `suite/benchmark`.
    pub benchmark: String,
    /// Headline metric.
    pub metric: String,
    /// Its tags as `k=v,...` (empty when none).
    pub tags: String,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// One per machine column.
    pub cells: Vec<Option<Cell>>,
    /// Column of the best machine.
    pub best: usize,
    /// Column of the best machine per watt, when any measured power.
    pub best_per_watt: Option<usize>,
}

/// The matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matrix {
    /// Columns, by host name.
    pub machines: Vec<Machine>,
    /// Rows, by benchmark then tags.
    pub workloads: Vec<Workload>,
}

/// A workload: `suite/benchmark`, metric, tag label.
type Key = (String, String, String);
/// Per machine fingerprint: the values and the values per watt.
type ByMachine<'a> = BTreeMap<&'a str, (Vec<f64>, Vec<f64>)>;

/// Builds the matrix from the store's rows.
pub fn build(rows: &[MatrixRow]) -> Matrix {
    let mut machines: BTreeMap<(&str, &str), ()> = BTreeMap::new();
    // workload → machine → (values, values per watt)
    let mut groups: BTreeMap<Key, (String, bool, ByMachine<'_>)> = BTreeMap::new();
    for r in rows {
        machines.insert((&r.hostname, &r.fingerprint), ());
        let key = (
            format!("{}/{}", r.suite, r.benchmark),
            r.metric.clone(),
            tag_label(&r.tags),
        );
        let entry = groups
            .entry(key)
            .or_insert_with(|| (r.unit.clone(), r.higher_is_better, BTreeMap::new()));
        let (values, per_watt) = entry.2.entry(&r.fingerprint).or_default();
        values.push(r.value);
        if let Some(w) = r.mean_power_w.filter(|w| *w > 0.0)
            && r.higher_is_better
        {
            per_watt.push(r.value / w);
        }
    }
    let machines: Vec<Machine> = machines
        .into_keys()
        .map(|(h, f)| Machine {
            fingerprint: f.to_string(),
            hostname: h.to_string(),
        })
        .collect();
    let workloads = groups
        .into_iter()
        .filter_map(|((benchmark, metric, tags), (unit, hib, by_machine))| {
            let medians: Vec<Option<(f64, usize, Option<f64>)>> = machines
                .iter()
                .map(|m| {
                    by_machine
                        .get(m.fingerprint.as_str())
                        .map(|(v, w)| (median(v), v.len(), (!w.is_empty()).then(|| median(w))))
                })
                .collect();
            let better = |a: f64, b: f64| if hib { a > b } else { a < b };
            let best = medians
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.map(|c| (i, c.0)))
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
                .reduce(|a, b| if better(b.1, a.1) { b } else { a })?;
            let best_per_watt = medians
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.and_then(|c| c.2).map(|w| (i, w)))
                .reduce(|a, b| if b.1 > a.1 { b } else { a })
                .map(|(i, _)| i);
            let cells = medians
                .iter()
                .map(|c| {
                    c.map(|(value, runs, per_watt)| Cell {
                        value,
                        runs,
                        score: if hib { value / best.1 } else { best.1 / value },
                        per_watt,
                    })
                })
                .collect();
            Some(Workload {
                benchmark,
                metric,
                tags,
                unit,
                higher_is_better: hib,
                cells,
                best: best.0,
                best_per_watt,
            })
        })
        .collect();
    Matrix {
        machines,
        workloads,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row(host: &str, bench: &str, hib: bool, value: f64, power: Option<f64>) -> MatrixRow {
        MatrixRow {
            suite: "micro".into(),
            benchmark: bench.into(),
            metric: "m".into(),
            tags: BTreeMap::new(),
            unit: "u".into(),
            higher_is_better: hib,
            value,
            fingerprint: format!("fp-{host}"),
            hostname: host.into(),
            mean_power_w: power,
        }
    }

    #[test]
    fn cells_are_normalised_to_the_best_machine_in_the_metrics_direction() {
        let rows = [
            row("a", "fast", true, 100.0, Some(50.0)),
            row("a", "fast", true, 120.0, Some(50.0)),
            row("b", "fast", true, 200.0, Some(200.0)),
            row("a", "lat", false, 2.0, None),
            row("b", "lat", false, 4.0, None),
        ];
        let m = build(&rows);
        assert_eq!(m.machines.len(), 2);
        let fast = &m.workloads[0];
        assert_eq!(fast.benchmark, "micro/fast");
        assert_eq!(fast.best, 1);
        let a = fast.cells[0].as_ref().unwrap();
        assert_eq!((a.value, a.runs, a.score), (110.0, 2, 0.55));
        // Per watt, a (2.2/W) beats b (1/W).
        assert_eq!(fast.best_per_watt, Some(0));
        let lat = &m.workloads[1];
        assert_eq!(lat.best, 0);
        assert_eq!(lat.cells[1].as_ref().unwrap().score, 0.5);
        assert_eq!(lat.best_per_watt, None);
    }
}
