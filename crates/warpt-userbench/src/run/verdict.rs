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
pub(super) const PER_EVENT: [&str; 4] =
    ["latency_ms", "throughput_ops_per_sec", "ttft_ms", "tpot_ms"];

/// Metric `name` over every sample of every trial.
pub(super) fn pooled(runs: &[BenchmarkSuiteRun], name: &str) -> Option<BenchmarkMetric> {
    let mut template = None;
    let mut samples = Vec::new();
    for run in runs {
        for r in &run.benchmarks {
            if let Some(m) = r.metric(name) {
                template.get_or_insert_with(|| m.clone());
                samples.extend(m.stats.iter().flat_map(|s| s.samples.iter().copied()));
            }
        }
    }
    let mut m = template?;
    let st = warpt_model::MetricStats::summarize(&samples)?;
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
    set("regression", ParamValue::Bool(false));
}

/// Decides the regressions of a whole run: a variant regressed when its
/// pair's comparison said so and its p-value, Benjamini-Hochberg adjusted
/// over every pair of the run, is below `alpha` — with hundreds of pairs,
/// one test each at 5% would otherwise flag identical code by chance. A
/// regressed variant fails.
pub(super) fn judge_regressions(results: &mut [BenchmarkRunResult], alpha: f64) {
    let p = |r: &BenchmarkRunResult| {
        r.details
            .get("speedup_p_value")
            .and_then(ParamValue::as_f64)
            .unwrap_or(f64::NAN)
    };
    let ps: Vec<f64> = results.iter().map(p).collect();
    let qs = warpt_stats::benjamini_hochberg(&ps);
    for (r, q) in results.iter_mut().zip(qs) {
        if !q.is_finite() {
            continue;
        }
        r.details
            .insert("speedup_q_value".into(), ParamValue::Float(q));
        let said = r
            .details
            .get("speedup_verdict")
            .and_then(ParamValue::as_str)
            == Some("regressed");
        if !(said && q < alpha) {
            continue;
        }
        r.details
            .insert("regression".into(), ParamValue::Bool(true));
        if r.status == RunStatus::Passed {
            let speedup = r
                .metrics
                .iter()
                .find(|m| m.name == "speedup")
                .map_or(f64::NAN, |m| m.value);
            let base = r
                .details
                .get("baseline_latency_ms")
                .and_then(ParamValue::as_f64)
                .unwrap_or(f64::NAN);
            let now = r
                .metrics
                .iter()
                .find(|m| m.name == "latency_ms")
                .map_or(f64::NAN, |m| m.value);
            r.set_status(RunStatus::Failed);
            r.error_message = Some(format!(
                "regression: {:.2}x the baseline's latency ({} vs {}), significantly beyond the \
                 threshold (q = {q:.2e} over the run's pairs)",
                1.0 / speedup,
                fmt_ms(now),
                fmt_ms(base),
            ));
        }
    }
}

fn fmt_ms(v: f64) -> String {
    format!("{v:.4} ms")
}

/// The accuracy metrics and verdict against `expected` (what the answer
/// must match: "the baseline", "its reference"): a faster wrong answer
/// fails.
pub(super) fn apply_accuracy(
    r: &mut BenchmarkRunResult,
    check: &Result<Accuracy, String>,
    expected: &str,
) {
    match check {
        Ok(a) => {
            for (name, value) in [
                ("rmse", a.rmse),
                ("max_abs_error", a.max_abs_error),
                ("max_rel_error", a.max_rel_error),
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
                let why = format!("wrong answer against {expected}: {}", a.verdict);
                r.validation = Some(Validation::fail(why.clone()));
                r.error_message = Some(why);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(p: f64, verdict: &str) -> BenchmarkRunResult {
        let mut r = BenchmarkRunResult::new(
            suite::spec("ch/x/optimized_x"),
            suite::default_params(),
            RunStatus::Passed,
            Timestamp::now(),
        );
        r.details
            .insert("speedup_p_value".into(), ParamValue::Float(p));
        r.details
            .insert("speedup_verdict".into(), ParamValue::Str(verdict.into()));
        r
    }

    #[test]
    fn a_regression_must_survive_the_runs_multiple_testing() {
        // Alone, p = 0.04 regresses; among three more pairs it is chance.
        let mut alone = vec![variant(0.04, "regressed")];
        judge_regressions(&mut alone, 0.05);
        assert_eq!(alone[0].status, RunStatus::Failed);
        assert_eq!(alone[0].details["regression"], ParamValue::Bool(true));
        let mut many = vec![
            variant(0.04, "regressed"),
            variant(0.5, "~"),
            variant(0.6, "~"),
            variant(0.7, "~"),
        ];
        judge_regressions(&mut many, 0.05);
        assert_eq!(many[0].status, RunStatus::Passed);
        assert!(many[0].details["speedup_q_value"].as_f64().unwrap() > 0.05);
        // A strong one stays a regression among them.
        let mut strong = vec![variant(1e-6, "regressed"), variant(0.5, "~")];
        judge_regressions(&mut strong, 0.05);
        assert_eq!(strong[0].status, RunStatus::Failed);
        assert_eq!(strong[1].status, RunStatus::Passed);
    }
}
