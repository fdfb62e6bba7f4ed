//! Sick-node detection: machines of one hardware class compared with each
//! other per metric by a robust z-score, so one slow node stands out of
//! its peers without the peers' own outliers moving the yardstick.
//!
//! For each metric (benchmark, metric, tags) and hardware class, each
//! machine's figure is the median of its runs. With `M` the median of all
//! the class's figures and `MAD` their median absolute deviation, a
//! machine's z is `(x − M) / (1.4826 MAD)` (the modified z-score of
//! Iglewicz and Hoaglin; `1.2533 × mean absolute deviation` stands in when
//! over half the figures are equal and the MAD is 0). It is oriented so
//! that negative is worse (slower, or higher latency). A machine is flagged
//! when its z is at or below `−z` and it is at least `min_deviation` worse
//! than the median of its peers: a class so uniform that a 0.5% difference
//! has a large z is not a sick node.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use warpt_model::CrossRow;
use warpt_model::tag_label;

use warpt_stats::median;

/// How strict the scan is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutlierOptions {
    /// |z| at or beyond which a worse machine is flagged (3.5, the usual
    /// cut for modified z-scores).
    pub z: f64,
    /// How much worse than its peers' median a flagged machine must be,
    /// as a fraction (0.05 = 5%).
    pub min_deviation: f64,
    /// Fewest peers (other machines of the class) a comparison needs.
    pub min_peers: usize,
}

impl Default for OutlierOptions {
    fn default() -> Self {
        OutlierOptions {
            z: 3.5,
            min_deviation: 0.05,
            min_peers: 3,
        }
    }
}

/// One machine worse than its peers on one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outlier {
    /// Host name.
    pub hostname: String,
    /// Fingerprint.
    pub fingerprint: String,
    /// The hardware class it was compared within.
    pub class: String,
    /// `suite/benchmark`.
    pub benchmark: String,
    /// Metric.
    pub metric: String,
    /// Its tags, `k=v,...`.
    pub tags: String,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// The machine's figure (median of its runs).
    pub value: f64,
    /// Its runs.
    pub runs: usize,
    /// How many peers it was compared with.
    pub peers: usize,
    /// The peers' median.
    pub peers_median: f64,
    /// How much worse than that, as a fraction (0.12 = 12% slower).
    pub worse_by: f64,
    /// The robust z-score, negative = worse.
    pub z: f64,
}

impl Outlier {
    /// "node X: 12.0% slower on micro/mem_bandwidth bandwidth kernel=triad
    /// than its 15 peers (z = -6.1)".
    pub fn sentence(&self) -> String {
        let what = if self.tags.is_empty() {
            format!("{} {}", self.benchmark, self.metric)
        } else {
            format!("{} {} {}", self.benchmark, self.metric, self.tags)
        };
        format!(
            "{}: {:.1}% slower on {what} than its {} peers (z = {:.1}; {} vs {} {})",
            self.hostname,
            self.worse_by * 100.0,
            self.peers,
            self.z,
            crate::render::num(self.value),
            crate::render::num(self.peers_median),
            self.unit
        )
    }
}

/// What a scan looked at and found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlierScan {
    /// Each hardware class and its machines' host names.
    pub classes: BTreeMap<String, Vec<String>>,
    /// Metric comparisons made (metric × class with enough peers).
    pub comparisons: usize,
    /// Classes too small to compare (fewer than `min_peers + 1` machines).
    pub too_small: Vec<String>,
    /// The flagged machines, worst z first.
    pub outliers: Vec<Outlier>,
}

/// The robust scale of `values` around their median `m`: 1.4826 MAD, or
/// 1.2533 × the mean absolute deviation when the MAD is 0.
fn robust_scale(values: &[f64], m: f64) -> f64 {
    let dev: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let mad = median(&dev);
    if mad > 0.0 {
        1.4826 * mad
    } else {
        1.2533 * dev.iter().sum::<f64>() / dev.len() as f64
    }
}

/// Scans `rows`; `class_of` gives each fingerprint's hardware class
/// (machines without one are left out).
pub fn scan(
    rows: &[CrossRow],
    class_of: &HashMap<String, String>,
    opts: &OutlierOptions,
) -> OutlierScan {
    // (class, benchmark, metric, tags) → (unit, higher is better, values
    // by fingerprint)
    type Key = (String, String, String, String);
    type Group<'a> = (String, bool, BTreeMap<&'a str, Vec<f64>>);
    let mut groups: BTreeMap<Key, Group<'_>> = BTreeMap::new();
    let mut hosts: HashMap<&str, &str> = HashMap::new();
    let mut classes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in rows {
        let Some(class) = class_of.get(&r.fingerprint) else {
            continue;
        };
        if !r.value.is_finite() {
            continue;
        }
        if hosts.insert(&r.fingerprint, &r.hostname).is_none() {
            classes
                .entry(class.clone())
                .or_default()
                .push(r.hostname.clone());
        }
        let key = (
            class.clone(),
            format!("{}/{}", r.suite, r.benchmark),
            r.metric.clone(),
            tag_label(&r.tags),
        );
        groups
            .entry(key)
            .or_insert_with(|| (r.unit.clone(), r.higher_is_better, BTreeMap::new()))
            .2
            .entry(&r.fingerprint)
            .or_default()
            .push(r.value);
    }
    for hosts in classes.values_mut() {
        hosts.sort();
    }
    let too_small: Vec<String> = classes
        .iter()
        .filter(|(_, h)| h.len() < opts.min_peers + 1)
        .map(|(c, _)| c.clone())
        .collect();
    let mut comparisons = 0;
    let mut outliers = Vec::new();
    for ((class, benchmark, metric, tags), (unit, hib, by_machine)) in groups {
        if by_machine.len() < opts.min_peers + 1 {
            continue;
        }
        comparisons += 1;
        let figures: Vec<(&str, f64, usize)> = by_machine
            .iter()
            .map(|(fp, v)| (*fp, median(v), v.len()))
            .collect();
        let all: Vec<f64> = figures.iter().map(|f| f.1).collect();
        let m = median(&all);
        let scale = robust_scale(&all, m);
        if scale.is_nan() || scale <= 0.0 {
            continue;
        }
        let sign = if hib { 1.0 } else { -1.0 };
        for (i, (fp, x, runs)) in figures.iter().enumerate() {
            let z = sign * (x - m) / scale;
            let peers: Vec<f64> = all
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, v)| *v)
                .collect();
            let pm = median(&peers);
            if pm == 0.0 {
                continue;
            }
            let worse_by = -sign * (x - pm) / pm;
            if z <= -opts.z && worse_by >= opts.min_deviation {
                outliers.push(Outlier {
                    hostname: hosts.get(fp).copied().unwrap_or(fp).to_string(),
                    fingerprint: fp.to_string(),
                    class: class.clone(),
                    benchmark: benchmark.clone(),
                    metric: metric.clone(),
                    tags: tags.clone(),
                    unit: unit.clone(),
                    higher_is_better: hib,
                    value: *x,
                    runs: *runs,
                    peers: peers.len(),
                    peers_median: pm,
                    worse_by,
                    z,
                });
            }
        }
    }
    outliers.sort_by(|a, b| a.z.total_cmp(&b.z));
    OutlierScan {
        classes,
        comparisons,
        too_small,
        outliers,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row(host: &str, metric: &str, hib: bool, value: f64) -> CrossRow {
        CrossRow {
            run_id: format!("run-{host}"),
            fingerprint: format!("fp-{host}"),
            hostname: host.into(),
            suite: "micro".into(),
            benchmark: "mem_bandwidth".into(),
            metric: metric.into(),
            tags: [("kernel".to_string(), "triad".to_string())].into(),
            unit: "GB/s".into(),
            higher_is_better: hib,
            value,
            ci95: None,
            n: None,
            mean_power_w: None,
            metric_id: 0,
        }
    }

    fn fleet(values: &[f64], hib: bool) -> (Vec<CrossRow>, HashMap<String, String>) {
        let rows: Vec<CrossRow> = values
            .iter()
            .enumerate()
            .map(|(i, v)| row(&format!("n{i:02}"), "bandwidth", hib, *v))
            .collect();
        let classes = rows
            .iter()
            .map(|r| (r.fingerprint.clone(), "EPYC x64".to_string()))
            .collect();
        (rows, classes)
    }

    #[test]
    fn a_slow_node_is_flagged_and_a_healthy_fleet_is_not() {
        let healthy = [100.0, 101.5, 99.0, 100.4, 98.8, 100.9, 99.6, 101.1];
        let (rows, classes) = fleet(&healthy, true);
        let s = scan(&rows, &classes, &OutlierOptions::default());
        assert_eq!(s.comparisons, 1);
        assert!(s.outliers.is_empty(), "{:?}", s.outliers);

        let mut sick = healthy.to_vec();
        sick[3] = 88.0;
        let (rows, classes) = fleet(&sick, true);
        let s = scan(&rows, &classes, &OutlierOptions::default());
        assert_eq!(s.outliers.len(), 1);
        let o = &s.outliers[0];
        assert_eq!(o.hostname, "n03");
        assert_eq!(o.peers, 7);
        assert!((o.worse_by - 0.12).abs() < 0.01, "{o:?}");
        assert!(o.z < -3.5);
        assert!(o.sentence().starts_with("n03: 12."), "{}", o.sentence());
        assert!(o.sentence().contains("than its 7 peers"));
    }

    #[test]
    fn latency_is_worse_when_higher_and_fast_nodes_are_never_flagged() {
        let (rows, classes) = fleet(&[80.0, 81.0, 79.5, 80.5, 95.0, 60.0], false);
        let s = scan(&rows, &classes, &OutlierOptions::default());
        let hosts: Vec<&str> = s.outliers.iter().map(|o| o.hostname.as_str()).collect();
        assert_eq!(hosts, ["n04"], "only the high-latency node");
    }

    #[test]
    fn a_uniform_class_does_not_flag_a_tiny_difference_and_small_classes_are_named() {
        let (rows, classes) = fleet(&[100.0, 100.0, 100.0, 100.0, 99.0], true);
        assert!(
            scan(&rows, &classes, &OutlierOptions::default())
                .outliers
                .is_empty()
        );
        let (rows, classes) = fleet(&[100.0, 50.0, 100.0], true);
        let s = scan(&rows, &classes, &OutlierOptions::default());
        assert_eq!(s.comparisons, 0);
        assert_eq!(s.too_small, ["EPYC x64"]);
    }
}
