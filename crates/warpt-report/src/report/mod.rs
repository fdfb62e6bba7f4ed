//! Reports of one or more runs for people: Markdown, and one self-contained
//! HTML file (no network needed to view it) with SVG charts; JSON for tools.
//!
//! Both list the environment of each run, every result with its statistics,
//! stop reason, validation and quality, and compare every later run with
//! the first. The HTML adds charts: per metric, bars across runs with CI
//! whiskers; sample distributions as box plots; a line against a numeric
//! tag when a parameter was swept (or a tag takes three or more values,
//! like mem_latency's sizes); and telemetry timelines when a monitor
//! timeline is given.

pub mod chart_data;
pub mod charts;

use warpt_model::{BenchmarkSuiteRun, TelemetrySample, tag_label};

use crate::compare::{Comparison, NoiseLookup, Options, compare};
use crate::render::{self, num};

/// What a report covers.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// The runs, each with how it was named (file or run id); the first is
    /// the baseline of the comparisons.
    pub runs: Vec<(String, BenchmarkSuiteRun)>,
    /// A monitor timeline (`--monitor-output`), if one was given.
    pub telemetry: Vec<TelemetrySample>,
    /// Every later run compared with the first ([`compare_with_first`]).
    pub comparisons: Vec<Comparison>,
}

/// Every later run of `runs` compared with the first, with each metric's
/// noise from `noise`.
pub fn compare_with_first(
    runs: &[(String, BenchmarkSuiteRun)],
    noise: &dyn NoiseLookup,
) -> Vec<Comparison> {
    let Some((base_label, base)) = runs.first() else {
        return Vec::new();
    };
    runs[1..]
        .iter()
        .map(|(label, run)| compare(base, base_label, run, label, &Options::default(), noise))
        .collect()
}

/// Environment rows: a field and its value in each run.
fn environment(input: &Input) -> Vec<(&'static str, Vec<String>)> {
    let runs: Vec<&BenchmarkSuiteRun> = input.runs.iter().map(|(_, r)| r).collect();
    let field = |f: &dyn Fn(&BenchmarkSuiteRun) -> Option<String>| -> Vec<String> {
        runs.iter()
            .map(|r| f(r).unwrap_or_else(|| "-".into()))
            .collect()
    };
    vec![
        ("run", field(&|r| Some(r.id.clone()))),
        (
            "description",
            field(&|r| r.manifest.as_ref().and_then(|m| m.description.clone())),
        ),
        (
            "labels",
            field(&|r| {
                r.manifest
                    .as_ref()
                    .filter(|m| !m.labels.is_empty())
                    .map(|m| warpt_model::labels::label_text(&m.labels))
            }),
        ),
        ("suite", field(&|r| Some(r.suite.clone()))),
        ("started", field(&|r| r.start_time.map(|t| t.to_string()))),
        (
            "host",
            field(&|r| r.system.as_ref().map(|s| s.os.hostname.clone())),
        ),
        (
            "CPU",
            field(&|r| r.system.as_ref().map(|s| s.cpu.model.clone())),
        ),
        (
            "logical CPUs",
            field(&|r| r.system.as_ref().map(|s| s.cpu.logical_cores.to_string())),
        ),
        (
            "memory",
            field(&|r| {
                r.system
                    .as_ref()
                    .map(|s| format!("{:.1} GiB", s.memory.total_bytes as f64 / 1073741824.0))
            }),
        ),
        (
            "OS",
            field(&|r| {
                r.system
                    .as_ref()
                    .map(|s| format!("{} ({})", s.os.name, s.os.kernel))
            }),
        ),
        (
            "virtualisation",
            field(&|r| r.system.as_ref().and_then(|s| s.os.virtualization.clone())),
        ),
        (
            "warpt",
            field(&|r| r.manifest.as_ref().map(|m| m.warpt_version.clone())),
        ),
        (
            "build",
            field(&|r| r.manifest.as_ref().map(|m| m.build_profile.clone())),
        ),
        (
            "git commit",
            field(&|r| {
                r.manifest
                    .as_ref()
                    .and_then(|m| m.git.as_ref())
                    .map(|g| g.commit.clone())
            }),
        ),
        (
            "governor",
            field(&|r| r.manifest.as_ref().and_then(|m| m.governor.clone())),
        ),
        (
            "seed",
            field(&|r| r.manifest.as_ref().map(|m| m.seed.to_string())),
        ),
    ]
}

/// A result table's header.
pub const RESULT_HEADER: [&str; 9] = [
    "benchmark",
    "metric",
    "tags",
    "median",
    "±CI95",
    "unit",
    "n",
    "stop",
    "status",
];

/// One row per metric (a benchmark without metrics gets one row with its
/// status as the metric), the columns of [`RESULT_HEADER`].
pub fn result_rows(run: &BenchmarkSuiteRun) -> Vec<[String; 9]> {
    let mut rows = Vec::new();
    for r in &run.benchmarks {
        let status = r.status.as_str().to_string();
        if r.metrics.is_empty() {
            let mut row: [String; 9] = Default::default();
            row[0] = r.spec.id.to_string();
            row[1] = status.clone();
            row[3] = "-".into();
            row[8] = status.clone();
            rows.push(row);
        }
        for m in &r.metrics {
            let st = m.stats.as_ref();
            rows.push([
                r.spec.id.to_string(),
                m.name.clone(),
                m.tag_label(),
                num(m.value),
                // The interval belongs to the median: a best-of value gets none.
                st.filter(|s| s.median == m.value)
                    .map_or(String::new(), |s| {
                        format!("±{:.2}%", s.relative_half_width() * 100.0)
                    }),
                m.unit.clone(),
                st.map_or(String::new(), |s| s.n.to_string()),
                st.and_then(|s| s.stop_reason)
                    .map_or(String::new(), |s| s.as_str().into()),
                status.clone(),
            ]);
        }
    }
    rows
}

/// Per-result notes: validation, quality, error, warnings.
fn result_notes(run: &BenchmarkSuiteRun) -> Vec<String> {
    let mut out = Vec::new();
    for r in &run.benchmarks {
        let id = r.spec.id.to_string();
        if let Some(v) = &r.validation {
            out.push(format!(
                "{id}: validation {}: {}",
                if v.passed { "passed" } else { "FAILED" },
                v.message
            ));
        }
        if let Some(e) = &r.error_message {
            out.push(format!("{id}: {}: {e}", r.status.as_str()));
        }
        if let Some(q) = r.quality.filter(|q| *q != warpt_model::Quality::Good) {
            out.push(format!(
                "{id}: quality {}: {}",
                q.as_str(),
                r.quality_reasons.join("; ")
            ));
        }
        for w in &r.warnings {
            out.push(format!("{id}: warning: {w}"));
        }
    }
    out
}

/// The Markdown report.
pub fn markdown(input: &Input) -> String {
    let mut s = String::from("# warpt report\n\n## Environment\n\n");
    let env = environment(input);
    s += &format!(
        "| | {} |\n|---|{}\n",
        input
            .runs
            .iter()
            .map(|(l, _)| warpt_model::escape::markdown(l))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(input.runs.len())
    );
    for (field, values) in &env {
        let cells: Vec<String> = values
            .iter()
            .map(|v| warpt_model::escape::markdown(v))
            .collect();
        s += &format!("| {field} | {} |\n", cells.join(" | "));
    }
    for (label, run) in &input.runs {
        s += &format!("\n## Results: {}\n\n", warpt_model::escape::markdown(label));
        s += &format!(
            "| {} |\n|{}\n",
            RESULT_HEADER.join(" | "),
            "---|".repeat(RESULT_HEADER.len())
        );
        for row in result_rows(run) {
            let cells: Vec<String> = row
                .iter()
                .map(|c| warpt_model::escape::markdown(c))
                .collect();
            s += &format!("| {} |\n", cells.join(" | "));
        }
        let notes = result_notes(run);
        if !notes.is_empty() {
            s += "\n";
            for n in notes {
                s += &format!("- {}\n", warpt_model::escape::markdown(&n));
            }
        }
    }
    for c in &input.comparisons {
        s += &format!(
            "\n## Comparison: {} against {}\n\n",
            warpt_model::escape::markdown(&c.current),
            warpt_model::escape::markdown(&c.base)
        );
        s += &render::markdown(c);
    }
    s
}

/// The JSON report: the runs, and every later run compared with the first.
pub fn json(input: &Input) -> serde_json::Value {
    serde_json::json!({
        "runs": input.runs.iter().map(|(label, run)| serde_json::json!({"label": label, "run": run})).collect::<Vec<_>>(),
        "comparisons": input.comparisons,
    })
}

pub mod html;
pub(crate) mod interactive;
mod labels;
mod serving;
pub use html::html;
