//! Synthetic runs for the comparison tests: one metric from the example
//! export, with chosen samples or trial medians.

#![allow(dead_code)] // each test binary uses a different part
#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::{BenchmarkSuiteRun, Quality};
use warpt_report::{AssumedNoise, NoiseLookup, Options, compare};

/// Deterministic noise in [-1, 1).
pub fn noise(i: usize) -> f64 {
    let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    x as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// The example export reduced to one metric with `samples`.
pub fn run(samples: &[f64], higher_is_better: bool) -> BenchmarkSuiteRun {
    let text = include_str!("../../../warpt-model/tests/data/example_export.json");
    let mut run: BenchmarkSuiteRun = serde_json::from_str(text).unwrap();
    run.benchmarks.truncate(1);
    let r = &mut run.benchmarks[0];
    r.metrics.truncate(1);
    r.quality = Some(Quality::Good);
    r.quality_reasons.clear();
    let m = &mut r.metrics[0];
    m.higher_is_better = higher_is_better;
    let stats = warpt_model::MetricStats::summarize(samples).unwrap();
    m.value = stats.median;
    m.stats = Some(stats);
    run
}

/// A run with one trial per entry of `medians`, each trial's samples
/// spread ±0.5% around its median.
pub fn trials(medians: &[f64], higher_is_better: bool) -> BenchmarkSuiteRun {
    trials_as(medians, higher_is_better, |_| {})
}

/// [`trials`], each trial's run changed by `edit` before they are combined
/// (its grading, say).
pub fn trials_as(
    medians: &[f64],
    higher_is_better: bool,
    edit: impl Fn(&mut BenchmarkSuiteRun),
) -> BenchmarkSuiteRun {
    let runs: Vec<BenchmarkSuiteRun> = medians
        .iter()
        .enumerate()
        .map(|(t, m)| {
            let samples: Vec<f64> = (0..20)
                .map(|i| m * (1.0 + 0.005 * noise(i + 100 * t)))
                .collect();
            let mut r = run(&samples, higher_is_better);
            edit(&mut r);
            r
        })
        .collect();
    warpt_harness::interleave::combine(runs, "test").unwrap()
}

pub fn base(n: usize) -> Vec<f64> {
    (0..n).map(|i| 100.0 + noise(i)).collect()
}

/// Trusts one run's own statistics: the rule before noise bands.
pub fn trusting() -> AssumedNoise {
    AssumedNoise(0.0)
}

pub fn judge(
    b: &BenchmarkSuiteRun,
    c: &BenchmarkSuiteRun,
    noise: &dyn NoiseLookup,
) -> warpt_report::Comparison {
    compare(b, "base", c, "current", &Options::default(), noise)
}
