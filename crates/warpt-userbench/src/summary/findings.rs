//! Key findings and recommendations: rules over the figures, each
//! sentence citing the numbers it rests on.

use super::{Entry, Summary};

/// A median known more loosely than this (CI half-width over the median)
/// is called out as noisy.
const NOISY: f64 = 0.05;

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1} ms")
    } else if v >= 1.0 {
        format!("{v:.3} ms")
    } else {
        format!("{:.3} µs", v * 1e3)
    }
}

fn ci(e: &Entry) -> String {
    e.speedup_ci95
        .map(|[lo, hi]| format!(", 95% CI {lo:.2}–{hi:.2}x"))
        .unwrap_or_default()
}

/// Fills `findings` and `recommendations`.
pub(super) fn fill(s: &mut Summary) {
    let mut f = Vec::new();
    let mut r = Vec::new();
    let o = &s.overall;
    f.push(format!(
        "{} benchmarks in {} chapters: {} passed, {} failed, {} skipped{}.",
        o.total,
        s.chapters,
        o.passed,
        o.failed,
        o.skipped,
        o.geomean_speedup
            .map(|g| format!("; geometric-mean speedup of the optimized variants {g:.2}x"))
            .unwrap_or_default()
    ));
    let variants: Vec<&Entry> = s
        .benchmarks
        .iter()
        .filter(|e| e.speedup.is_some())
        .collect();
    if let Some(best) = variants.iter().max_by(|a, b| {
        a.speedup
            .unwrap_or(0.0)
            .total_cmp(&b.speedup.unwrap_or(0.0))
    }) {
        f.push(format!(
            "Top performer: {} at {:.2}x its baseline{} (p50 {} against {}).",
            best.key(),
            best.speedup.unwrap_or(0.0),
            ci(best),
            best.latency_ms.as_ref().map_or("?".into(), |l| ms(l.p50)),
            best.baseline_latency_ms.map_or("?".into(), ms),
        ));
    }
    for e in &variants {
        let sp = e.speedup.unwrap_or(0.0);
        if e.regression {
            f.push(format!(
                "Regression: {} is {:.2}x slower than its baseline{}.",
                e.key(),
                1.0 / sp,
                ci(e)
            ));
            r.push(format!(
                "Investigate {}: it is slower than the code it optimizes ({:.2}x, verdict {}); \
                 keep the baseline until it is fixed.",
                e.key(),
                sp,
                e.speedup_verdict.as_deref().unwrap_or("?")
            ));
        } else if let Some([lo, hi]) = e.speedup_ci95
            && lo <= 1.0
            && hi >= 1.0
        {
            r.push(format!(
                "{}: no reliable speedup ({sp:.2}x, 95% CI {lo:.2}–{hi:.2}x); keep the simpler \
                 code, or measure with more --rounds to tell.",
                e.key()
            ));
        }
    }
    for e in s.benchmarks.iter().filter(|e| e.accuracy.is_some()) {
        if e.status == "failed"
            && e.error
                .as_deref()
                .is_some_and(|m| m.starts_with("wrong answer"))
        {
            f.push(format!(
                "Wrong answer: {} ({}).",
                e.key(),
                e.accuracy_note.as_deref().unwrap_or("")
            ));
            r.push(format!(
                "Fix {} before its speed counts: its output differs from the baseline's ({}).",
                e.key(),
                e.accuracy_note.as_deref().unwrap_or("")
            ));
        }
    }
    for e in s
        .benchmarks
        .iter()
        .filter(|e| !matches!(e.status.as_str(), "passed" | "skipped"))
        .filter(|e| !e.error.as_deref().unwrap_or("").starts_with("wrong answer"))
        .filter(|e| !e.regression)
    {
        let first = e
            .error
            .as_deref()
            .and_then(|m| m.lines().next())
            .unwrap_or("no message");
        f.push(format!("{} {}: {first}", e.key(), e.status));
        r.push(format!(
            "Fix {} ({}); its per-benchmark JSON has the whole error.",
            e.key(),
            e.status
        ));
    }
    if let Some(slowest) = s
        .benchmarks
        .iter()
        .filter_map(|e| e.latency_ms.as_ref().map(|l| (e, l.p50)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
    {
        f.push(format!(
            "Slowest p50: {} at {}.",
            slowest.0.key(),
            ms(slowest.1)
        ));
    }
    let noisy: Vec<String> = s
        .benchmarks
        .iter()
        .filter_map(|e| {
            let l = e.latency_ms.as_ref()?;
            let w = l.rel_half_width();
            (w > NOISY).then(|| format!("{} (±{:.1}%)", e.key(), w * 100.0))
        })
        .collect();
    if !noisy.is_empty() {
        f.push(format!(
            "Noisy medians (95% CI half-width above {:.0}%): {}.",
            NOISY * 100.0,
            noisy.join(", ")
        ));
        r.push(
            "Give the noisy benchmarks a longer --duration or more --rounds, and run on a quiet \
             machine."
                .into(),
        );
    }
    if r.is_empty() {
        r.push(format!(
            "Nothing to act on: every benchmark passed{}.",
            if variants.is_empty() {
                String::new()
            } else {
                " and no optimized variant is slower than its baseline beyond the threshold".into()
            }
        ));
    }
    s.findings = f;
    s.recommendations = r;
}
