//! github-action-benchmark's `customBiggerIsBetter` and
//! `customSmallerIsBetter` inputs: `[{name, unit, value, range, extra}]`.

use serde_json::{Value, json};

use super::{bench_name, finite_metrics};
use crate::format::{Document, ExportError, Format, Run, RunExport};

/// github-action-benchmark's two lists: one file each, or one object on stdout.
pub struct Gab;

impl Format<Run> for Gab {
    fn render(&self, input: &RunExport<'_>) -> Result<Document, ExportError> {
        let run = input.run;
        let (mut bigger, mut smaller) = (Vec::new(), Vec::new());
        for (r, m) in finite_metrics(run) {
            let mut e = json!({
                "name": format!("{} {}", bench_name(r, m), m.name),
                "unit": m.unit,
                "value": m.value,
            });
            if let Some(s) = m.stats.as_ref().filter(|s| s.median == m.value) {
                e["range"] = json!(format!("± {:.4}", (s.ci95_high - s.ci95_low) / 2.0));
                e["extra"] = json!(format!("n={} run={}", s.n, run.id));
            }
            if m.higher_is_better {
                bigger.push(e);
            } else {
                smaller.push(e);
            }
        }
        let (bigger, smaller) = (Value::Array(bigger), Value::Array(smaller));
        let pretty = |v: &Value| serde_json::to_string_pretty(v).map(|s| s + "\n");
        Ok(Document::Parts {
            whole: pretty(&json!({
                "customBiggerIsBetter": bigger,
                "customSmallerIsBetter": smaller,
            }))?,
            parts: vec![("bigger", pretty(&bigger)?), ("smaller", pretty(&smaller)?)],
        })
    }
}
