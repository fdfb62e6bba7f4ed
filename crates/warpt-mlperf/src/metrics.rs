//! From a test's outcome to warpt's metrics and details: the scenario's
//! headline (one figure per test), per-sample series with statistics, the
//! validity flags, every effective setting, and LoadGen's recommendation
//! as a warning when the run is INVALID.

use std::time::Duration;

use warpt_harness::{Convert, Measure, Measured, SeriesDef};
use warpt_model::{BenchmarkMetric, ParamValue};

use crate::bench::Outcome;
use crate::loadgen::{Mode, Scenario};

/// A metric that is one figure per test (no statistics).
pub fn single(name: &str, value: f64, unit: &str, higher_is_better: bool) -> BenchmarkMetric {
    BenchmarkMetric::single(name, value, unit, higher_is_better)
}

/// The metrics and details of an outcome. The headline of each scenario
/// is one figure per test (`latency_p90_ms`, `latency_p99_ms`, `qps`,
/// `samples_per_s`); per-sample latencies and LLM TTFT / TPOT carry
/// full statistics.
pub fn measured(outcome: &Outcome, measure: &mut Measure<'_>) -> Measured {
    let s = &outcome.summary;
    let st = &s.settings;
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut metrics = Vec::new();
    let elapsed = Duration::from_secs_f64(s.result.max_latency_s);
    let mut series: Vec<(SeriesDef, Vec<f64>)> = Vec::new();
    if st.scenario != Scenario::Offline {
        series.push((
            SeriesDef::new("latency_ms", "ms", false, &[], Convert::Time(1e3)),
            s.samples.sorted.iter().map(|&ns| ns as f64 / 1e9).collect(),
        ));
    }
    // Offline has no meaningful per-sample latency (every sample is queued
    // at the start); LoadGen reports only tokens/s there, and so does warpt.
    if st.token_bounds.is_some() && st.scenario != Scenario::Offline {
        for (name, lat) in [("ttft_ms", &s.ttft), ("tpot_ms", &s.tpot)] {
            if !lat.sorted.is_empty() {
                series.push((
                    SeriesDef::new(name, "ms", false, &[], Convert::Time(1e3)),
                    lat.sorted.iter().map(|&ns| ns as f64 / 1e9).collect(),
                ));
            }
        }
    }
    for (def, values) in series {
        let rows: Vec<Vec<f64>> = values.into_iter().map(|v| vec![v]).collect();
        metrics.extend(
            measure
                .record(std::slice::from_ref(&def), &rows, 0, elapsed)
                .metrics,
        );
    }
    if st.mode != Mode::AccuracyOnly {
        match st.scenario {
            Scenario::SingleStream => metrics.push(single(
                "latency_p90_ms",
                ms(s.early_stopping_latency_ss.unwrap_or(s.target_latency_ns())),
                "ms",
                false,
            )),
            Scenario::MultiStream => metrics.push(single(
                "latency_p99_ms",
                ms(s.early_stopping_latency_ms.unwrap_or(s.target_latency_ns())),
                "ms",
                false,
            )),
            Scenario::Server => metrics.push(single("qps", s.completed_qps(), "queries/s", true)),
            Scenario::Offline => metrics.push(single(
                "samples_per_s",
                s.samples_per_second(),
                "samples/s",
                true,
            )),
        }
        if st.token_bounds.is_some() && st.scenario != Scenario::MultiStream {
            metrics.push(single(
                "tokens_per_s",
                s.tokens_per_second(),
                "tokens/s",
                true,
            ));
        }
    }
    let mut details: Vec<(String, ParamValue)> = vec![
        ("result_valid".into(), ParamValue::Bool(s.valid())),
        (
            "min_duration_met".into(),
            ParamValue::Bool(s.min_duration.met),
        ),
        (
            "min_queries_met".into(),
            ParamValue::Bool(s.min_queries.met),
        ),
        (
            "perf_constraints_met".into(),
            ParamValue::Bool(s.perf_constraints.met),
        ),
        (
            "early_stopping_met".into(),
            ParamValue::Bool(s.early_stopping.met),
        ),
        ("scenario".into(), ParamValue::from(st.scenario.name())),
        ("mode".into(), ParamValue::from(st.mode.name())),
        ("rules".into(), ParamValue::from(st.rules.name())),
        ("target_qps".into(), ParamValue::Float(st.target_qps)),
        (
            "samples_per_query".into(),
            ParamValue::Int(st.samples_per_query as i64),
        ),
        (
            "min_duration_s".into(),
            ParamValue::Float(st.min_duration.as_secs_f64()),
        ),
        (
            "min_query_count".into(),
            ParamValue::Int(st.min_query_count as i64),
        ),
        (
            "target_latency_percentile".into(),
            ParamValue::Float(st.target_latency_percentile),
        ),
        (
            "sample_index_rng_seed".into(),
            ParamValue::Int(st.sample_index_rng_seed as i64),
        ),
        (
            "schedule_rng_seed".into(),
            ParamValue::Int(st.schedule_rng_seed as i64),
        ),
        (
            "performance_sample_count".into(),
            ParamValue::Int(st.performance_sample_count as i64),
        ),
        (
            "queries".into(),
            ParamValue::Int(s.result.queries_issued as i64),
        ),
        ("samples".into(), ParamValue::Int(s.sample_count() as i64)),
        (
            "log_dir".into(),
            ParamValue::from(outcome.log_dir.display().to_string()),
        ),
    ];
    if let Some(bound) = st.target_latency {
        details.push((
            "latency_bound_ms".into(),
            ParamValue::Float(bound.as_secs_f64() * 1e3),
        ));
    }
    if let Some(b) = st.token_bounds {
        details.push((
            "ttft_bound_ms".into(),
            ParamValue::Float(b.ttft.as_secs_f64() * 1e3),
        ));
        details.push((
            "tpot_bound_ms".into(),
            ParamValue::Float(b.tpot.as_secs_f64() * 1e3),
        ));
    }
    if st.scenario == Scenario::Server {
        details.push(("scheduled_qps".into(), ParamValue::Float(s.scheduled_qps())));
        details.push((
            "overlatency_queries".into(),
            ParamValue::Int(s.overlatency_count as i64),
        ));
    }
    for (title, text) in &s.early_stopping_text {
        let key = title.trim_end_matches(':').to_lowercase().replace(' ', "_");
        details.push((key, ParamValue::from(text.trim().replace('\n', " "))));
    }
    if outcome.offline_resized {
        details.push((
            "offline_resized".into(),
            ParamValue::from(
                "the first Offline query, sized from the warm-up, ended before the minimum duration; this test was sized from that run's rate",
            ),
        ));
    }
    if !outcome.trials.is_empty() {
        let trials: Vec<String> = outcome
            .trials
            .iter()
            .map(|t| {
                format!(
                    "{:.1}:{}",
                    t.target_qps,
                    if t.met { "met" } else { "not met" }
                )
            })
            .collect();
        details.push(("peak_search".into(), ParamValue::from(trials.join(", "))));
    }
    let mut warnings = Vec::new();
    if !s.valid() {
        let reasons: Vec<&str> = [&s.perf_constraints, &s.min_duration, &s.min_queries]
            .into_iter()
            .filter(|c| !c.met)
            .map(|c| c.recommendation.as_str())
            .collect();
        let early = if s.early_stopping.met {
            String::new()
        } else {
            format!(
                " Early stopping:{}",
                s.early_stopping_text
                    .iter()
                    .map(|(_, t)| t.replace('\n', " "))
                    .collect::<String>()
            )
        };
        warnings.push(format!(
            "LoadGen result INVALID: {}{early}",
            reasons.join(" ").replace('\n', " ")
        ));
        details.push((
            "recommendations".into(),
            ParamValue::from(reasons.join(" ")),
        ));
    }
    Measured {
        metrics,
        details,
        warnings,
    }
}
