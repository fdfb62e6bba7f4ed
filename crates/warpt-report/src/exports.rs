//! A run in the formats other tools read: Bencher Metric Format,
//! github-action-benchmark, JUnit XML and CSV.

use serde_json::{Map, Value, json};
use warpt_model::{BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun, RunStatus};

use crate::compare::{Comparison, Verdict};
use crate::escape;

/// `suite/benchmark`, with `[k=v,...]` when the metric has tags.
fn bench_name(r: &BenchmarkRunResult, m: &BenchmarkMetric) -> String {
    let base = format!("{}/{}", r.spec.id.suite, r.spec.id.name);
    if m.tags.is_empty() {
        base
    } else {
        format!("{base}[{}]", m.tag_label())
    }
}

fn metrics(
    run: &BenchmarkSuiteRun,
) -> impl Iterator<Item = (&BenchmarkRunResult, &BenchmarkMetric)> {
    run.benchmarks
        .iter()
        .flat_map(|r| r.metrics.iter().map(move |m| (r, m)))
        .filter(|(_, m)| m.value.is_finite())
}

/// Bencher Metric Format: `{benchmark: {measure: {value, lower_value, upper_value}}}`,
/// the measure being the metric name, the bounds its median's 95% CI.
pub fn bmf(run: &BenchmarkSuiteRun) -> Value {
    let mut out = Map::new();
    for (r, m) in metrics(run) {
        let entry = out
            .entry(bench_name(r, m))
            .or_insert_with(|| Value::Object(Map::new()));
        let mut measure = Map::new();
        measure.insert("value".into(), json!(m.value));
        // The bounds are the median's CI: only for metrics whose value is the
        // median (not, say, a best-of).
        if let Some(s) = m.stats.as_ref().filter(|s| s.median == m.value) {
            measure.insert("lower_value".into(), json!(s.ci95_low));
            measure.insert("upper_value".into(), json!(s.ci95_high));
        }
        if let Value::Object(e) = entry {
            e.insert(m.name.clone(), Value::Object(measure));
        }
    }
    Value::Object(out)
}

/// github-action-benchmark's `customBiggerIsBetter` and
/// `customSmallerIsBetter` inputs: `[{name, unit, value, range, extra}]`.
pub fn gab(run: &BenchmarkSuiteRun) -> (Value, Value) {
    let (mut bigger, mut smaller) = (Vec::new(), Vec::new());
    for (r, m) in metrics(run) {
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
    (Value::Array(bigger), Value::Array(smaller))
}

/// JUnit XML: one testcase per benchmark; a failed benchmark, or one with a
/// metric that `comparison` judged regressed, is a failure; skipped is
/// skipped; inconclusive metrics are named, with why, in the case's output.
pub fn junit(run: &BenchmarkSuiteRun, comparison: Option<&Comparison>) -> String {
    let mut cases = String::new();
    let (mut failures, mut skipped) = (0, 0);
    for r in &run.benchmarks {
        let secs = (r.end_time.as_millisecond() - r.start_time.as_millisecond()) as f64 / 1000.0;
        let judged = |verdict: Verdict| -> Vec<&crate::compare::MetricComparison> {
            comparison
                .map(|c| {
                    c.metrics
                        .iter()
                        .filter(|m| {
                            m.verdict == verdict
                                && m.suite == r.spec.id.suite
                                && m.benchmark == r.spec.id.name
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let regressed: Vec<String> = judged(Verdict::Regressed)
            .iter()
            .map(|m| format!("{} {:+.2}%", m.label(), m.change_pct))
            .collect();
        let inconclusive: Vec<String> = judged(Verdict::Inconclusive)
            .iter()
            .map(|m| {
                format!(
                    "inconclusive: {} {:+.2}%: {}",
                    m.label(),
                    m.change_pct,
                    m.reason.as_deref().unwrap_or_default()
                )
            })
            .collect();
        cases += &format!(
            "    <testcase classname=\"warpt.{}\" name=\"{}\" time=\"{secs:.3}\">\n",
            escape::xml(&r.spec.id.suite),
            escape::xml(&r.spec.id.name)
        );
        match r.status {
            RunStatus::Skipped => {
                skipped += 1;
                cases += &format!(
                    "      <skipped message=\"{}\"/>\n",
                    escape::xml(r.error_message.as_deref().unwrap_or("skipped"))
                );
            }
            RunStatus::Passed if regressed.is_empty() => {}
            RunStatus::Passed => {
                failures += 1;
                cases += &format!(
                    "      <failure type=\"regression\" message=\"regressed: {}\"/>\n",
                    escape::xml(&regressed.join("; "))
                );
            }
            other => {
                failures += 1;
                cases += &format!(
                    "      <failure type=\"{}\" message=\"{}\"/>\n",
                    other.as_str(),
                    escape::xml(r.error_message.as_deref().unwrap_or(other.as_str()))
                );
            }
        }
        let lines: Vec<String> = r
            .metrics
            .iter()
            .map(|m| {
                format!(
                    "{} = {} {}",
                    bench_name(r, m).replace('/', " ") + " " + &m.name,
                    m.value,
                    m.unit
                )
            })
            .chain(inconclusive)
            .collect();
        cases += &format!(
            "      <system-out>{}</system-out>\n    </testcase>\n",
            escape::xml(&lines.join("\n"))
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"warpt\" tests=\"{n}\" failures=\"{failures}\" \
         skipped=\"{skipped}\">\n  <testsuite name=\"{suite}\" id=\"{id}\" tests=\"{n}\" failures=\"{failures}\" \
         skipped=\"{skipped}\">\n{cases}  </testsuite>\n</testsuites>\n",
        n = run.benchmarks.len(),
        suite = escape::xml(&run.suite),
        id = escape::xml(&run.id),
    )
}

/// The CSV header.
pub const CSV_HEADER: &str = "run_id,suite,benchmark,status,metric,tags,value,unit,higher_is_better,n,\
ci95_low,ci95_high,p50,p99,stop_reason";

/// CSV: a header and one row per metric.
pub fn csv(run: &BenchmarkSuiteRun) -> String {
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
