//! `harness run`'s table on the terminal.

use comfy_table::{Cell, CellAlignment};

use super::Summary;

/// A harness run for the terminal: one row per benchmark (speedup and
/// accuracy on optimized variants), then the totals.
pub fn table(s: &Summary) -> String {
    let mut t = warpt_report::terminal::table(&[
        "benchmark",
        "tags",
        "status",
        "p50 ms",
        "±95%",
        "speedup",
        "95% CI",
        "accuracy",
    ]);
    for e in &s.benchmarks {
        let (p50, ci) = e.latency_ms.as_ref().map_or(("–".into(), "–".into()), |l| {
            (
                format!("{:.4}", l.p50),
                format!("{:.1}%", l.rel_half_width() * 100.0),
            )
        });
        let accuracy = match (&e.accuracy, &e.accuracy_note) {
            (Some(a), _) => format!("rel {:.1e}", a.relative_error),
            (None, Some(n)) if n.starts_with("not checked") => "not checked".into(),
            _ => "–".into(),
        };
        t.add_row(vec![
            Cell::new(&e.id),
            Cell::new(warpt_model::tag_label(&e.tags)),
            Cell::new(if e.regression { "regressed" } else { &e.status }),
            Cell::new(p50).set_alignment(CellAlignment::Right),
            Cell::new(ci).set_alignment(CellAlignment::Right),
            Cell::new(e.speedup.map_or("–".into(), |v| format!("{v:.2}x")))
                .set_alignment(CellAlignment::Right),
            Cell::new(
                e.speedup_ci95
                    .map_or("–".into(), |[a, b]| format!("{a:.2}–{b:.2}x")),
            ),
            Cell::new(accuracy),
        ]);
    }
    let o = &s.overall;
    format!(
        "{t}\n{} chapters, {} benchmarks: {} passed, {} failed, {} skipped, {} regressed{}\n",
        s.chapters,
        o.total,
        o.passed,
        o.failed,
        o.skipped,
        o.regressed,
        o.geomean_speedup
            .map(|g| format!("; geometric-mean speedup {g:.2}x"))
            .unwrap_or_default()
    )
}
