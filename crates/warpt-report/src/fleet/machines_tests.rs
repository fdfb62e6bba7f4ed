//! Tests of the cross-machine analysis on hand-made rows.

#![allow(clippy::unwrap_used)]

use super::*;

#[allow(clippy::too_many_arguments)]
fn row(
    host: &str,
    run: usize,
    metric: &str,
    tags: &[(&str, &str)],
    hib: bool,
    value: f64,
    id: i64,
) -> CrossRow {
    CrossRow {
        run_id: format!("{host}-{run}"),
        fingerprint: format!("fp-{host}"),
        hostname: host.into(),
        suite: "micro".into(),
        benchmark: "cpu_flops".into(),
        metric: metric.into(),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        unit: "GFLOP/s".into(),
        higher_is_better: hib,
        value,
        ci95: Some((value * 0.99, value * 1.01)),
        n: Some(20),
        mean_power_w: None,
        metric_id: id,
    }
}

fn no_samples(_: &[i64]) -> HashMap<i64, Vec<f64>> {
    HashMap::new()
}

#[test]
fn the_winner_is_picked_in_the_metrics_direction_with_a_tested_margin() {
    let mut rows = Vec::new();
    // a: 100 ± 1 over 4 runs; b: 110 ± 1 (10% faster, clearly); c: 100.5.
    for (k, d) in [-1.0, 0.5, 1.0, -0.5].iter().enumerate() {
        rows.push(row("a", k, "gflops", &[], true, 100.0 + d, 0));
        rows.push(row("b", k, "gflops", &[], true, 110.0 + d, 0));
        rows.push(row("c", k, "gflops", &[], true, 100.5 + d, 0));
    }
    let mut report = analyse(&rows, &HashMap::new(), &HashMap::new());
    recommend(&mut report, &mut no_samples);
    let w = &report.workloads[0];
    assert_eq!(w.figures[0].hostname, "b");
    let (lo, hi) = w.figures[0].ci95.unwrap();
    assert!(lo <= 110.0 && 110.0 <= hi && hi - lo < 3.0, "{lo} {hi}");
    let p = &report.recommendations[0].picks[0];
    assert_eq!(
        (p.winner.as_str(), p.runner_up.as_deref()),
        ("b", Some("c"))
    );
    assert!((p.margin.unwrap() - 110.0 / 100.5 + 1.0).abs() < 1e-9);
    assert_eq!(p.basis, "runs");
    assert!(p.significant, "{p:?}");

    // Lower is better (latency): the smallest wins; a 0.5% gap within
    // run-to-run noise of ±1 is not significant.
    let mut rows = Vec::new();
    for (k, d) in [-1.0, 1.0, 0.2, -0.4].iter().enumerate() {
        rows.push(row("a", k, "latency", &[], false, 50.0 + d, 0));
        rows.push(row("b", k, "latency", &[], false, 50.25 + d, 0));
    }
    let mut report = analyse(&rows, &HashMap::new(), &HashMap::new());
    recommend(&mut report, &mut no_samples);
    let p = &report.recommendations[0].picks[0];
    assert_eq!(p.winner, "a");
    assert!(!p.significant, "{p:?}");
    assert_eq!(
        report.recommendations[0].picks.len(),
        1,
        "no per-watt or per-cost pick"
    );
}

#[test]
fn single_runs_are_tested_on_their_samples_and_per_watt_and_cost_rank_apart() {
    let mut a = row("a", 0, "gflops", &[], true, 100.0, 1);
    let mut b = row("b", 0, "gflops", &[], true, 120.0, 2);
    a.mean_power_w = Some(50.0);
    b.mean_power_w = Some(100.0);
    let costs: HashMap<String, f64> = [("a".to_string(), 4.0), ("b".to_string(), 2.0)].into();
    let mut report = analyse(&[a, b], &HashMap::new(), &costs);
    let mut asked = Vec::new();
    recommend(&mut report, &mut |ids: &[i64]| {
        asked.extend_from_slice(ids);
        [
            (1, (0..30).map(|i| 100.0 + (i % 5) as f64 * 0.1).collect()),
            (2, (0..30).map(|i| 120.0 + (i % 5) as f64 * 0.1).collect()),
        ]
        .into()
    });
    assert!(asked.contains(&1) && asked.contains(&2));
    let picks = &report.recommendations[0].picks;
    let by = |c: Criterion| picks.iter().find(|p| p.criterion == c).unwrap();
    let t = by(Criterion::Throughput);
    assert_eq!(
        (t.winner.as_str(), t.basis, t.significant),
        ("b", "samples", true)
    );
    // Per watt: a does 2 GFLOP/s per W, b 1.2.
    let w = by(Criterion::PerWatt);
    assert_eq!(w.winner, "a");
    assert!((w.value - 2.0).abs() < 1e-9);
    assert!(w.significant);
    // Per cost: b does 60 per unit of cost per hour, a 25.
    let c = by(Criterion::PerCost);
    assert_eq!(c.winner, "b");
    assert!((c.margin.unwrap() - 60.0 / 25.0 + 1.0).abs() < 1e-9);
}

#[test]
fn a_swept_numeric_tag_gives_a_line_per_machine() {
    let mut rows = Vec::new();
    for (i, t) in ["1", "2", "4", "8"].iter().enumerate() {
        for host in ["a", "b"] {
            let scale = if host == "a" { 10.0 } else { 12.0 };
            rows.push(row(
                host,
                0,
                "gflops",
                &[("threads", t), ("precision", "fp64")],
                true,
                scale * (i + 1) as f64,
                0,
            ));
        }
    }
    // Only two values: no line.
    rows.push(row("a", 0, "other", &[("size", "1")], true, 1.0, 0));
    rows.push(row("a", 0, "other", &[("size", "2")], true, 1.0, 0));
    let report = analyse(&rows, &HashMap::new(), &HashMap::new());
    assert_eq!(report.scaling.len(), 1);
    let s = &report.scaling[0];
    assert_eq!(
        (s.axis.as_str(), s.fixed.as_str()),
        ("threads", "precision=fp64")
    );
    assert_eq!(s.lines[1].0, "b");
    assert_eq!(
        s.lines[1].1,
        [(1.0, 12.0), (2.0, 24.0), (4.0, 36.0), (8.0, 48.0)]
    );
    // Rendered, the report carries its charts and every pick.
    let html = crate::fleet::render::html(&report);
    assert!(html.contains("<svg") && html.contains("Scaling"));
    let md = crate::fleet::render::markdown(&report);
    assert!(
        md.contains("| threads=1 |") || md.contains("threads=1 |"),
        "{md}"
    );
}

#[test]
fn many_runs_give_the_order_statistic_interval_of_the_median() {
    let values: Vec<f64> = (1..=100).map(f64::from).collect();
    let (lo, hi) = figure_ci(&values, &[]).unwrap();
    // n = 100: ranks 40 and 61 (the textbook interval for the median).
    assert_eq!((lo, hi), (40.0, 61.0));
    let few = [10.0, 11.0, 12.0];
    let (lo, hi) = figure_ci(&few, &[]).unwrap();
    assert!(lo >= 10.0 && hi <= 12.0 && lo < hi);
    assert_eq!(figure_ci(&[5.0], &[Some((4.0, 6.0))]), Some((4.0, 6.0)));
}
