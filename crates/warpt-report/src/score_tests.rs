#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use super::*;
use warpt_model::{BenchmarkComponent, BenchmarkId, MetricStats, ParamValue};

/// A run of `results`, each (benchmark, component, metric, higher is
/// better, [(tag value, median, relative CI half-width)]), from the
/// example export's first result.
type Spec<'a> = (
    &'a str,
    BenchmarkComponent,
    &'a str,
    bool,
    Vec<(&'a str, f64, f64)>,
);

fn run(id: &str, results: Vec<Spec<'_>>) -> BenchmarkSuiteRun {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    let mut run: BenchmarkSuiteRun = serde_json::from_str(text).unwrap();
    run.id = id.into();
    let template = run.benchmarks[0].clone();
    run.benchmarks = results
        .into_iter()
        .map(|(bench, component, metric, hib, figures)| {
            let mut r = template.clone();
            let (suite, name) = bench.split_once('/').unwrap();
            r.spec.id = BenchmarkId::new(suite, name);
            r.spec.components = vec![component];
            r.status = RunStatus::Passed;
            r.params = [("n".to_string(), ParamValue::Int(1024))].into();
            r.metrics = figures
                .into_iter()
                .map(|(tag, value, half)| {
                    let mut stats = MetricStats::summarize(&[value, value, value]).unwrap();
                    stats.ci95_low = value * (1.0 - half);
                    stats.ci95_high = value * (1.0 + half);
                    BenchmarkMetric {
                        name: metric.into(),
                        value,
                        unit: if hib { "GFLOP/s" } else { "ms" }.into(),
                        higher_is_better: hib,
                        tags: if tag.is_empty() {
                            BTreeMap::new()
                        } else {
                            [("precision".to_string(), tag.to_string())].into()
                        },
                        stats: Some(stats),
                    }
                })
                .collect();
            r
        })
        .collect();
    run
}

fn reference_run() -> BenchmarkSuiteRun {
    run(
        "ref",
        vec![
            (
                "micro/gemm",
                BenchmarkComponent::Cpu,
                "gflops",
                true,
                vec![("fp32", 100.0, 0.01), ("fp64", 50.0, 0.01)],
            ),
            (
                "micro/memory_latency",
                BenchmarkComponent::Ram,
                "latency_ms",
                false,
                vec![("", 80.0, 0.02)],
            ),
        ],
    )
}

#[test]
fn a_run_scores_one_against_itself_and_each_ratio_faces_the_right_way() {
    let reference = Reference::of(&reference_run(), "the reference box");
    assert_eq!(reference.figures.len(), 3);
    let same = score(&reference_run(), &reference);
    let o = same.overall.as_ref().unwrap();
    assert!((o.score - 1.0).abs() < 1e-12, "{o:?}");
    assert!(o.ci95[0] < 1.0 && o.ci95[1] > 1.0, "{o:?}");
    assert!(same.missing.is_empty() && same.unscored.is_empty());
    // Twice the GFLOP/s and half the latency: twice as fast everywhere.
    let faster = run(
        "fast",
        vec![
            (
                "micro/gemm",
                BenchmarkComponent::Cpu,
                "gflops",
                true,
                vec![("fp32", 200.0, 0.01), ("fp64", 100.0, 0.01)],
            ),
            (
                "micro/memory_latency",
                BenchmarkComponent::Ram,
                "latency_ms",
                false,
                vec![("", 40.0, 0.02)],
            ),
        ],
    );
    let s = score(&faster, &reference);
    for p in s.components.iter().chain(&s.suites).chain(s.overall.iter()) {
        assert!((p.score - 2.0).abs() < 1e-9, "{p:?}");
    }
    assert_eq!(
        s.components
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["cpu", "ram"]
    );
}

#[test]
fn every_benchmark_weighs_the_same_and_the_ci_follows_the_figures_cis() {
    let reference = Reference::of(&reference_run(), "box");
    // gemm's two figures 4x, the latency 4x slower: the overall is the
    // geometric mean of the two benchmarks, 1, not of the three figures.
    let mixed = run(
        "mixed",
        vec![
            (
                "micro/gemm",
                BenchmarkComponent::Cpu,
                "gflops",
                true,
                vec![("fp32", 400.0, 0.01), ("fp64", 200.0, 0.01)],
            ),
            (
                "micro/memory_latency",
                BenchmarkComponent::Ram,
                "latency_ms",
                false,
                vec![("", 320.0, 0.02)],
            ),
        ],
    );
    let s = score(&mixed, &reference);
    let o = s.overall.unwrap();
    assert!((o.score - 1.0).abs() < 1e-9, "{o:?}");
    assert_eq!(o.count, 2);
    // The latency alone: its log ratio's variance is the two medians'
    // (each CI ±2%); the component's CI is that, exactly.
    let ram = s.components.iter().find(|p| p.name == "ram").unwrap();
    let se = ((1.02f64).ln() - (0.98f64).ln()) / (2.0 * Z95);
    let half = Z95 * (2.0 * se * se).sqrt();
    assert!(
        (ram.ci95[0] - 0.25 * (-half).exp()).abs() < 1e-12,
        "{ram:?}"
    );
    assert!((ram.ci95[1] - 0.25 * half.exp()).abs() < 1e-12, "{ram:?}");
}

#[test]
fn what_cannot_be_scored_is_listed_with_the_reason() {
    let reference = Reference::of(&reference_run(), "box");
    let mut partial = run(
        "partial",
        vec![
            (
                "micro/gemm",
                BenchmarkComponent::Cpu,
                "gflops",
                true,
                // fp64 not reported; bf16 new.
                vec![("fp32", 100.0, 0.01), ("bf16", 300.0, 0.01)],
            ),
            (
                "micro/memory_latency",
                BenchmarkComponent::Ram,
                "latency_ms",
                false,
                vec![("", 80.0, 0.02)],
            ),
        ],
    );
    let s = score(&partial, &reference);
    assert_eq!(
        s.missing,
        ["micro/gemm gflops [precision=fp64] (n=1024): this run does not report it"]
    );
    assert_eq!(s.unscored, ["micro/gemm gflops [precision=bf16] (n=1024)"]);
    // Other parameters are another workload; a failed result is no figure.
    partial.benchmarks[0]
        .params
        .insert("n".into(), ParamValue::Int(2048));
    partial.benchmarks[1].status = RunStatus::Failed;
    let s = score(&partial, &reference);
    assert!(s.overall.is_none());
    assert!(
        s.line().contains("no headline figure in common"),
        "{}",
        s.line()
    );
    assert_eq!(s.missing.len(), 3, "{:?}", s.missing);
    assert!(
        s.missing[0].ends_with("other parameters (n=2048)"),
        "{:?}",
        s.missing
    );
    assert!(
        s.missing[2].ends_with("failed in this run"),
        "{:?}",
        s.missing
    );
}

#[test]
fn reference_files_are_checked_and_the_shipped_one_reads() {
    let text = serde_json::to_string(&Reference::of(&reference_run(), "box")).unwrap();
    assert_eq!(Reference::parse(&text).unwrap().figures.len(), 3);
    let other = text.replace(REFERENCE_SCHEMA, "something/2");
    assert!(
        Reference::parse(&other)
            .unwrap_err()
            .contains("something/2")
    );
    assert!(Reference::parse("[]").is_err());
    let shipped = Reference::shipped().unwrap();
    assert!(!shipped.machine.is_empty() && shipped.figures.len() >= 5);
    assert!(
        shipped
            .figures
            .iter()
            .all(|f| f.value > 0.0 && f.value.is_finite())
    );
}
