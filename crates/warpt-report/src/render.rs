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

fn band(m: &MetricComparison) -> String {
    format!("±{:.1}% {}", m.band_pct, m.noise_source.as_str())
}

fn rows(c: &Comparison) -> Vec<[String; 8]> {
    c.metrics
        .iter()
        .map(|m| {
            [
                m.label(),
                format!("{} {}", figure(&m.base), m.unit),
                format!("{} {}", figure(&m.current), m.unit),
                format!("{:+.2}%", m.change_pct),
                format!("x{:.3}", m.speedup),
                band(m),
                p_text(m),
                m.verdict.as_str().to_string(),
            ]
        })
        .collect()
}

const HEADER: [&str; 8] = [
    "metric", "base", "current", "change", "speedup", "band", "test", "verdict",
];

/// What the comparison could and could not claim, in words.
fn notes(c: &Comparison) -> Vec<String> {
    let n = c.counts;
    let mut out = vec![format!(
        "{} improved, {} regressed, {} ~, {} inconclusive (of {} metrics)",
        n.improved,
        n.regressed,
        n.unchanged,
        n.inconclusive,
        c.metrics.len()
    )];
    let (tb, tc) = c.trials;
    out.push(if c.duet {
        format!(
            "duet: {tb} rounds of A and B at the same time, each on its own half of the CPUs \
             (swapped every round); verdicts from the mean ratio of each two rounds, which \
             cancels what the host did to both and a difference between the halves \
             (signed-rank from 6 couples, paired t below)"
        )
    } else if c.paired {
        format!(
            "interleaved A/B: {tb} paired trials; verdicts from the per-round ratios \
             (signed-rank from 6 pairs, paired t below)"
        )
    } else if tb >= 3 && tc >= 3 {
        format!(
            "trials: {tb} base, {tc} current; verdicts from the trial medians (the run is the unit \
             of replication: Mann-Whitney U from 4 a side, Welch's t on logs below)"
        )
    } else {
        format!(
            "{tb} run(s) base, {tc} current: the test on samples only says whether the runs differ; \
             verdicts rest on the noise band (compare runs made with --repeat 3 or more for a test \
             across runs)"
        )
    });
    let sources = |s: crate::NoiseSource| c.metrics.iter().filter(|m| m.noise_source == s).count();
    out.push(format!(
        "band: the larger of --threshold ±{}% and the noise band, {} x the run-to-run spread \
         (CV of whole-run medians, raised to its upper 90% bound for the runs it was measured \
         over) x sqrt((1/n_base + 1/n_current) / 2); spread from a noise profile for {}, \
         history for {}, assumed for {}, the compared trials alone for {}, noise unknown for {} \
         metrics",
        c.threshold_pct,
        c.noise_k,
        sources(crate::NoiseSource::Profile),
        sources(crate::NoiseSource::History),
        sources(crate::NoiseSource::Assumed),
        sources(crate::NoiseSource::Trials),
        sources(crate::NoiseSource::Unknown),
    ));
    let counted: Vec<&crate::compare::MetricComparison> = c
        .metrics
        .iter()
        .filter(|m| m.noise_source == crate::NoiseSource::Counts)
        .collect();
    if !counted.is_empty() {
        let identical = counted
            .iter()
            .filter(|m| m.noise_cv_pct == Some(0.0) && m.change_pct == 0.0)
            .count();
        out.push(format!(
            "{} counted metrics (instructions, cache misses, estimated cycles) judged on the counts \
             themselves, no noise band: the band is the larger of --count-threshold ±{}% and {} x \
             the counts' own spread; {identical} counted identically on both sides",
            counted.len(),
            c.count_threshold_pct,
            crate::compare::counted::SPREAD_K,
        ));
    }
    let pooled = c
        .metrics
        .iter()
        .filter(|m| m.noise_pooled_trials > 0)
        .count();
    if pooled > 0 {
        out.push(format!(
            "spread of {pooled} metrics pooled with their compared trials' own (3 or more a \
             side: they are runs of unchanged code too)"
        ));
    }
    out.push(format!(
        "{} of {} metrics tested; Benjamini-Hochberg keeps the false discovery rate at {:.0}%",
        c.tested(),
        c.metrics.len(),
        c.alpha * 100.0
    ));
    let probed: Vec<f64> = c
        .metrics
        .iter()
        .filter(|m| m.regime.is_none())
        .filter_map(|m| m.regime_shift_pct)
        .collect();
    if !probed.is_empty() {
        out.push(format!(
            "bands of {} metrics widened by what the two runs' regime probes (clock, FP \
             throughput, scaling, cache canaries) differed where they reach: median ±{:.1}%, at \
             most ±{:.1}%",
            probed.len(),
            warpt_stats::median(&probed),
            probed.iter().copied().fold(0.0, f64::max)
        ));
    }
    for m in c
        .metrics
        .iter()
        .filter(|m| m.reason.is_none() && m.regime.is_some())
    {
        out.push(format!(
            "band of {} widened by ±{:.1}% for a host regime: {}",
            m.label(),
            m.regime_shift_pct.unwrap_or_default(),
            m.regime.as_deref().unwrap_or_default()
        ));
    }
    for m in c.metrics.iter().filter(|m| m.reason.is_some()) {
        out.push(format!(
            "inconclusive: {}: {}",
            m.label(),
            m.reason.as_deref().unwrap_or_default()
        ));
    }
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
        let cells: Vec<String> = r.iter().map(|x| warpt_model::escape::markdown(x)).collect();
        s += &format!("| {} |\n", cells.join(" | "));
    }
    s += "\n";
    for n in notes(c) {
        s += &format!("- {}\n", warpt_model::escape::markdown(&n));
    }
    s
}

/// The pull-request comment of `ci pr`: a one-line verdict on `head`
/// against `base`, the trials it rests on (`rounds` of `planned` when
/// interrupted early), then the comparison as Markdown.
pub fn pr_comment(
    c: &Comparison,
    base: &str,
    head: &str,
    rounds: usize,
    planned: Option<u32>,
) -> String {
    let summary = if c.metrics.is_empty() {
        "no metric is in both runs".to_string()
    } else if c.regressed() {
        format!("**regression**: {head} is slower than {base}")
    } else if c.counts.improved > 0 {
        format!("**improvement**: {head} is faster than {base}, nothing regressed")
    } else if c.inconclusive() {
        format!("**inconclusive**: too noisy to tell {head} from {base}")
    } else {
        format!("no change beyond the noise between {base} and {head}")
    };
    let cut = planned.map_or(String::new(), |n| {
        format!(" (interrupted: {rounds} of {n} rounds)")
    });
    format!(
        "### warpt: {summary}\n\n{rounds} interleaved trials per side on one machine{cut}.\n\n{}",
        markdown(c)
    )
}

/// The comparison as pretty JSON.
pub fn json(c: &Comparison) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(c)
}
