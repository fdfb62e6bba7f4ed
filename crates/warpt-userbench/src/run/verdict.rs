//! What a result says beyond its own measurement: where it sits in the
//! tree, latency pooled over trials, the speedup over its baseline and the
//! accuracy of its answer.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Where a result sits in the tree, in its details.
pub(super) fn label(r: &mut BenchmarkRunResult, unit: &Unit) {
    let mut set = |k: &str, v: &str| {
        r.details
            .insert(k.to_string(), ParamValue::Str(v.to_string()));
    };
    set("chapter", &unit.chapter);
    set("example", &unit.example);
    set("role", unit.role.as_str());
    set("file", &unit.file.display().to_string());
    for (k, v) in &unit.combo.tags {
        r.details.insert(k.clone(), ParamValue::Str(v.clone()));
    }
}

pub(super) fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// Metrics whose samples are per call or per request: pooled over trials.
pub(super) const PER_EVENT: [&str; 3] = ["latency_ms", "ttft_ms", "tpot_ms"];

/// Metric `name` over every sample of every trial.
pub(super) fn pooled(runs: &[BenchmarkSuiteRun], name: &str) -> Option<BenchmarkMetric> {
    let mut template = None;
    let mut samples = Vec::new();
    for run in runs {
        for r in &run.benchmarks {
            if let Some(m) = r.metrics.iter().find(|m| m.name == name) {
                template.get_or_insert_with(|| m.clone());
                samples.extend(m.stats.iter().flat_map(|s| s.samples.iter().copied()));
            }
        }
    }
    let mut m = template?;
    let st = warpt_harness::stats::summarize(&samples)?;
    m.value = st.median;
    m.stats = Some(st);
    Some(m)
}

/// The `speedup` metric and the comparison behind it.
pub(super) fn add_speedup(r: &mut BenchmarkRunResult, base: &Unit, c: Option<&MetricComparison>) {
    let Some(c) = c else {
        r.warnings
            .push("no speedup: the two sides' latency could not be matched".into());
        return;
    };
    let mut tags = c.tags.clone();
    tags.insert("baseline".into(), stem(&base.file));
    tags.insert(
        "optimized".into(),
        r.details
            .get("file")
            .and_then(ParamValue::as_str)
            .map(|f| stem(Path::new(f)))
            .unwrap_or_default(),
    );
    r.metrics.push(BenchmarkMetric {
        name: "speedup".into(),
        value: c.speedup,
        unit: "x".into(),
        higher_is_better: true,
        tags,
        stats: None,
    });
    let mut set = |k: &str, v: ParamValue| {
        r.details.insert(k.to_string(), v);
    };
    if let Some((lo, hi)) = c.ratio_ci95 {
        // The CI is of optimized / baseline; the speedup is its inverse.
        set("speedup_ci95_low", ParamValue::Float(1.0 / hi));
        set("speedup_ci95_high", ParamValue::Float(1.0 / lo));
    }
    if let Some(p) = c.p_value {
        set("speedup_p_value", ParamValue::Float(p));
    }
    set("speedup_method", ParamValue::Str(c.method.clone()));
    if let Some(why) = &c.reason {
        set("speedup_reason", ParamValue::Str(why.clone()));
    }
    set(
        "speedup_verdict",
        ParamValue::Str(c.verdict.as_str().into()),
    );
    set("baseline_latency_ms", ParamValue::Float(c.base.median));
    let regressed = c.verdict == Verdict::Regressed;
    set("regression", ParamValue::Bool(regressed));
    if regressed {
        r.set_status(RunStatus::Failed);
        r.error_message = Some(format!(
            "regression: {:.2}x the baseline's latency ({} vs {}), significantly beyond the threshold ({})",
            1.0 / c.speedup,
            fmt_ms(c.current.median),
            fmt_ms(c.base.median),
            c.method
        ));
    }
}

fn fmt_ms(v: f64) -> String {
    format!("{v:.4} ms")
}

/// The accuracy metrics and verdict: a faster wrong answer fails.
pub(super) fn apply_accuracy(r: &mut BenchmarkRunResult, check: &Result<Accuracy, String>) {
    match check {
        Ok(a) => {
            for (name, value) in [
                ("rmse", a.rmse),
                ("max_error", a.max_error),
                ("relative_error", a.relative_error),
            ] {
                r.metrics.push(BenchmarkMetric {
                    name: name.into(),
                    value,
                    unit: String::new(),
                    higher_is_better: false,
                    tags: r
                        .metrics
                        .first()
                        .map(|m| m.tags.clone())
                        .unwrap_or_default(),
                    stats: None,
                });
            }
            r.details
                .insert("accuracy".into(), ParamValue::Str(a.verdict.clone()));
            if !a.passed {
                r.set_status(RunStatus::Failed);
                r.validation = Some(Validation::fail(format!(
                    "wrong answer against the baseline: {}",
                    a.verdict
                )));
                r.error_message = Some(format!("wrong answer against the baseline: {}", a.verdict));
            }
        }
        Err(note) => {
            r.details.insert(
                "accuracy".into(),
                ParamValue::Str(format!("not checked: {note}")),
            );
        }
    }
}
