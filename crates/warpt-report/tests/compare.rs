//! Comparisons of synthetic samples: the verdicts and their direction.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::BenchmarkSuiteRun;
use warpt_report::{Options, Verdict, compare};

/// Deterministic noise in [-1, 1).
fn noise(i: usize) -> f64 {
    let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    x as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// The example export reduced to one metric with `samples`.
fn run(samples: &[f64], higher_is_better: bool) -> BenchmarkSuiteRun {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    let mut run: BenchmarkSuiteRun = serde_json::from_str(text).unwrap();
    run.benchmarks.truncate(1);
    let r = &mut run.benchmarks[0];
    r.metrics.truncate(1);
    let m = &mut r.metrics[0];
    m.higher_is_better = higher_is_better;
    let stats = warpt_harness::stats::summarize(samples).unwrap();
    m.value = stats.median;
    m.stats = Some(stats);
    run
}

fn base(n: usize) -> Vec<f64> {
    (0..n).map(|i| 100.0 + noise(i)).collect()
}

fn verdict(base: &[f64], current: &[f64], hib: bool) -> Verdict {
    let c = compare(
        &run(base, hib),
        "base",
        &run(current, hib),
        "current",
        &Options::default(),
    );
    assert_eq!(c.metrics.len(), 1);
    c.metrics[0].verdict
}

#[test]
fn identical_distributions_are_unchanged() {
    let b = base(30);
    let shuffled: Vec<f64> = (0..30).map(|i| 100.0 + noise((i * 7) % 30)).collect();
    assert_eq!(verdict(&b, &shuffled, true), Verdict::Unchanged);
    assert_eq!(verdict(&b, &b, false), Verdict::Unchanged);
}

#[test]
fn a_five_percent_shift_is_judged_in_the_metrics_direction() {
    let b = base(30);
    let up: Vec<f64> = (0..30).map(|i| 105.0 + noise(i + 1000)).collect();
    let down: Vec<f64> = (0..30).map(|i| 95.0 + noise(i + 2000)).collect();
    // Throughput: more is better.
    assert_eq!(verdict(&b, &up, true), Verdict::Improved);
    assert_eq!(verdict(&b, &down, true), Verdict::Regressed);
    // Time: less is better.
    assert_eq!(verdict(&b, &up, false), Verdict::Regressed);
    assert_eq!(verdict(&b, &down, false), Verdict::Improved);
    let c = compare(
        &run(&b, false),
        "b",
        &run(&up, false),
        "c",
        &Options::default(),
    );
    let m = &c.metrics[0];
    assert!((m.change_pct - 5.0).abs() < 1.0, "{}", m.change_pct);
    assert!(
        (m.speedup - 100.0 / 105.0).abs() < 0.01,
        "time metric speedup = base / current"
    );
    assert!(m.p_value.unwrap() < 1e-6 && m.q_value.unwrap() < 0.05);
    let (lo, hi) = m.ratio_ci95.unwrap();
    assert!(lo > 1.0 && hi < 1.1);
    assert!(c.regressed());
}

#[test]
fn a_significant_shift_inside_the_threshold_is_unchanged() {
    let b = base(30);
    let slight: Vec<f64> = (0..30).map(|i| 101.5 + noise(i + 3000) * 0.1).collect();
    assert_eq!(verdict(&b, &slight, true), Verdict::Unchanged);
    let c = compare(
        &run(&b, true),
        "b",
        &run(&slight, true),
        "c",
        &Options {
            threshold_pct: 1.0,
            alpha: 0.05,
        },
    );
    assert_eq!(c.metrics[0].verdict, Verdict::Improved, "outside a 1% band");
}

#[test]
fn few_samples_fall_back_to_ci_overlap_and_renders_name_everything() {
    let c = compare(
        &run(&[100.0, 100.5, 99.5], true),
        "b",
        &run(&[90.0, 90.2, 89.8], true),
        "c",
        &Options::default(),
    );
    let m = &c.metrics[0];
    assert_eq!(m.method, "ci-overlap");
    assert_eq!(m.verdict, Verdict::Regressed);
    let text = warpt_report::render::text(&c);
    assert!(
        text.contains("regressed") && text.contains("Benjamini-Hochberg"),
        "{text}"
    );
    let md = warpt_report::render::markdown(&c);
    assert!(md.contains("| metric | base | current |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&warpt_report::render::json(&c).unwrap()).unwrap();
    assert_eq!(json["metrics"][0]["verdict"], "regressed");
}

#[test]
fn a_different_machine_is_warned_about_with_what_differs() {
    let b = base(10);
    let base_run = run(&b, true);
    let mut other = run(&b, true);
    let system = other.system.as_mut().unwrap();
    system.os.hostname = "elsewhere".into();
    system.os.kernel = "9.9.9".into();
    let c = compare(&base_run, "b", &other, "c", &Options::default());
    let w = c.warnings.join("\n");
    assert!(
        w.contains("machine fingerprint") && w.contains("host: ") && w.contains("-> elsewhere"),
        "{w}"
    );
    assert!(w.contains("kernel: "), "{w}");
    // A new kernel alone keeps the fingerprint (the same machine, updated).
    let mut updated = run(&b, true);
    updated.system.as_mut().unwrap().os.kernel = "9.9.9".into();
    let c = compare(&base_run, "b", &updated, "c", &Options::default());
    assert!(
        !c.warnings.iter().any(|w| w.contains("fingerprint")),
        "{:?}",
        c.warnings
    );
    assert!(c.warnings.iter().any(|w| w.starts_with("kernel")));
}
