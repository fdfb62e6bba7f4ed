//! A comparison as text for a terminal (benchstat-like), as Markdown, and as JSON.

use crate::compare::{Comparison, Figure, MetricComparison};

/// A value with about four significant digits (the notation of every
/// warpt table).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.01 || a == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.3e}")
    }
}

fn figure(f: &Figure) -> String {
    match f.ci95 {
        Some((lo, hi)) if f.median != 0.0 => {
            let half = (hi - lo) / 2.0 / f.median.abs() * 100.0;
            format!("{} ±{:.1}%", num(f.median), half)
        }
        _ => num(f.median),
    }
}

fn p_text(m: &MetricComparison) -> String {
    match (m.p_value, m.q_value) {
        (Some(p), Some(q)) => {
            let show = |v: f64| {
                if v < 0.001 {
                    "<0.001".to_string()
                } else {
                    format!("={v:.3}")
                }
            };
            format!("p{} q{}", show(p), show(q))
        }
        _ => m.method.clone(),
    }
}

fn rows(c: &Comparison) -> Vec<[String; 7]> {
    c.metrics
        .iter()
        .map(|m| {
            [
                m.label(),
                format!("{} {}", figure(&m.base), m.unit),
                format!("{} {}", figure(&m.current), m.unit),
                format!("{:+.2}%", m.change_pct),
                format!("x{:.3}", m.speedup),
                p_text(m),
                m.verdict.as_str().to_string(),
            ]
        })
        .collect()
}

const HEADER: [&str; 7] = [
    "metric", "base", "current", "change", "speedup", "test", "verdict",
];

fn notes(c: &Comparison) -> Vec<String> {
    let mut out = vec![format!(
        "{} of {} metrics tested (Mann-Whitney U, >= 4 samples a side); Benjamini-Hochberg keeps the \
         false discovery rate at {:.0}%; changes within ±{}% are ~",
        c.tested(),
        c.metrics.len(),
        c.alpha * 100.0,
        c.threshold_pct
    )];
    if !c.only_base.is_empty() {
        out.push(format!("only in base: {}", c.only_base.join("; ")));
    }
    if !c.only_current.is_empty() {
        out.push(format!("only in current: {}", c.only_current.join("; ")));
    }
    for w in &c.warnings {
        out.push(format!("warning: the runs differ: {w}"));
    }
    out
}

/// Aligned columns for a terminal.
pub fn text(c: &Comparison) -> String {
    let body = rows(c);
    let mut width = HEADER.map(str::len);
    for r in &body {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut s = format!("base:    {}\ncurrent: {}\n\n", c.base, c.current);
    s += &line(&HEADER.map(String::from));
    for r in &body {
        s += &line(r);
    }
    s += "\n";
    for n in notes(c) {
        s += &n;
        s += "\n";
    }
    s
}

/// A Markdown table with the notes below it.
pub fn markdown(c: &Comparison) -> String {
    let mut s = format!(
        "**base:** `{}`  \n**current:** `{}`\n\n| {} |\n|{}\n",
        c.base,
        c.current,
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for r in rows(c) {
        let cells: Vec<String> = r.iter().map(|x| crate::escape::markdown(x)).collect();
        s += &format!("| {} |\n", cells.join(" | "));
    }
    s += "\n";
    for n in notes(c) {
        s += &format!("- {}\n", crate::escape::markdown(&n));
    }
    s
}

/// The comparison as pretty JSON.
pub fn json(c: &Comparison) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(c)
}
