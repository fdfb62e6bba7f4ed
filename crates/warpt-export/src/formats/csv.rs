//! CSV: a header and one row per metric.

use warpt_model::BenchmarkSuiteRun;
use warpt_model::escape;

use crate::format::{Document, ExportError, Format, Run, RunExport};

/// CSV: one row per metric.
pub struct Csv;

impl Format<Run> for Csv {
    fn render(&self, input: &RunExport<'_>) -> Result<Document, ExportError> {
        Ok(Document::Text(csv(input.run)))
    }
}

/// The CSV header.
const CSV_HEADER: &str = "run_id,suite,benchmark,status,metric,tags,value,unit,higher_is_better,n,\
ci95_low,ci95_high,p50,p99,stop_reason";

/// CSV: a header and one row per metric.
fn csv(run: &BenchmarkSuiteRun) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in &run.benchmarks {
        for m in &r.metrics {
            let st = m.stats.as_ref();
            let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let row = [
                run.id.clone(),
                r.spec.id.suite.clone(),
                r.spec.id.name.clone(),
                r.status.as_str().to_string(),
                m.name.clone(),
                m.tags
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(";"),
                m.value.to_string(),
                m.unit.clone(),
                m.higher_is_better.to_string(),
                st.map_or(String::new(), |s| s.n.to_string()),
                opt(st.map(|s| s.ci95_low)),
                opt(st.map(|s| s.ci95_high)),
                opt(st.map(|s| s.p50)),
                opt(st.map(|s| s.p99)),
                st.and_then(|s| s.stop_reason)
                    .map_or(String::new(), |r| r.as_str().to_string()),
            ];
            let cells: Vec<String> = row.iter().map(|c| escape::csv(c)).collect();
            s += &cells.join(",");
            s.push('\n');
        }
    }
    s
}
