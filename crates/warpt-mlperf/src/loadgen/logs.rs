//! The three files LoadGen leaves, written from a [`Summary`] in LoadGen's
//! own layout so MLPerf tooling and eyes read them unchanged:
//! `mlperf_log_summary.txt`, `mlperf_log_detail.txt` (`:::MLLOG {json}`
//! lines) and `mlperf_log_accuracy.json`.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use super::settings::{Mode, Scenario, fmt_g};
use super::summary::{Latencies, PERCENTILES, Summary};

/// The summary file's name.
pub const SUMMARY_FILE: &str = "mlperf_log_summary.txt";
/// The detail file's name.
pub const DETAIL_FILE: &str = "mlperf_log_detail.txt";
/// The accuracy file's name.
pub const ACCURACY_FILE: &str = "mlperf_log_accuracy.json";

const RULE: &str = "================================================";

fn yes(b: bool) -> &'static str {
    if b { "Yes" } else { "NO" }
}

/// `DoubleToString`: fixed, two decimals.
fn fixed2(x: f64) -> String {
    format!("{x:.2}")
}

/// LoadGen's min / max / mean / percentile lines of one latency series
/// (`name` in the first three, `percentile_name` in the others).
fn latency_block(
    line: &mut impl FnMut(String),
    lat: &Latencies,
    name: &str,
    percentile_name: &str,
) {
    line(format!("Min {name} (ns)                : {}", lat.min()));
    line(format!("Max {name} (ns)                : {}", lat.max()));
    line(format!("Mean {name} (ns)               : {}", lat.mean));
    for p in PERCENTILES {
        line(format!(
            "{} percentile {percentile_name} (ns)   : {}",
            fixed2(p * 100.0),
            lat.percentile(p)
        ));
    }
}

/// The text of `mlperf_log_summary.txt`.
pub fn summary_text(s: &Summary) -> String {
    let st = &s.settings;
    let mut o = String::new();
    let mut line = |text: String| {
        o.push_str(&text);
        o.push('\n');
    };
    line(format!("{RULE}\nMLPerf Results Summary\n{RULE}"));
    line(format!("SUT name : {}", s.sut_name));
    line(format!("Scenario : {}", st.scenario.name()));
    line(format!("Mode     : {}", st.mode.name()));
    let pct = format!("{:.1}", st.target_latency_percentile * 100.0);
    let tokens = st.token_bounds.is_some();
    match st.scenario {
        Scenario::SingleStream | Scenario::MultiStream => line(format!(
            "{pct}th percentile latency (ns) : {}",
            s.target_latency_ns()
        )),
        Scenario::Server => line(format!(
            "Completed samples per second    : {}",
            fixed2(s.completed_qps())
        )),
        Scenario::Offline => line(format!(
            "Samples per second: {}",
            fmt_g(s.samples_per_second())
        )),
    }
    if tokens {
        match st.scenario {
            Scenario::SingleStream | Scenario::MultiStream => line(format!(
                "{pct}th first token percentile latency (ns) : {}",
                s.ttft.percentile(st.target_latency_percentile)
            )),
            Scenario::Offline => line(format!(
                "Tokens per second: {}",
                fmt_g(s.tokens_per_second())
            )),
            Scenario::Server => line(format!(
                "Completed tokens per second: {}",
                fixed2(s.tokens_per_second())
            )),
        }
    }
    line(format!(
        "Result is : {}",
        if s.valid() { "VALID" } else { "INVALID" }
    ));
    if s.has_perf_constraints() {
        line(format!(
            "  Performance constraints satisfied : {}",
            yes(s.perf_constraints.met)
        ));
    }
    line(format!(
        "  Min duration satisfied : {}",
        yes(s.min_duration.met)
    ));
    line(format!(
        "  Min queries satisfied : {}",
        yes(s.min_queries.met)
    ));
    line(format!(
        "  Early stopping satisfied: {}",
        yes(s.early_stopping.met)
    ));
    if !s.valid() {
        line("Recommendations:".into());
        for c in [&s.perf_constraints, &s.min_duration] {
            if !c.met {
                line(format!(" * {}", c.recommendation));
            }
        }
        if !s.min_queries.met {
            line(format!(" * {}", s.min_queries.recommendation));
        }
    }
    for (title, text) in &s.early_stopping_text {
        line(title.clone());
        line(text.clone());
    }
    line(format!("\n{RULE}\nAdditional Stats\n{RULE}"));
    match st.scenario {
        Scenario::SingleStream => {
            line(format!(
                "QPS w/ loadgen overhead         : {}",
                fixed2(s.qps_with_overhead())
            ));
            line(format!(
                "QPS w/o loadgen overhead        : {}",
                fixed2(s.qps_without_overhead())
            ));
            line(String::new());
        }
        Scenario::Server => line(format!(
            "Scheduled samples per second : {}",
            fixed2(s.scheduled_qps())
        )),
        Scenario::MultiStream => {
            line("Per-query latency:  ".into());
            latency_block(&mut line, &s.queries, "latency", "latency");
        }
        Scenario::Offline => {}
    }
    if st.scenario != Scenario::MultiStream {
        latency_block(&mut line, &s.samples, "latency", "latency");
    }
    if tokens {
        line(String::new());
        if st.scenario == Scenario::Server {
            line(format!(
                "Completed tokens per second                 : {}",
                fixed2(s.tokens_per_second())
            ));
        }
        if st.scenario != Scenario::Offline {
            latency_block(
                &mut line,
                &s.ttft,
                "First Token latency",
                "first token latency",
            );
            line(String::new());
            latency_block(
                &mut line,
                &s.tpot,
                "Time per Output Token",
                "time to output token",
            );
        }
    }
    line(format!("\n{RULE}\nTest Parameters Used\n{RULE}"));
    for (k, v) in st.parameters() {
        line(format!("{k} : {v}"));
    }
    line(String::new());
    line("No warnings encountered during test.".into());
    line(String::new());
    let errors = s.result.duplicate_responses;
    if errors == 0 {
        line("No errors encountered during test.".into());
    } else {
        line(format!("{errors} ERRORS encountered. See detailed log."));
    }
    o
}

/// The `(key, value)` pairs of `mlperf_log_detail.txt`, in LoadGen's order
/// and with its key names.
pub fn detail_entries(s: &Summary) -> Vec<(String, Value)> {
    let st = &s.settings;
    let mut v: Vec<(String, Value)> = Vec::new();
    let mut put = |k: &str, value: Value| v.push((k.to_string(), value));
    put(
        "loadgen_version",
        json!(format!("warpt {}", env!("CARGO_PKG_VERSION"))),
    );
    put("sut_name", json!(s.sut_name));
    put("qsl_reported_total_count", json!(st.total_sample_count));
    put(
        "qsl_reported_performance_count",
        json!(st.performance_sample_count),
    );
    put("requested_scenario", json!(st.scenario.name()));
    put("requested_test_mode", json!(st.mode.name()));
    put("effective_scenario", json!(st.scenario.name()));
    put("effective_test_mode", json!(st.mode.name()));
    put("effective_samples_per_query", json!(st.samples_per_query));
    put("effective_target_qps", json!(st.target_qps));
    put(
        "effective_target_latency_ns",
        json!(st.target_latency.map_or(0, |d| d.as_nanos() as u64)),
    );
    put(
        "effective_target_latency_percentile",
        json!(st.target_latency_percentile),
    );
    put(
        "effective_min_duration_ms",
        json!(st.min_duration.as_millis() as u64),
    );
    put(
        "effective_max_duration_ms",
        json!(st.max_duration.map_or(0, |d| d.as_millis() as u64)),
    );
    put("effective_min_query_count", json!(st.min_query_count));
    put("effective_min_sample_count", json!(st.min_sample_count()));
    put(
        "effective_sample_index_rng_seed",
        json!(st.sample_index_rng_seed),
    );
    put("effective_schedule_rng_seed", json!(st.schedule_rng_seed));
    put(
        "effective_performance_sample_count",
        json!(st.performance_sample_count),
    );
    put(
        "effective_accuracy_sample_count",
        json!(st.total_sample_count),
    );
    if let Some(b) = st.token_bounds {
        put("requested_use_token_latencies", json!(true));
        put(
            "requested_server_ttft_latency",
            json!(b.ttft.as_nanos() as u64),
        );
        put(
            "requested_server_tpot_latency",
            json!(b.tpot.as_nanos() as u64),
        );
    }
    put("warpt_rules", json!(st.rules.name()));
    put("generated_query_count", json!(s.result.queries_issued));
    put("generated_samples_per_query", json!(st.samples_per_query));
    if st.mode == Mode::AccuracyOnly {
        put("num_errors", json!(s.result.duplicate_responses));
        return v;
    }
    put(
        "result_validity",
        json!(if s.valid() { "VALID" } else { "INVALID" }),
    );
    if s.has_perf_constraints() {
        put("result_perf_constraints_met", json!(s.perf_constraints.met));
    }
    put("result_min_duration_met", json!(s.min_duration.met));
    put("result_min_queries_met", json!(s.min_queries.met));
    put("early_stopping_met", json!(s.early_stopping.met));
    if !s.valid() {
        let mut reason = String::new();
        if !s.perf_constraints.met {
            let _ = write!(reason, "{} ", s.perf_constraints.recommendation);
        }
        if !s.min_duration.met {
            let _ = write!(reason, "{} ", s.min_duration.recommendation);
        }
        if !s.min_queries.met {
            reason.push_str("The test exited early, before enough queries were issued.");
        }
        put("result_invalid_reason", json!(reason.replace('\n', " ")));
    }
    for (title, text) in &s.early_stopping_text {
        let key = match title.as_str() {
            "TTFT Early Stopping Result:" => "early_stopping_ttft_result",
            "TPOT Early Stopping Result:" => "early_stopping_tpot_result",
            _ => "early_stopping_result",
        };
        put(key, json!(text.replace('\n', " ")));
    }
    put("result_query_count", json!(s.result.queries_issued));
    if st.scenario == Scenario::Server {
        put("result_overlatency_query_count", json!(s.overlatency_count));
    }
    match st.scenario {
        Scenario::SingleStream => {
            put(
                "result_qps_with_loadgen_overhead",
                json!(s.qps_with_overhead()),
            );
            put(
                "result_qps_without_loadgen_overhead",
                json!(s.qps_without_overhead()),
            );
            put(
                "early_stopping_latency_ss",
                json!(s.early_stopping_latency_ss.unwrap_or(0)),
            );
            put(
                "early_stopping_latency_ms",
                json!(s.early_stopping_latency_ms.unwrap_or(0)),
            );
        }
        Scenario::MultiStream => {
            put("result_min_query_latency_ns", json!(s.queries.min()));
            put("result_max_query_latency_ns", json!(s.queries.max()));
            put("result_mean_query_latency_ns", json!(s.queries.mean));
            for p in PERCENTILES {
                put(
                    &format!(
                        "result_{}_percentile_per_query_latency_ns",
                        fixed2(p * 100.0)
                    ),
                    json!(s.queries.percentile(p)),
                );
            }
            put(
                "early_stopping_latency_ms",
                json!(s.early_stopping_latency_ms.unwrap_or(0)),
            );
        }
        Scenario::Server => {
            put("result_scheduled_samples_per_sec", json!(s.scheduled_qps()));
            put("result_completed_samples_per_sec", json!(s.completed_qps()));
        }
        Scenario::Offline => put("result_samples_per_second", json!(s.samples_per_second())),
    }
    put("result_min_latency_ns", json!(s.samples.min()));
    put("result_max_latency_ns", json!(s.samples.max()));
    put("result_mean_latency_ns", json!(s.samples.mean));
    for p in PERCENTILES {
        put(
            &format!("result_{}_percentile_latency_ns", fixed2(p * 100.0)),
            json!(s.samples.percentile(p)),
        );
    }
    if st.token_bounds.is_some() {
        if st.scenario != Scenario::Offline {
            put("result_first_token_min_latency_ns", json!(s.ttft.min()));
            put("result_first_token_max_latency_ns", json!(s.ttft.max()));
            put("result_first_token_mean_latency_ns", json!(s.ttft.mean));
            for p in PERCENTILES {
                put(
                    &format!(
                        "result_first_token_{}_percentile_latency_ns",
                        fixed2(p * 100.0)
                    ),
                    json!(s.ttft.percentile(p)),
                );
            }
            for p in PERCENTILES {
                put(
                    &format!(
                        "result_time_per_output_token_{}_percentile_ns",
                        fixed2(p * 100.0)
                    ),
                    json!(s.tpot.percentile(p)),
                );
            }
            put("result_time_to_output_token_min", json!(s.tpot.min()));
            put("result_time_to_output_token_max", json!(s.tpot.max()));
            put("result_time_to_output_token_mean", json!(s.tpot.mean));
            put(
                "result_completed_tokens_per_second",
                json!(s.tokens_per_second()),
            );
        } else {
            put("result_tokens_per_second", json!(s.tokens_per_second()));
        }
    }
    put("num_errors", json!(s.result.duplicate_responses));
    v
}

/// The text of `mlperf_log_detail.txt`.
pub fn detail_text(s: &Summary) -> String {
    let pid = std::process::id();
    detail_entries(s)
        .into_iter()
        .map(|(key, value)| {
            let line = json!({
                "key": key,
                "value": value,
                "time_ms": 0.0,
                "namespace": "mlperf::logging",
                "event_type": "POINT_IN_TIME",
                "metadata": {"is_error": false, "is_warning": false, "file": "warpt", "line_no": 0, "pid": pid, "tid": 0},
            });
            format!(":::MLLOG {line}\n")
        })
        .collect()
}

/// The text of `mlperf_log_accuracy.json`: every response of an
/// AccuracyOnly run (`data` in upper-case hex), an empty list otherwise.
pub fn accuracy_text(s: &Summary) -> String {
    let mut o = String::from("[");
    if s.settings.mode == Mode::AccuracyOnly {
        for (seq, r) in s.result.samples.iter().enumerate() {
            if seq > 0 {
                o.push(',');
            }
            let hex: String = r.data.iter().map(|b| format!("{b:02X}")).collect();
            let _ = write!(
                o,
                "\n{{ \"seq_id\" : {seq}, \"qsl_idx\" : {}, \"data\" : \"{hex}\"",
                r.index
            );
            if let Some(t) = r.tokens {
                let _ = write!(o, ", \"token_count\" : {t}");
            }
            o.push_str(" }");
        }
    }
    o.push_str("\n]\n");
    o
}

/// Writes the three files into `dir` (created if needed).
pub fn write_all(s: &Summary, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(SUMMARY_FILE), summary_text(s))?;
    std::fs::write(dir.join(DETAIL_FILE), detail_text(s))?;
    std::fs::write(dir.join(ACCURACY_FILE), accuracy_text(s))?;
    Ok(())
}
