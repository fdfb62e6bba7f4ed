//! JUnit XML: one testcase per benchmark; a failed benchmark, or one with a
//! metric that the baseline comparison judged regressed, is a failure;
//! skipped is skipped; inconclusive metrics are named, with why, in the
//! case's output.

use warpt_model::escape;
use warpt_model::{BenchmarkSuiteRun, RunStatus};
use warpt_report::Verdict;
use warpt_report::compare::{Comparison, MetricComparison};

use super::bench_name;
use crate::format::{Document, ExportError, Format, Run, RunExport};

/// JUnit XML.
pub struct Junit;

impl Format<Run> for Junit {
    fn render(&self, input: &RunExport<'_>) -> Result<Document, ExportError> {
        Ok(Document::Text(junit(input.run, input.baseline)))
    }
}

/// JUnit XML: one testcase per benchmark; a failed benchmark, or one with a
/// metric that `comparison` judged regressed, is a failure; skipped is
/// skipped; inconclusive metrics are named, with why, in the case's output.
fn junit(run: &BenchmarkSuiteRun, comparison: Option<&Comparison>) -> String {
    let mut cases = String::new();
    let (mut failures, mut skipped) = (0, 0);
    for r in &run.benchmarks {
        let secs = (r.end_time.as_millisecond() - r.start_time.as_millisecond()) as f64 / 1000.0;
        let judged = |verdict: Verdict| -> Vec<&MetricComparison> {
            comparison
                .map(|c| {
                    c.metrics
                        .iter()
                        .filter(|m| {
                            m.verdict == verdict
                                && m.suite == r.spec.id.suite
                                && m.benchmark == r.spec.id.name
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let regressed: Vec<String> = judged(Verdict::Regressed)
            .iter()
            .map(|m| format!("{} {:+.2}%", m.label(), m.change_pct))
            .collect();
        let inconclusive: Vec<String> = judged(Verdict::Inconclusive)
            .iter()
            .map(|m| {
                format!(
                    "inconclusive: {} {:+.2}%: {}",
                    m.label(),
                    m.change_pct,
                    m.reason.as_deref().unwrap_or_default()
                )
            })
            .collect();
        cases += &format!(
            "    <testcase classname=\"warpt.{}\" name=\"{}\" time=\"{secs:.3}\">\n",
            escape::xml(&r.spec.id.suite),
            escape::xml(&r.spec.id.name)
        );
        match r.status {
            RunStatus::Skipped => {
                skipped += 1;
                cases += &format!(
                    "      <skipped message=\"{}\"/>\n",
                    escape::xml(r.error_message.as_deref().unwrap_or("skipped"))
                );
            }
            RunStatus::Passed if regressed.is_empty() => {}
            RunStatus::Passed => {
                failures += 1;
                cases += &format!(
                    "      <failure type=\"regression\" message=\"regressed: {}\"/>\n",
                    escape::xml(&regressed.join("; "))
                );
            }
            other => {
                failures += 1;
                cases += &format!(
                    "      <failure type=\"{}\" message=\"{}\"/>\n",
                    other.as_str(),
                    escape::xml(r.error_message.as_deref().unwrap_or(other.as_str()))
                );
            }
        }
        let lines: Vec<String> = r
            .metrics
            .iter()
            .map(|m| {
                format!(
                    "{} = {} {}",
                    bench_name(r, m).replace('/', " ") + " " + &m.name,
                    m.value,
                    m.unit
                )
            })
            .chain(inconclusive)
            .collect();
        cases += &format!(
            "      <system-out>{}</system-out>\n    </testcase>\n",
            escape::xml(&lines.join("\n"))
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"warpt\" tests=\"{n}\" failures=\"{failures}\" \
         skipped=\"{skipped}\">\n  <testsuite name=\"{suite}\" id=\"{id}\" tests=\"{n}\" failures=\"{failures}\" \
         skipped=\"{skipped}\">\n{cases}  </testsuite>\n</testsuites>\n",
        n = run.benchmarks.len(),
        suite = escape::xml(&run.suite),
        id = escape::xml(&run.id),
    )
}
