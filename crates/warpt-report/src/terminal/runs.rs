//! `warpt results list`: the stored runs, one line each.

use comfy_table::Cell;
use warpt_model::RunSummary;

use super::table;

/// The runs as a table: id, start, kind, suite, machine, passed of all,
/// and where the run came from.
pub fn runs(runs: &[RunSummary]) -> String {
    let mut t = table(&[
        "run", "started", "kind", "suite", "machine", "passed", "source", "labels",
    ]);
    for r in runs {
        let mut about = warpt_model::labels::label_text(&r.labels);
        if let Some(d) = &r.description {
            about = if about.is_empty() {
                d.clone()
            } else {
                format!("{about} — {d}")
            };
        }
        t.add_row(vec![
            Cell::new(&r.id),
            Cell::new(r.start_time.as_deref().unwrap_or("-")),
            Cell::new(&r.kind),
            Cell::new(&r.suite),
            Cell::new(r.hostname.as_deref().unwrap_or("-")),
            Cell::new(format!("{}/{}", r.passed, r.benchmarks)),
            Cell::new(&r.source),
            Cell::new(about),
        ]);
    }
    t.to_string()
}
