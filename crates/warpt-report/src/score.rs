//! One number per component and suite (`warpt score`): the geometric mean
//! of a run's headline figures as ratios to a reference run's, with a 95%
//! CI from the figures' own CIs and a list of what could not be scored.
//!
//! A result's headline is its first metric, at every tag combination the
//! result reports it (cpu_flops: `gflops` for each precision and thread
//! count). Each figure's ratio faces the right way (the reference's latency
//! over the run's, the run's rate over the reference's), so above 1 is
//! faster. A benchmark's score is the geometric mean of its figures'
//! ratios, and a component's, a suite's and the overall one the geometric
//! mean of their benchmarks' scores, each benchmark weighing the same
//! however many figures it reports. A figure matches only the reference
//! figure of the same benchmark, parameters, metric and tags.
//!
//! The CI treats the figures as independent: each log ratio's variance is
//! the sum of the two medians' (from their 95% CIs), and a mean of n logs
//! has the sum of their variances over n². It says how precisely each
//! median was measured, not how much a rerun would move (docs/score.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use warpt_model::{BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun, RunStatus};

/// The format of a score reference file.
pub const REFERENCE_SCHEMA: &str = "warpt.score.reference/1";

/// The reference warpt ships: its default benchmarks (`benchmark run` on
/// the embedded defaults) on the machine it names.
pub const SHIPPED_REFERENCE: &str = include_str!("../data/score-reference.json");

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// A run's headline figures, kept as a reference to score others against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// [`REFERENCE_SCHEMA`].
    pub schema: String,
    /// The machine it was measured on, for people (CPU model, cores, memory).
    pub machine: String,
    /// The run's id.
    pub run_id: String,
    /// When the run started (RFC 3339).
    pub measured: Option<String>,
    /// The warpt version that measured it.
    pub warpt_version: Option<String>,
    /// The figures.
    pub figures: Vec<Figure>,
}

/// One headline figure of a reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// `suite/benchmark`.
    pub benchmark: String,
    /// Its components (`cpu`, `ram`, ...).
    pub components: Vec<String>,
    /// Its parameters, `k=v,...`.
    pub params: String,
    /// The metric.
    pub metric: String,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
    /// Its unit.
    pub unit: String,
    /// Whether more is better.
    pub higher_is_better: bool,
    /// The median.
    pub value: f64,
    /// The median's 95% CI, where it has one.
    pub ci95: Option<[f64; 2]>,
}

impl Figure {
    fn key(&self) -> (String, String, String, String) {
        (
            self.benchmark.clone(),
            self.params.clone(),
            self.metric.clone(),
            warpt_model::tag_label(&self.tags),
        )
    }

    fn label(&self) -> String {
        let tags = warpt_model::tag_label(&self.tags);
        let mut s = format!("{} {}", self.benchmark, self.metric);
        if !tags.is_empty() {
            s.push_str(&format!(" [{tags}]"));
        }
        if !self.params.is_empty() {
            s.push_str(&format!(" ({})", self.params));
        }
        s
    }

    /// The variance of the median's log, from its CI (0 without one).
    fn log_variance(&self) -> f64 {
        match self.ci95 {
            Some([lo, hi]) if lo > 0.0 && hi >= lo => {
                let se = (hi.ln() - lo.ln()) / (2.0 * Z95);
                se * se
            }
            _ => 0.0,
        }
    }
}

fn params_label(r: &BenchmarkRunResult) -> String {
    r.params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn figure(r: &BenchmarkRunResult, m: &BenchmarkMetric) -> Figure {
    Figure {
        benchmark: r.spec.id.to_string(),
        components: r
            .spec
            .components
            .iter()
            .map(|c| c.as_str().to_string())
            .collect(),
        params: params_label(r),
        metric: m.name.clone(),
        tags: m.tags.clone(),
        unit: m.unit.clone(),
        higher_is_better: m.higher_is_better,
        value: m.value,
        ci95: m.stats.as_ref().map(|s| [s.ci95_low, s.ci95_high]),
    }
}

/// A result's headline figures: its first metric at every tag combination,
/// where the value is a positive finite number.
fn headline(r: &BenchmarkRunResult) -> Vec<Figure> {
    let Some(first) = r.metrics.first() else {
        return Vec::new();
    };
    r.metrics
        .iter()
        .filter(|m| m.name == first.name && m.value.is_finite() && m.value > 0.0)
        .map(|m| figure(r, m))
        .collect()
}

impl Reference {
    /// The headline figures of `run`'s passed results, as a reference;
    /// `machine` names where it ran.
    pub fn of(run: &BenchmarkSuiteRun, machine: &str) -> Reference {
        Reference {
            schema: REFERENCE_SCHEMA.into(),
            machine: machine.into(),
            run_id: run.id.clone(),
            measured: run.start_time.map(|t| t.to_string()),
            warpt_version: run.manifest.as_ref().map(|m| m.warpt_version.clone()),
            figures: run
                .benchmarks
                .iter()
                .filter(|r| r.status == RunStatus::Passed)
                .flat_map(headline)
                .collect(),
        }
    }

    /// The reference shipped with warpt.
    pub fn shipped() -> Result<Reference, String> {
        Reference::parse(SHIPPED_REFERENCE)
    }

    /// A reference file's contents; its schema checked.
    pub fn parse(text: &str) -> Result<Reference, String> {
        let r: Reference = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if r.schema != REFERENCE_SCHEMA {
            return Err(format!("schema '{}' is not {REFERENCE_SCHEMA}", r.schema));
        }
        Ok(r)
    }
}

/// A geometric mean of ratios and its 95% CI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// What it scores: a component, `suite`, `suite/benchmark`, or `overall`.
    pub name: String,
    /// The geometric mean of the ratios (1 = the reference).
    pub score: f64,
    /// Its 95% CI.
    pub ci95: [f64; 2],
    /// Benchmarks behind it (figures, for a benchmark's own line).
    pub count: usize,
}

/// A run's score against a reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The scored run.
    pub run_id: String,
    /// The reference's run.
    pub reference_run_id: String,
    /// The reference's machine.
    pub reference_machine: String,
    /// Every benchmark in common: the geometric mean over all of them.
    pub overall: Option<Part>,
    /// Per component.
    pub components: Vec<Part>,
    /// Per suite.
    pub suites: Vec<Part>,
    /// Per benchmark (with its parameters where any).
    pub benchmarks: Vec<Part>,
    /// Reference figures this run has no passed figure for, each with why.
    pub missing: Vec<String>,
    /// This run's headline figures the reference lacks (not scored).
    pub unscored: Vec<String>,
}

/// A log ratio with its variance.
#[derive(Debug, Clone, Copy)]
struct LogRatio {
    log: f64,
    var: f64,
}

fn mean(items: &[LogRatio]) -> LogRatio {
    let n = items.len() as f64;
    LogRatio {
        log: items.iter().map(|x| x.log).sum::<f64>() / n,
        var: items.iter().map(|x| x.var).sum::<f64>() / (n * n),
    }
}

fn part(name: &str, items: &[LogRatio]) -> Part {
    let m = mean(items);
    let half = Z95 * m.var.sqrt();
    Part {
        name: name.into(),
        score: m.log.exp(),
        ci95: [(m.log - half).exp(), (m.log + half).exp()],
        count: items.len(),
    }
}

/// Scores `run` against `reference`.
pub fn score(run: &BenchmarkSuiteRun, reference: &Reference) -> Score {
    let mine: BTreeMap<_, Figure> = run
        .benchmarks
        .iter()
        .filter(|r| r.status == RunStatus::Passed)
        .flat_map(headline)
        .map(|f| (f.key(), f))
        .collect();
    let status: BTreeMap<String, &BenchmarkRunResult> = run
        .benchmarks
        .iter()
        .map(|r| (r.spec.id.to_string(), r))
        .collect();
    // Per benchmark (and parameters): its figures' log ratios.
    let mut per_bench: BTreeMap<(String, String), (Vec<String>, Vec<LogRatio>)> = BTreeMap::new();
    let mut missing = Vec::new();
    for want in &reference.figures {
        let Some(got) = mine.get(&want.key()) else {
            let why = match status.get(&want.benchmark) {
                None => "not in this run".to_string(),
                Some(r) if r.status != RunStatus::Passed => {
                    format!("{} in this run", r.status.as_str())
                }
                Some(r) if params_label(r) != want.params => {
                    format!("other parameters ({})", params_label(r))
                }
                Some(_) => "this run does not report it".to_string(),
            };
            missing.push(format!("{}: {why}", want.label()));
            continue;
        };
        let ratio = if want.higher_is_better {
            got.value / want.value
        } else {
            want.value / got.value
        };
        if !(ratio.is_finite() && ratio > 0.0) {
            missing.push(format!("{}: not a positive ratio", want.label()));
            continue;
        }
        let entry = per_bench
            .entry((want.benchmark.clone(), want.params.clone()))
            .or_insert_with(|| (want.components.clone(), Vec::new()));
        entry.1.push(LogRatio {
            log: ratio.ln(),
            var: got.log_variance() + want.log_variance(),
        });
    }
    let referenced: std::collections::BTreeSet<_> =
        reference.figures.iter().map(Figure::key).collect();
    let unscored = mine
        .iter()
        .filter(|(k, _)| !referenced.contains(*k))
        .map(|(_, f)| f.label())
        .collect();
    let mut benchmarks = Vec::new();
    let mut by_component: BTreeMap<String, Vec<LogRatio>> = BTreeMap::new();
    let mut by_suite: BTreeMap<String, Vec<LogRatio>> = BTreeMap::new();
    let mut all = Vec::new();
    for ((bench, params), (components, ratios)) in &per_bench {
        let name = if params.is_empty() {
            bench.clone()
        } else {
            format!("{bench} ({params})")
        };
        benchmarks.push(part(&name, ratios));
        let m = mean(ratios);
        for c in components {
            by_component.entry(c.clone()).or_default().push(m);
        }
        let suite = bench.split('/').next().unwrap_or(bench).to_string();
        by_suite.entry(suite).or_default().push(m);
        all.push(m);
    }
    let order = |c: &str| {
        warpt_model::BenchmarkComponent::ALL
            .iter()
            .position(|k| k.as_str() == c)
            .unwrap_or(usize::MAX)
    };
    let mut components: Vec<Part> = by_component.iter().map(|(c, v)| part(c, v)).collect();
    components.sort_by_key(|p| order(&p.name));
    Score {
        run_id: run.id.clone(),
        reference_run_id: reference.run_id.clone(),
        reference_machine: reference.machine.clone(),
        overall: (!all.is_empty()).then(|| part("overall", &all)),
        components,
        suites: by_suite.iter().map(|(s, v)| part(s, v)).collect(),
        benchmarks,
        missing,
        unscored,
    }
}

impl Score {
    /// One line: the overall score, its CI, what it rests on.
    pub fn line(&self) -> String {
        match &self.overall {
            Some(o) => format!(
                "score {:.3} (95% CI {:.3}–{:.3}) over {} benchmark(s) against {} (run {}){}",
                o.score,
                o.ci95[0],
                o.ci95[1],
                o.count,
                self.reference_machine,
                self.reference_run_id,
                if self.missing.is_empty() {
                    String::new()
                } else {
                    format!("; {} reference figure(s) missing", self.missing.len())
                }
            ),
            None => format!(
                "score: no headline figure in common with the reference ({}, run {})",
                self.reference_machine, self.reference_run_id
            ),
        }
    }
}

#[cfg(test)]
#[path = "score_tests.rs"]
mod tests;
