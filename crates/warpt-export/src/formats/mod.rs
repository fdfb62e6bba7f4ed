//! One file per format. Each type implements [`crate::Format`] for every
//! kind of input it renders; [`crate::Registry`] lists them per kind.

/// Bencher Metric Format.
mod bmf;
/// CSV: one row per metric.
mod csv;
/// github-action-benchmark's two lists.
mod gab;
/// A self-contained HTML page with SVG charts.
mod html;
/// hyperfine's `--export-csv`.
mod hyperfine_csv;
/// hyperfine's `--export-json`.
mod hyperfine_json;
/// hyperfine's `--export-markdown`.
mod hyperfine_markdown;
/// JSON: warpt's own export, and the JSON form of reports and comparisons.
mod json;
/// JUnit XML.
mod junit;
/// Markdown.
mod markdown;
/// PDF: the HTML printed by headless Chromium.
mod pdf;
/// The Prometheus text exposition format.
mod prometheus;
/// Aligned columns for the terminal.
mod table;

pub use bmf::Bmf;
pub use csv::Csv;
pub use gab::Gab;
pub use html::Html;
pub use hyperfine_csv::HyperfineCsv;
pub use hyperfine_json::HyperfineJson;
pub use hyperfine_markdown::HyperfineMarkdown;
pub use json::Json;
pub use junit::Junit;
pub use markdown::Markdown;
pub use pdf::Pdf;
pub use prometheus::Prometheus;
pub use table::Table;

use warpt_model::{BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun};

/// `suite/benchmark`, with `[k=v,...]` when the metric has tags: how the
/// run formats name a metric's benchmark.
fn bench_name(r: &BenchmarkRunResult, m: &BenchmarkMetric) -> String {
    let base = format!("{}/{}", r.spec.id.suite, r.spec.id.name);
    if m.tags.is_empty() {
        base
    } else {
        format!("{base}[{}]", m.tag_label())
    }
}

/// Every metric of `run` with a finite value, beside its benchmark.
fn finite_metrics(
    run: &BenchmarkSuiteRun,
) -> impl Iterator<Item = (&BenchmarkRunResult, &BenchmarkMetric)> {
    run.benchmarks
        .iter()
        .flat_map(|r| r.metrics.iter().map(move |m| (r, m)))
        .filter(|(_, m)| m.value.is_finite())
}
