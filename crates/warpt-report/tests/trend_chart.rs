//! The HTML report draws a metric's trend with its steps marked when it
//! is given several runs of one machine.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::BenchmarkSuiteRun;
use warpt_report::report::{Input, html};

/// The example export at `level`, started `hour` hours after it.
fn run(level: f64, hour: i64) -> (String, BenchmarkSuiteRun) {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    let mut run: BenchmarkSuiteRun = serde_json::from_str(text).unwrap();
    run.id = format!("run-{hour}");
    run.start_time = Some(
        run.start_time
            .unwrap()
            .checked_add(jiff::SignedDuration::from_hours(hour))
            .unwrap(),
    );
    run.benchmarks.truncate(1);
    run.benchmarks[0].metrics.truncate(1);
    let m = &mut run.benchmarks[0].metrics[0];
    m.value = level;
    m.stats = None;
    (run.id.clone(), run)
}

#[test]
fn a_step_in_the_runs_is_marked_on_the_trend_chart() {
    // Given out of time order: the chart sorts by start time.
    let mut runs: Vec<(String, BenchmarkSuiteRun)> = (0..8)
        .map(|h| {
            run(
                if h < 5 {
                    100.0 + (h % 2) as f64 * 0.5
                } else {
                    90.0 + (h % 2) as f64 * 0.5
                },
                h,
            )
        })
        .collect();
    runs.swap(0, 6);
    assert!(runs[0].1.system.is_some(), "the example has a machine");
    let page = html(&Input {
        runs,
        telemetry: Vec::new(),
        comparisons: Vec::new(),
    });
    let at = page
        .find("<figure class=\"trend\">")
        .expect("a trend chart");
    let figure = &page[at..at + page[at..].find("</figure>").unwrap()];
    // Medians 100 before, 90.5 after the step at the sixth run.
    assert!(
        figure.contains("threads=1 -9.5%"),
        "the step is labelled with its size"
    );
    // Too few runs for a trend: no chart.
    let page = html(&Input {
        runs: (0..3).map(|h| run(100.0, h)).collect(),
        telemetry: Vec::new(),
        comparisons: Vec::new(),
    });
    assert!(!page.contains("class=\"trend\""));
}
