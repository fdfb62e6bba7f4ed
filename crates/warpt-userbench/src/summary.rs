//! `summary.json` and `summary.md`: a harness run's suite run read back as
//! the report its users want — totals, chapters, pairs, a leaderboard by
//! p50, resources, and findings that cite their figures. Built from the
//! suite run alone, so a stored run gives the same summary later.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use warpt_model::{BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun, ParamValue};

/// The format's name, in every `summary.json`.
pub const SCHEMA: &str = "warpt.harness.summary/1";

/// Latency figures of one metric, milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Median.
    pub p50: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation of the samples (0 in summaries written before
    /// it was).
    #[serde(default)]
    pub std: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 95% CI of the median.
    pub ci95: [f64; 2],
    /// Samples.
    pub n: usize,
    /// Percentiles asked for with `--percentiles` beyond those above
    /// (`p99.9`, `p10`).
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub percentiles: BTreeMap<String, f64>,
}

impl Figures {
    fn of(m: &BenchmarkMetric) -> Option<Figures> {
        let s = m.stats.as_ref()?;
        Some(Figures {
            p50: s.p50,
            mean: s.mean,
            std: s.std,
            p90: s.p90,
            p95: s.p95,
            p99: s.p99,
            ci95: [s.ci95_low, s.ci95_high],
            n: s.n,
            percentiles: s.percentiles.clone(),
        })
    }

    /// Half the CI's width over the median.
    pub fn rel_half_width(&self) -> f64 {
        (self.ci95[1] - self.ci95[0]) / 2.0 / self.p50
    }
}

/// An answer's accuracy: an optimized variant's against its baseline, a
/// kernel's against its reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyFigures {
    /// Root-mean-square error.
    pub rmse: f64,
    /// Largest absolute error (`max_error` in summaries before it).
    #[serde(alias = "max_error")]
    pub max_abs_error: f64,
    /// Largest relative error of one number (absent in older summaries).
    #[serde(default)]
    pub max_rel_error: f64,
    /// Norm-wise relative error.
    pub relative_error: f64,
}

/// A benchmark's energy over its measurement window (the monitor's power
/// samples integrated; see `warpt_model::TelemetrySummary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyFigures {
    /// Joules, every source summed.
    pub energy_j: f64,
    /// Mean power, watts, every source summed.
    pub mean_power_w: f64,
    /// Joules per op (per call unless `ops_per_call` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_per_op: Option<f64>,
    /// Joules by source: `cpu_package`, `dram`, `gpu`.
    #[serde(default)]
    pub sources: BTreeMap<String, f64>,
}

impl EnergyFigures {
    fn of(r: &BenchmarkRunResult) -> Option<EnergyFigures> {
        let total = |name: &str| {
            r.metrics
                .iter()
                .find(|m| m.name == name && !m.tags.contains_key("source"))
                .map(|m| m.value)
        };
        Some(EnergyFigures {
            energy_j: total("energy_j")?,
            mean_power_w: total("mean_power_w")?,
            energy_per_op: r.metric("energy_per_op").map(|m| m.value),
            sources: r
                .metrics
                .iter()
                .filter(|m| m.name == "energy_j")
                .filter_map(|m| Some((m.tags.get("source")?.clone(), m.value)))
                .collect(),
        })
    }
}

/// One benchmark (a file at a combination).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// `chapter/example/file-stem` (or `kernels/name`).
    pub id: String,
    /// Chapter.
    pub chapter: String,
    /// Example.
    pub example: String,
    /// `baseline`, `optimized` or `kernel`.
    pub role: String,
    /// The file.
    pub file: String,
    /// The combination (`precision`, `backend`).
    pub tags: BTreeMap<String, String>,
    /// `passed`, `failed`, `skipped`, `timeout`, `crashed`.
    pub status: String,
    /// Why it did not pass.
    pub error: Option<String>,
    /// Every error met, each with its stage and traceback; what was
    /// measured before them is kept in the figures.
    #[serde(default)]
    pub errors: Vec<warpt_model::StageError>,
    /// Per-call latency.
    pub latency_ms: Option<Figures>,
    /// The benchmark's own output (its worker's stderr, every trial),
    /// relative to the summary: `outputs/<benchmark>.log`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_log: Option<String>,
    /// Median ops per second (`ops_per_call` over the seconds per call; a
    /// call is one op unless the benchmark says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_ops_per_sec: Option<f64>,
    /// Energy over the measurement, where the monitor read power
    /// (`--monitor`): the median over the trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyFigures>,
    /// Time to first token, from benchmark_fn's returns.
    pub ttft_ms: Option<Figures>,
    /// Time per output token, from benchmark_fn's returns.
    pub tpot_ms: Option<Figures>,
    /// The benchmark process's peak resident set, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// The timer behind the figures (`details.timing`: `host`).
    pub timing: Option<String>,
    /// Its resolution, nanoseconds (`details.timer_resolution_ns`).
    pub timer_resolution_ns: Option<u64>,
    /// Why the timer is not the one asked for (`device` without CUDA).
    #[serde(default)]
    pub timing_note: Option<String>,
    /// Peak device memory (CUDA) of the benchmark's calls, bytes.
    #[serde(default)]
    pub peak_device_memory_bytes: Option<u64>,
    /// One call's executed instructions (`--measure instructions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_per_call: Option<f64>,
    /// Trials (rounds) behind the figures.
    pub trials: Option<u32>,
    /// median(baseline) / median(this), for an optimized variant.
    pub speedup: Option<f64>,
    /// Its 95% CI.
    pub speedup_ci95: Option<[f64; 2]>,
    /// `improved`, `regressed`, `~` or `inconclusive`.
    pub speedup_verdict: Option<String>,
    /// The baseline's p50, ms.
    pub baseline_latency_ms: Option<f64>,
    /// Significantly slower than the baseline beyond the threshold.
    pub regression: bool,
    /// Against the baseline's output.
    pub accuracy: Option<AccuracyFigures>,
    /// The accuracy verdict, or why it was not checked.
    pub accuracy_note: Option<String>,
}

impl Entry {
    /// How regressions.md matches entries across runs: id and tags.
    pub fn key(&self) -> String {
        let tags = warpt_model::tag_label(&self.tags);
        if tags.is_empty() {
            self.id.clone()
        } else {
            format!("{} [{tags}]", self.id)
        }
    }
}

/// Totals over the run, or over a chapter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Benchmarks (files at combinations).
    pub total: usize,
    /// Passed.
    pub passed: usize,
    /// Failed, timed out or crashed.
    pub failed: usize,
    /// Skipped.
    pub skipped: usize,
    /// Optimized variants that regressed.
    pub regressed: usize,
    /// Geometric mean of the optimized variants' speedups.
    pub geomean_speedup: Option<f64>,
}

/// One chapter's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChapterLine {
    /// Its name.
    pub name: String,
    /// Its totals.
    #[serde(flatten)]
    pub totals: Totals,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// [`SCHEMA`].
    pub schema: String,
    /// The suite run's id in the store.
    pub run_id: String,
    /// The tree.
    pub root: String,
    /// When it started (RFC 3339).
    pub started: Option<String>,
    /// Chapters with a benchmark that ran or was skipped.
    pub chapters: usize,
    /// Totals.
    pub overall: Totals,
    /// The largest speedup (`id`, value).
    pub best: Option<(String, f64)>,
    /// The smallest speedup.
    pub worst: Option<(String, f64)>,
    /// Per chapter.
    pub per_chapter: Vec<ChapterLine>,
    /// Every benchmark.
    pub benchmarks: Vec<Entry>,
    /// What the figures say, each citing them.
    pub findings: Vec<String>,
    /// What to do about it.
    pub recommendations: Vec<String>,
    /// Why no energy was measured though the monitor ran (`--monitor`):
    /// RAPL absent, or root-only and how to make it readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_note: Option<String>,
}

fn detail<'a>(r: &'a BenchmarkRunResult, k: &str) -> Option<&'a ParamValue> {
    r.details.get(k)
}

fn detail_str(r: &BenchmarkRunResult, k: &str) -> String {
    detail(r, k)
        .and_then(ParamValue::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A text detail, if present.
fn text(r: &BenchmarkRunResult, k: &str) -> Option<String> {
    detail(r, k)
        .and_then(ParamValue::as_str)
        .map(str::to_string)
}

/// A count detail (bytes, nanoseconds, trials), if present.
fn count(r: &BenchmarkRunResult, k: &str) -> Option<u64> {
    detail(r, k).and_then(ParamValue::as_i64).map(|v| v as u64)
}

fn entry(r: &BenchmarkRunResult) -> Entry {
    let num = |k: &str| detail(r, k).and_then(ParamValue::as_f64);
    let latency = r.metric("latency_ms");
    let accuracy = match (
        r.metric("rmse"),
        r.metric("max_abs_error"),
        r.metric("max_rel_error"),
        r.metric("relative_error"),
    ) {
        (Some(a), Some(b), Some(m), Some(c)) => Some(AccuracyFigures {
            rmse: a.value,
            max_abs_error: b.value,
            max_rel_error: m.value,
            relative_error: c.value,
        }),
        _ => None,
    };
    let id = r.spec.id.name.clone();
    Entry {
        chapter: detail_str(r, "chapter"),
        example: detail_str(r, "example"),
        role: detail_str(r, "role"),
        file: detail_str(r, "file"),
        tags: latency.map(|m| m.tags.clone()).unwrap_or_else(|| {
            ["precision", "backend"]
                .iter()
                .filter_map(|k| {
                    detail(r, k)
                        .and_then(ParamValue::as_str)
                        .map(|v| (k.to_string(), v.to_string()))
                })
                .collect()
        }),
        status: r.status.as_str().to_string(),
        error: r.error_message.clone(),
        errors: r.errors.clone(),
        latency_ms: latency.and_then(Figures::of),
        output_log: text(r, "output_log").and_then(|p| {
            std::path::Path::new(&p)
                .file_name()
                .map(|n| format!("outputs/{}", n.to_string_lossy()))
        }),
        throughput_ops_per_sec: r.metric("throughput_ops_per_sec").map(|m| m.value),
        energy: EnergyFigures::of(r),
        ttft_ms: r.metric("ttft_ms").and_then(Figures::of),
        tpot_ms: r.metric("tpot_ms").and_then(Figures::of),
        peak_rss_bytes: count(r, "peak_rss_bytes")
            .or_else(|| r.resources.as_ref().and_then(|x| x.peak_rss_bytes)),
        timing: text(r, "timing"),
        timer_resolution_ns: count(r, "timer_resolution_ns"),
        timing_note: text(r, "timing_note"),
        peak_device_memory_bytes: count(r, "peak_device_memory_bytes"),
        instructions_per_call: r.metric("instructions").map(|m| m.value),
        trials: count(r, "trials").map(|v| v as u32),
        speedup: r.metric("speedup").map(|m| m.value),
        speedup_ci95: num("speedup_ci95_low")
            .zip(num("speedup_ci95_high"))
            .map(|(a, b)| [a, b]),
        speedup_verdict: text(r, "speedup_verdict"),
        baseline_latency_ms: num("baseline_latency_ms"),
        regression: detail(r, "regression")
            .and_then(ParamValue::as_bool)
            .unwrap_or(false),
        accuracy,
        accuracy_note: text(r, "accuracy"),
        id,
    }
}

fn geomean(v: &[f64]) -> Option<f64> {
    let v: Vec<f64> = v
        .iter()
        .copied()
        .filter(|x| *x > 0.0 && x.is_finite())
        .collect();
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

fn totals<'a>(entries: impl Iterator<Item = &'a Entry>) -> Totals {
    let mut t = Totals::default();
    let mut speedups = Vec::new();
    for e in entries {
        t.total += 1;
        match e.status.as_str() {
            "passed" => t.passed += 1,
            "skipped" => t.skipped += 1,
            _ => t.failed += 1,
        }
        t.regressed += usize::from(e.regression);
        speedups.extend(e.speedup);
    }
    t.geomean_speedup = geomean(&speedups);
    t
}

impl Summary {
    /// The summary of a harness suite run.
    pub fn of(run: &BenchmarkSuiteRun) -> Summary {
        let benchmarks: Vec<Entry> = run.benchmarks.iter().map(entry).collect();
        let mut names: Vec<String> = Vec::new();
        for e in &benchmarks {
            if !names.contains(&e.chapter) {
                names.push(e.chapter.clone());
            }
        }
        let per_chapter = names
            .iter()
            .map(|n| ChapterLine {
                name: n.clone(),
                totals: totals(benchmarks.iter().filter(|e| &e.chapter == n)),
            })
            .collect();
        let speedups = benchmarks
            .iter()
            .filter_map(|e| e.speedup.map(|s| (e.key(), s)));
        let best = speedups.clone().max_by(|a, b| a.1.total_cmp(&b.1));
        let worst = speedups.min_by(|a, b| a.1.total_cmp(&b.1));
        let mut s = Summary {
            schema: SCHEMA.into(),
            run_id: run.id.clone(),
            root: run
                .metadata
                .as_ref()
                .and_then(|m| m.get("root").cloned())
                .unwrap_or_default(),
            started: run.start_time.map(|t| t.to_string()),
            chapters: names.len(),
            overall: totals(benchmarks.iter()),
            best,
            worst,
            per_chapter,
            benchmarks,
            findings: Vec::new(),
            recommendations: Vec::new(),
            energy_note: run.manifest.as_ref().and_then(|m| {
                m.warnings
                    .iter()
                    .find_map(|w| w.strip_prefix(warpt_harness::energy::UNMEASURED))
                    .map(str::to_string)
            }),
        };
        findings::fill(&mut s);
        s
    }
}

mod findings;
mod markdown;
mod table;

pub use markdown::markdown;
pub use table::table;
