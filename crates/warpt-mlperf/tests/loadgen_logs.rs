//! The parser and the early-stopping arithmetic against logs the official
//! LoadGen wrote (tests/fixtures/loadgen), and warpt's own logs read back.

use std::path::{Path, PathBuf};

use warpt_mlperf::external::metrics_of;
use warpt_mlperf::loadgen::early_stopping::{
    Estimate, MinPassingQueries, percentile_estimate, server_check,
};
use warpt_mlperf::loadgen::parse::{ParseError, read_dir};
use warpt_mlperf::loadgen::schedule::server_schedule_with_end;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/loadgen")
        .join(name)
}

/// The number after `marker` in `text` (up to the next non-digit).
fn number_after(text: &str, marker: &str) -> i64 {
    let i = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {text}"))
        + marker.len();
    text[i..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("a number")
}

#[test]
fn every_real_log_parses_with_loadgens_verdict() {
    for (name, scenario, valid) in [
        ("single_stream", "SingleStream", true),
        ("multi_stream", "MultiStream", true),
        ("server_valid", "Server", true),
        ("server_invalid", "Server", false),
        ("offline", "Offline", true),
        ("server_tokens", "Server", false),
    ] {
        let log = read_dir(&fixture(name)).expect(name);
        assert_eq!(log.scenario, scenario, "{name}");
        assert_eq!(log.valid, valid, "{name}");
        assert_eq!(log.mode, "PerformanceOnly");
        assert_eq!(log.sut_name, "PySUT");
        assert_eq!(log.min_duration_met, Some(true), "{name}");
        // The detail log agrees with the summary.
        let v = log.detail.get("result_validity").and_then(|v| v.as_str());
        assert_eq!(v, Some(if valid { "VALID" } else { "INVALID" }), "{name}");
        let metrics = metrics_of(&log).expect(name);
        assert!(
            metrics.iter().all(|m| m.value.is_finite() && m.value > 0.0),
            "{name}: {metrics:?}"
        );
    }
    let invalid = read_dir(&fixture("server_invalid")).expect("server_invalid");
    assert_eq!(invalid.perf_constraints_met, Some(false));
    assert_eq!(
        invalid.recommendations,
        vec!["Reduce target QPS to improve latency."]
    );
}

#[test]
fn headline_metrics_come_from_the_right_lines() {
    let ss = read_dir(&fixture("single_stream")).expect("ss");
    let m = metrics_of(&ss).expect("metrics");
    // SingleStream: the early-stopping estimate, not the plain p90.
    let estimate = ss
        .detail_f64("early_stopping_latency_ss")
        .expect("estimate");
    assert_eq!(m[0].name, "latency_p90_ms");
    assert_eq!(m[0].value, estimate / 1e6);
    let off = read_dir(&fixture("offline")).expect("offline");
    let m = metrics_of(&off).expect("metrics");
    assert_eq!(m[0].name, "samples_per_s");
    assert_eq!(Some(m[0].value), off.value("Samples per second"));
    let tok = read_dir(&fixture("server_tokens")).expect("tokens");
    let names: Vec<String> = metrics_of(&tok)
        .expect("m")
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(names, ["qps", "tokens_per_s", "ttft_ms", "tpot_ms"]);
}

#[test]
fn a_truncated_log_is_an_error_that_says_so() {
    match read_dir(&fixture("truncated")) {
        Err(ParseError::Missing(_, what)) => assert_eq!(what, "Result is :"),
        other => panic!("expected a truncation error, got {other:?}"),
    }
    assert!(matches!(
        read_dir(&fixture("no_such_dir")),
        Err(ParseError::Io { .. })
    ));
}

#[test]
fn early_stopping_agrees_with_loadgen_on_its_own_runs() {
    let mut finder = MinPassingQueries::default();
    // SingleStream: "Processed at least 64 queries (N). Would discard D".
    let text =
        std::fs::read_to_string(fixture("single_stream/mlperf_log_summary.txt")).expect("read");
    let n = number_after(&text, "Processed at least 64 queries (");
    let discarded = number_after(&text, "Would discard ");
    match percentile_estimate(&mut finder, n, 0.90) {
        Estimate::Found {
            needed,
            discarded: d,
            ..
        } => {
            assert_eq!(needed, 64);
            assert_eq!(d, discarded, "{n} queries");
        }
        other => panic!("{other:?}"),
    }
    // MultiStream at p99.
    let text =
        std::fs::read_to_string(fixture("multi_stream/mlperf_log_summary.txt")).expect("read");
    let n = number_after(&text, "Processed at least 662 queries (");
    let discarded = number_after(&text, "Would discard ");
    match percentile_estimate(&mut finder, n, 0.99) {
        Estimate::Found {
            needed,
            discarded: d,
            ..
        } => {
            assert_eq!((needed, d), (662, discarded), "{n} queries");
        }
        other => panic!("{other:?}"),
    }
    // Server: "Would need to run at least M more queries" with the
    // overlatency count from the detail log.
    let name = "server_invalid";
    let log = read_dir(&fixture(name)).expect(name);
    let text =
        std::fs::read_to_string(fixture(&format!("{name}/mlperf_log_summary.txt"))).expect("read");
    let n = number_after(&text, " * Processed ");
    let more = number_after(&text, "Would need to run at least ");
    let over = log
        .detail_f64("result_overlatency_query_count")
        .expect("overlatency") as i64;
    assert_eq!(
        server_check(&mut finder, n, over, 0.99),
        Err(more),
        "{name}"
    );
    let log = read_dir(&fixture("server_valid")).expect("valid");
    let n = log.detail_f64("result_query_count").expect("count") as i64;
    let over = log
        .detail_f64("result_overlatency_query_count")
        .expect("over") as i64;
    assert_eq!(server_check(&mut finder, n, over, 0.99), Ok(()));
    // Token Server: TPOT all under the bound, 100 queries: 359 more needed.
    assert_eq!(server_check(&mut finder, 100, 0, 0.99), Err(359));
}

#[test]
fn hand_computed_early_stopping_cases() {
    let mut f = MinPassingQueries::default();
    // 100 queries at p90: t is the largest count of slow queries that 100
    // queries can carry and still prove the percentile.
    match percentile_estimate(&mut f, 100, 0.90) {
        Estimate::Found {
            needed,
            discarded,
            index,
        } => {
            assert_eq!(needed, 64);
            assert_eq!(index, 100 - (discarded as usize + 1));
            // Direct check of the defining inequality.
            let t = discarded + 1;
            assert!(f.find(t, 0.9, 0.0, 0.99) + t <= 100);
            assert!(f.find(t + 1, 0.9, 0.0, 0.99) + t + 1 > 100);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        percentile_estimate(&mut f, 63, 0.90),
        Estimate::TooFew { needed: 64 }
    );
    assert_eq!(
        percentile_estimate(&mut f, 661, 0.99),
        Estimate::TooFew { needed: 662 }
    );
    // With one overlatency query at p99, 661 under it are needed.
    assert_eq!(server_check(&mut f, 662, 1, 0.99), Ok(()));
    assert_eq!(server_check(&mut f, 661, 1, 0.99), Err(1));
}

#[test]
fn the_server_schedule_is_loadgens_to_the_nanosecond() {
    // LoadGen logged how many queries it generated and when the schedule
    // ended; the same seed (0), QPS and minimums give the same here.
    for name in ["server_valid", "server_invalid", "server_tokens"] {
        let log = read_dir(&fixture(name)).expect(name);
        let qps = log.detail_f64("effective_target_qps").expect("qps");
        let min_ms = log
            .detail_f64("effective_min_duration_ms")
            .expect("min duration");
        let min_queries = log
            .detail_f64("effective_min_query_count")
            .expect("min queries");
        let seed = log.detail_f64("effective_schedule_rng_seed").expect("seed");
        let (times, end) = server_schedule_with_end(
            qps,
            std::time::Duration::from_millis(min_ms as u64),
            min_queries as u64,
            seed as u64,
        );
        assert_eq!(
            Some(times.len() as f64),
            log.detail_f64("generated_query_count"),
            "{name}"
        );
        assert_eq!(
            Some(end as f64),
            log.detail_f64("generated_query_duration"),
            "{name}"
        );
    }
}
