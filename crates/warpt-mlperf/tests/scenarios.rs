//! The scenario engine on the synthetic SUT, held against queueing theory.
//! Service times are sleeps, so the figures hold on a loaded 2-core
//! machine; bounds are one-sided where theory gives a hard limit (no run
//! can beat `workers / service`) and generous where the OS adds latency.

use std::time::Duration;

use warpt_mlperf::loadgen::logs::write_all;
use warpt_mlperf::loadgen::parse::read_dir;
use warpt_mlperf::loadgen::{Mode, Rules, Scenario, TestSettings, run_test};
use warpt_mlperf::synthetic::SyntheticSut;

fn sut(service_ms: f64, workers: usize) -> SyntheticSut {
    SyntheticSut {
        service: Duration::from_secs_f64(service_ms / 1e3),
        workers,
        busy: false,
    }
}

fn settings(scenario: Scenario) -> TestSettings {
    TestSettings {
        scenario,
        mode: Mode::PerformanceOnly,
        rules: Rules::Quick,
        samples_per_query: if scenario == Scenario::MultiStream {
            8
        } else {
            1
        },
        target_qps: 100.0,
        target_latency: (scenario == Scenario::Server).then(|| Duration::from_millis(20)),
        target_latency_percentile: if scenario == Scenario::SingleStream {
            0.9
        } else {
            0.99
        },
        token_bounds: None,
        min_duration: Duration::from_millis(500),
        max_duration: None,
        min_query_count: 100,
        performance_sample_count: 1024,
        total_sample_count: 1024,
        sample_index_rng_seed: 1,
        schedule_rng_seed: 2,
        find_peak_decimals: 1,
        find_peak_step: 1.0,
    }
}

#[test]
fn single_stream_p90_is_the_service_time() {
    let s = settings(Scenario::SingleStream);
    let summary = run_test(&sut(2.0, 1), &s).expect("run");
    assert!(summary.valid(), "{:?}", summary.early_stopping_text);
    // The estimate is one of the measured latencies, at or above their p90
    // (early stopping discards some of the slowest queries, never a faster
    // one), and no faster than the service. How far above 2 ms the OS's
    // wake-ups put it is the host's, not the engine's: no upper bound here.
    let p90 = summary.early_stopping_latency_ss.expect("estimate");
    assert!(
        summary.samples.sorted.binary_search(&p90).is_ok(),
        "the p90 estimate {p90} ns is not a measured latency"
    );
    assert!(
        p90 >= summary.samples.percentile(0.9) && p90 <= summary.samples.max(),
        "p90 estimate {p90} ns outside [p90 {}, max {}]",
        summary.samples.percentile(0.9),
        summary.samples.max()
    );
    assert!(p90 >= 2_000_000, "p90 {p90} ns for a 2 ms service");
    // One query at a time: as many queries as samples, and at least the
    // minimum count and duration.
    assert_eq!(summary.result.queries_issued, summary.sample_count());
    assert!(summary.result.queries_issued >= 100);
    assert!(summary.result.final_query_issued_s >= 0.5);
    // Queries are serial, so they cannot take less than their service time.
    assert!(summary.samples.min() >= 2_000_000);
}

#[test]
fn offline_throughput_is_workers_over_service_time() {
    let mut s = settings(Scenario::Offline);
    s.samples_per_query = 600;
    s.min_query_count = 1;
    s.min_duration = Duration::from_millis(200);
    let summary = run_test(&sut(2.0, 4), &s).expect("run");
    let rate = summary.samples_per_second();
    let ideal = 4.0 / 2e-3;
    assert!(
        rate <= ideal * 1.001,
        "{rate} samples/s beats the ideal {ideal}"
    );
    // The four workers serve at once: a serial engine could not beat one
    // worker's ceiling (each sample sleeps at least its service time).
    let one_worker = 1.0 / 2e-3;
    assert!(
        rate > one_worker * 1.5,
        "{rate} samples/s: not above one worker's ceiling {one_worker}"
    );
    assert!(summary.valid());
}

#[test]
fn multi_stream_latency_is_the_slowest_sample_of_each_query() {
    let mut s = settings(Scenario::MultiStream);
    s.min_query_count = 662;
    s.min_duration = Duration::from_millis(200);
    let summary = run_test(&sut(1.0, 8), &s).expect("run");
    let r = &summary.result;
    assert_eq!(r.samples.len() as u64, 8 * r.queries_issued);
    assert!(r.queries_issued >= 662);
    assert!(summary.valid(), "{:?}", summary.early_stopping_text);
    // Eight workers serve the eight samples at once: no query is faster
    // than one service time (how much slower is the OS's wake-ups); the p99
    // estimate holds the tail.
    let median = summary.queries.percentile(0.5) as f64 / 1e6;
    assert!(
        summary.queries.min() >= 1_000_000,
        "min {} ns",
        summary.queries.min()
    );
    // ...and they run at once: eight samples in series could not finish a
    // query in under 8 ms.
    assert!(
        median < 6.0,
        "median {median} ms: the samples ran in series"
    );
    let p99 = summary.early_stopping_latency_ms.expect("estimate") as f64 / 1e6;
    assert!(p99 >= median, "p99 {p99} ms");
    // A query is as slow as its slowest sample.
    for (q, lat) in r.query_latencies_ns.iter().enumerate() {
        let slowest = r.samples[q * 8..q * 8 + 8]
            .iter()
            .map(|x| x.latency_ns)
            .max();
        assert_eq!(Some(*lat), slowest);
    }
}

#[test]
fn server_latency_rises_toward_capacity_and_overload_is_invalid() {
    // Capacity: 2 workers / 2 ms = 1000 queries/s.
    let at = |qps: f64| {
        let mut s = settings(Scenario::Server);
        s.target_qps = qps;
        s.min_duration = Duration::from_millis(1500);
        run_test(&sut(2.0, 2), &s).expect("run")
    };
    let light = at(200.0);
    let heavy = at(850.0);
    let over = at(1500.0);
    let p99 = |s: &warpt_mlperf::loadgen::Summary| s.samples.percentile(0.99);
    assert!(
        light.perf_constraints.met,
        "p99 {} ns at 200 qps",
        p99(&light)
    );
    assert!(
        p99(&heavy) > p99(&light),
        "{} vs {}",
        p99(&heavy),
        p99(&light)
    );
    assert!(!over.valid());
    assert!(!over.perf_constraints.met);
    assert_eq!(
        over.perf_constraints.recommendation,
        "Reduce target QPS to improve latency."
    );
    // The schedule is honoured: as many queries as scheduled, latency from
    // the scheduled time (so the backlog shows).
    assert!(
        over.samples.max() > 100_000_000,
        "an overloaded queue grows"
    );
    let scheduled = over.scheduled_qps();
    assert!((scheduled / 1500.0 - 1.0).abs() < 0.1, "{scheduled}");
}

#[test]
fn too_few_queries_is_invalid_with_loadgens_reasons() {
    let mut s = settings(Scenario::SingleStream);
    s.min_query_count = 10;
    s.min_duration = Duration::from_millis(1);
    let summary = run_test(&sut(1.0, 1), &s).expect("run");
    assert!(!summary.early_stopping.met);
    assert!(!summary.valid());
    let text = &summary.early_stopping_text[0].1;
    assert!(
        text.contains("Need to process at least 64 queries"),
        "{text}"
    );
}

#[test]
fn logs_read_back_and_accuracy_covers_the_library() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut s = settings(Scenario::Server);
    s.target_qps = 300.0;
    let summary = run_test(&sut(1.0, 2), &s).expect("run");
    write_all(&summary, dir.path()).expect("write");
    let log = read_dir(dir.path()).expect("parse");
    assert_eq!(log.scenario, "Server");
    assert_eq!(log.valid, summary.valid());
    assert_eq!(log.perf_constraints_met, Some(summary.perf_constraints.met));
    let completed = log.value("Completed samples per second").expect("qps");
    assert!((completed - summary.completed_qps()).abs() < 0.01);
    assert_eq!(
        log.detail_f64("result_99.00_percentile_latency_ns"),
        Some(summary.samples.percentile(0.99) as f64)
    );
    assert_eq!(
        log.detail_f64("result_query_count"),
        Some(summary.result.queries_issued as f64)
    );

    let mut s = settings(Scenario::Offline);
    s.mode = Mode::AccuracyOnly;
    s.total_sample_count = 50;
    s.performance_sample_count = 50;
    let summary = run_test(&sut(0.1, 2), &s).expect("run");
    let msg = warpt_mlperf::check_answers(&summary, |r| r.data == (r.index as u64).to_le_bytes());
    assert!(msg.is_ok(), "{msg:?}");
    write_all(&summary, dir.path()).expect("write");
    let text = std::fs::read_to_string(dir.path().join("mlperf_log_accuracy.json")).expect("read");
    let entries: serde_json::Value = serde_json::from_str(&text).expect("json");
    let entries = entries.as_array().expect("array");
    assert_eq!(entries.len(), 50);
    let mut seen: Vec<u64> = entries
        .iter()
        .map(|e| e["qsl_idx"].as_u64().expect("idx"))
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..50).collect::<Vec<_>>());
    // The data is the index as 8 little-endian bytes, in hex.
    let e = &entries[0];
    let idx = e["qsl_idx"].as_u64().expect("idx");
    let hex: String = idx
        .to_le_bytes()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    assert_eq!(e["data"], hex);
}

#[test]
fn sample_indices_are_drawn_as_seeded() {
    let mut s = settings(Scenario::SingleStream);
    s.min_query_count = 50;
    s.min_duration = Duration::ZERO;
    let indices = |seed: u64| {
        let mut s = s.clone();
        s.sample_index_rng_seed = seed;
        let summary = run_test(&sut(0.05, 1), &s).expect("run");
        summary
            .result
            .samples
            .iter()
            .map(|r| r.index)
            .collect::<Vec<_>>()
    };
    let (a, b, c) = (indices(5), indices(5), indices(6));
    assert_eq!(a, b, "the same seed draws the same samples");
    assert_ne!(a, c, "another seed draws others");
    assert!(a.iter().all(|&i| i < 1024));
    // Spread over the library, not stuck on a few.
    let distinct: std::collections::BTreeSet<_> = a.iter().collect();
    assert!(
        distinct.len() > 40,
        "{} distinct of {}",
        distinct.len(),
        a.len()
    );
}

/// A SUT that panics on one sample: the test ends with the panic's
/// message instead of waiting forever for the answer.
#[test]
fn a_panicking_sut_fails_the_test() {
    struct Faulty;
    impl warpt_mlperf::loadgen::SystemUnderTest for Faulty {
        fn name(&self) -> String {
            "faulty".into()
        }
        fn workers(&self) -> usize {
            2
        }
        fn max_batch(&self) -> usize {
            1
        }
        fn process(
            &self,
            batch: &[warpt_mlperf::loadgen::QuerySample],
            responder: &warpt_mlperf::loadgen::Responder,
        ) -> Result<(), String> {
            for s in batch {
                assert!(s.index != 3, "sample 3 is cursed");
                responder.complete(s, Default::default());
            }
            Ok(())
        }
    }
    let mut s = settings(Scenario::Offline);
    s.samples_per_query = 50;
    s.min_query_count = 1;
    let err = run_test(&Faulty, &s).expect_err("the test fails");
    assert!(
        err.contains("panicked") && err.contains("sample 3 is cursed"),
        "{err}"
    );
}
