//! `warpt benchmark compare`: every metric of two runs matched and judged.
//!
//! Metrics match by (suite, benchmark, metric name, tags). With at least
//! four raw samples on each side a metric gets a two-sided Mann-Whitney U
//! test and a bootstrap 95% CI of the ratio of medians; the p-values of all
//! tested metrics are adjusted with Benjamini-Hochberg (the false discovery
//! rate is controlled at `alpha`), and a metric changed only when its
//! q-value is below `alpha`, the ratio's CI excludes 1, and the change is
//! outside the `threshold` band. Without samples, non-overlapping median
//! CIs decide instead; without either, nothing is claimed.

use std::collections::BTreeMap;

use serde::Serialize;
use warpt_model::{BenchmarkMetric, BenchmarkSuiteRun};

use crate::stats;

/// Fewest raw samples per side for the rank test.
pub const MIN_SAMPLES: usize = 4;

/// How a comparison judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Changes smaller than this many percent are `~` whatever the test says.
    pub threshold_pct: f64,
    /// False discovery rate.
    pub alpha: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threshold_pct: 2.0,
            alpha: 0.05,
        }
    }
}

/// The judgement on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Better, significantly and beyond the threshold.
    #[serde(rename = "improved")]
    Improved,
    /// Worse, significantly and beyond the threshold.
    #[serde(rename = "regressed")]
    Regressed,
    /// No significant change, or a change inside the threshold.
    #[serde(rename = "~")]
    Unchanged,
}

impl Verdict {
    /// `improved`, `regressed` or `~`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Unchanged => "~",
        }
    }
}

/// One side's figure for a metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Median (the metric's value).
    pub median: f64,
    /// 95% CI of the median, when known.
    pub ci95: Option<(f64, f64)>,
    /// Samples behind it.
    pub n: usize,
}

/// One matched metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricComparison {
    /// Suite.
    pub suite: String,
    /// Benchmark.
    pub benchmark: String,
    /// Metric name.
    pub metric: String,
    /// Metric tags.
    pub tags: BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// The baseline.
    pub base: Figure,
    /// The run compared with it.
    pub current: Figure,
    /// (current - base) / base, percent.
    pub change_pct: f64,
    /// How many times faster current is: base / current for times,
    /// current / base for rates.
    pub speedup: f64,
    /// Mann-Whitney U two-sided p-value.
    pub p_value: Option<f64>,
    /// Benjamini-Hochberg adjusted p-value.
    pub q_value: Option<f64>,
    /// Bootstrap 95% CI of median(current) / median(base).
    pub ratio_ci95: Option<(f64, f64)>,
    /// `mann-whitney`, `ci-overlap` or `none`.
    pub method: String,
    /// The judgement.
    pub verdict: Verdict,
}

impl MetricComparison {
    /// `suite/benchmark metric{tags}`.
    pub fn label(&self) -> String {
        format!(
            "{}/{} {} {}",
            self.suite,
            self.benchmark,
            self.metric,
            warpt_model::tag_label(&self.tags)
        )
        .trim_end()
        .to_string()
    }
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// What the baseline is (file or run id).
    pub base: String,
    /// What is compared with it.
    pub current: String,
    /// The threshold, percent.
    pub threshold_pct: f64,
    /// The false discovery rate.
    pub alpha: f64,
    /// Every matched metric.
    pub metrics: Vec<MetricComparison>,
    /// Metrics only in the baseline.
    pub only_base: Vec<String>,
    /// Metrics only in the current run.
    pub only_current: Vec<String>,
    /// Differences between the two runs' machines and settings.
    pub warnings: Vec<String>,
}

impl Comparison {
    /// Whether any metric regressed.
    pub fn regressed(&self) -> bool {
        self.metrics.iter().any(|m| m.verdict == Verdict::Regressed)
    }

    /// How many metrics had the rank test (the BH family size).
    pub fn tested(&self) -> usize {
        self.metrics.iter().filter(|m| m.p_value.is_some()).count()
    }
}

type Key = (String, String, String, BTreeMap<String, String>);

fn metrics_of(run: &BenchmarkSuiteRun) -> Vec<(Key, &BenchmarkMetric)> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for r in &run.benchmarks {
        for m in &r.metrics {
            let key = (
                r.spec.id.suite.clone(),
                r.spec.id.name.clone(),
                m.name.clone(),
                m.tags.clone(),
            );
            if seen.insert(key.clone()) {
                out.push((key, m));
            }
        }
    }
    out
}

fn label(key: &Key) -> String {
    let tags: Vec<String> = key.3.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}/{} {} {}", key.0, key.1, key.2, tags.join(","))
        .trim_end()
        .to_string()
}

fn figure(m: &BenchmarkMetric) -> Figure {
    Figure {
        median: m.value,
        ci95: m.stats.as_ref().map(|s| (s.ci95_low, s.ci95_high)),
        n: m.stats.as_ref().map_or(0, |s| s.n),
    }
}

/// What differs between the two runs' machines and settings.
pub fn differences(base: &BenchmarkSuiteRun, current: &BenchmarkSuiteRun) -> Vec<String> {
    let mut out = Vec::new();
    let mut diff = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{what}: {a} -> {b}"));
        }
    };
    if let (Some(a), Some(b)) = (&base.system, &current.system) {
        diff("machine fingerprint", a.fingerprint(), b.fingerprint());
        diff("host", a.os.hostname.clone(), b.os.hostname.clone());
        diff("CPU", a.cpu.model.clone(), b.cpu.model.clone());
        diff(
            "logical CPUs",
            a.cpu.logical_cores.to_string(),
            b.cpu.logical_cores.to_string(),
        );
        diff(
            "memory GiB",
            format!("{:.0}", a.memory.total_bytes as f64 / 1073741824.0),
            format!("{:.0}", b.memory.total_bytes as f64 / 1073741824.0),
        );
        diff("OS", a.os.name.clone(), b.os.name.clone());
        diff("kernel", a.os.kernel.clone(), b.os.kernel.clone());
    }
    if let (Some(a), Some(b)) = (&base.manifest, &current.manifest) {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        diff("warpt", a.warpt_version.clone(), b.warpt_version.clone());
        diff("build", a.build_profile.clone(), b.build_profile.clone());
        diff("governor", opt(&a.governor), opt(&b.governor));
        diff("SMT", opt(&a.smt), opt(&b.smt));
        diff("microcode", opt(&a.microcode), opt(&b.microcode));
        diff("seed", a.seed.to_string(), b.seed.to_string());
        diff(
            "git commit",
            a.git.as_ref().map_or("-".into(), |g| g.commit.clone()),
            b.git.as_ref().map_or("-".into(), |g| g.commit.clone()),
        );
    }
    for r in &current.benchmarks {
        if let Some(b) = base.benchmarks.iter().find(|b| b.spec.id == r.spec.id)
            && b.params != r.params
        {
            out.push(format!("{}: parameters differ", r.spec.id));
        }
        if r.status != warpt_model::RunStatus::Passed {
            out.push(format!(
                "{} is {} in the current run",
                r.spec.id,
                r.status.as_str()
            ));
        }
    }
    out
}

/// Compares `current` with `base`.
pub fn compare(
    base: &BenchmarkSuiteRun,
    base_label: &str,
    current: &BenchmarkSuiteRun,
    current_label: &str,
    options: &Options,
) -> Comparison {
    let base_metrics = metrics_of(base);
    let current_metrics = metrics_of(current);
    let mut metrics = Vec::new();
    let mut only_current = Vec::new();
    let mut ci_decisions: Vec<Option<bool>> = Vec::new();
    for (key, cur) in &current_metrics {
        let Some((_, old)) = base_metrics.iter().find(|(k, _)| k == key) else {
            only_current.push(label(key));
            continue;
        };
        let b_samples = old
            .stats
            .as_ref()
            .map(|s| s.samples.as_slice())
            .unwrap_or_default();
        let c_samples = cur
            .stats
            .as_ref()
            .map(|s| s.samples.as_slice())
            .unwrap_or_default();
        let change = (cur.value - old.value) / old.value;
        let speedup = if cur.higher_is_better {
            cur.value / old.value
        } else {
            old.value / cur.value
        };
        let tested = b_samples.len() >= MIN_SAMPLES && c_samples.len() >= MIN_SAMPLES;
        let (p, ratio, method, ci_separate) = if tested {
            (
                Some(stats::mann_whitney(b_samples, c_samples)),
                stats::bootstrap_ratio_ci(b_samples, c_samples, 2000, 0x5eed),
                "mann-whitney",
                None,
            )
        } else {
            match (&old.stats, &cur.stats) {
                (Some(a), Some(b)) => (
                    None,
                    None,
                    "ci-overlap",
                    Some(a.ci95_high < b.ci95_low || b.ci95_high < a.ci95_low),
                ),
                _ => (None, None, "none", None),
            }
        };
        ci_decisions.push(ci_separate);
        metrics.push(MetricComparison {
            suite: key.0.clone(),
            benchmark: key.1.clone(),
            metric: key.2.clone(),
            tags: key.3.clone(),
            unit: cur.unit.clone(),
            higher_is_better: cur.higher_is_better,
            base: figure(old),
            current: figure(cur),
            change_pct: change * 100.0,
            speedup,
            p_value: p,
            q_value: None,
            ratio_ci95: ratio,
            method: method.into(),
            verdict: Verdict::Unchanged,
        });
    }
    let ps: Vec<f64> = metrics
        .iter()
        .map(|m| m.p_value.unwrap_or(f64::NAN))
        .collect();
    let qs = stats::benjamini_hochberg(&ps);
    for ((m, q), ci_separate) in metrics.iter_mut().zip(qs).zip(ci_decisions) {
        m.q_value = q.is_finite().then_some(q);
        let significant = match (m.q_value, m.ratio_ci95, ci_separate) {
            (Some(q), Some((lo, hi)), _) => q < options.alpha && (hi < 1.0 || lo > 1.0),
            (_, _, Some(separate)) => separate,
            _ => false,
        };
        let outside = m.change_pct.abs() >= options.threshold_pct && m.change_pct.is_finite();
        let better = (m.change_pct > 0.0) == m.higher_is_better;
        m.verdict = match (significant && outside, better) {
            (false, _) => Verdict::Unchanged,
            (true, true) => Verdict::Improved,
            (true, false) => Verdict::Regressed,
        };
    }
    let only_base = base_metrics
        .iter()
        .filter(|(k, _)| !current_metrics.iter().any(|(c, _)| c == k))
        .map(|(k, _)| label(k))
        .collect();
    Comparison {
        base: base_label.to_string(),
        current: current_label.to_string(),
        threshold_pct: options.threshold_pct,
        alpha: options.alpha,
        metrics,
        only_base,
        only_current,
        warnings: differences(base, current),
    }
}
