//! `regressions.md`: a harness run against an earlier one (`--compare-to`).
//!
//! Benchmarks are matched by id and combination. A **latency regression**
//! is a p50 more than the threshold (10% by default) above the earlier
//! one, with the two medians' 95% CIs apart; **accuracy drift** is an
//! accuracy figure (rmse, max_abs_error, max_rel_error, relative_error) that moved by more
//! than its threshold (1e-3); a benchmark that passed before and does not
//! now is a regression too.

use std::fmt::Write;

use warpt_model::escape::markdown as cell;

use serde::Serialize;

use crate::summary::{Entry, Summary};

/// When a difference is a regression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// p50 latency increase, percent.
    pub latency_pct: f64,
    /// Absolute change of an accuracy figure.
    pub accuracy_drift: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            latency_pct: 10.0,
            accuracy_drift: 1e-3,
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The benchmark (`id [tags]`).
    pub key: String,
    /// `latency`, `accuracy:<figure>` or `status`.
    pub kind: String,
    /// The earlier figure.
    pub before: String,
    /// The figure now.
    pub after: String,
    /// The change, for people (`+103.2%`).
    pub change: String,
}

/// The comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Benchmarks found in both runs.
    pub compared: usize,
    /// Regressions and drift.
    pub regressions: Vec<Change>,
    /// Latency improvements beyond the threshold.
    pub improvements: Vec<Change>,
    /// Benchmarks only in the earlier run.
    pub missing: Vec<String>,
    /// Benchmarks only in this run.
    pub new: Vec<String>,
}

fn p50_change(b: &Entry, a: &Entry) -> Option<(f64, bool)> {
    let (lb, la) = (b.latency_ms.as_ref()?, a.latency_ms.as_ref()?);
    let change = (la.p50 - lb.p50) / lb.p50 * 100.0;
    let apart = la.ci95[0] > lb.ci95[1] || la.ci95[1] < lb.ci95[0];
    Some((change, apart))
}

/// Compares `after` with `before`.
pub fn compare(before: &Summary, after: &Summary, t: &Thresholds) -> Report {
    let mut r = Report::default();
    for a in &after.benchmarks {
        let Some(b) = before.benchmarks.iter().find(|b| b.key() == a.key()) else {
            r.new.push(a.key());
            continue;
        };
        r.compared += 1;
        if b.status == "passed" && a.status != "passed" && a.status != "skipped" {
            r.regressions.push(Change {
                key: a.key(),
                kind: "status".into(),
                before: b.status.clone(),
                after: a.status.clone(),
                change: a
                    .error
                    .as_deref()
                    .and_then(|m| m.lines().next())
                    .unwrap_or("")
                    .to_string(),
            });
        }
        if let Some((change, apart)) = p50_change(b, a) {
            let fig = |e: &Entry| {
                e.latency_ms
                    .as_ref()
                    .map_or(String::new(), |l| format!("{:.4} ms", l.p50))
            };
            let c = Change {
                key: a.key(),
                kind: "latency".into(),
                before: fig(b),
                after: fig(a),
                change: format!("{change:+.1}%"),
            };
            if apart && change > t.latency_pct {
                r.regressions.push(c);
            } else if apart && change < -t.latency_pct {
                r.improvements.push(c);
            }
        }
        if let (Some(x), Some(y)) = (&b.accuracy, &a.accuracy) {
            for (name, before, after) in [
                ("rmse", x.rmse, y.rmse),
                ("max_abs_error", x.max_abs_error, y.max_abs_error),
                ("max_rel_error", x.max_rel_error, y.max_rel_error),
                ("relative_error", x.relative_error, y.relative_error),
            ] {
                let d = after - before;
                if d.abs() > t.accuracy_drift || (before.is_finite() != after.is_finite()) {
                    r.regressions.push(Change {
                        key: a.key(),
                        kind: format!("accuracy:{name}"),
                        before: format!("{before:.3e}"),
                        after: format!("{after:.3e}"),
                        change: format!("{d:+.3e}"),
                    });
                }
            }
        }
    }
    for b in &before.benchmarks {
        if !after.benchmarks.iter().any(|a| a.key() == b.key()) {
            r.missing.push(b.key());
        }
    }
    r
}

/// `regressions.md`.
pub fn markdown(r: &Report, before: &str, after: &str, t: &Thresholds) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Regressions\n");
    let _ = writeln!(
        out,
        "`{}` against `{}`: {} benchmarks compared. Thresholds: p50 latency +{}% with the 95% CIs \
         apart; accuracy drift {:e}.\n",
        cell(after),
        cell(before),
        r.compared,
        t.latency_pct,
        t.accuracy_drift
    );
    let table = |out: &mut String, rows: &[Change]| {
        let _ = writeln!(out, "| benchmark | what | before | now | change |");
        let _ = writeln!(out, "|---|---|---:|---:|---|");
        for c in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&c.key),
                c.kind,
                cell(&c.before),
                cell(&c.after),
                cell(&c.change)
            );
        }
    };
    if r.regressions.is_empty() {
        let _ = writeln!(out, "No regressions.\n");
    } else {
        let _ = writeln!(out, "## {} regression(s)\n", r.regressions.len());
        table(&mut out, &r.regressions);
        out.push('\n');
    }
    if !r.improvements.is_empty() {
        let _ = writeln!(out, "## Improvements\n");
        table(&mut out, &r.improvements);
        out.push('\n');
    }
    if !r.missing.is_empty() {
        let _ = writeln!(out, "Only in the earlier run: {}\n", r.missing.join(", "));
    }
    if !r.new.is_empty() {
        let _ = writeln!(out, "New in this run: {}\n", r.new.join(", "));
    }
    out
}
