//! `llm_serve` through the CLI as a user sweeps it: concurrency 1, 2 and 8
//! against a server of known capacity (warpt-serving's scripted server,
//! two completions at a time), the HTML report's latency-against-throughput
//! curves with the SLO knee at the concurrency the server holds, and
//! `compare` gating the serving metrics like any others.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{json_of, stdout_of, suite_run_of, warpt};

use std::time::Duration;

use warpt_model::RunStatus;
use warpt_serving::scripted::{Script, Scripted};

#[test]
fn a_concurrency_sweep_draws_latency_against_throughput_with_its_knee() {
    // 20 ms + 5 x 2 ms per completion, two at a time: 66.7 requests/s.
    // One client gets half of that at a 20 ms TTFT, two all of it, eight
    // queue three deep and miss the 45 ms TTFT SLO.
    let server = Scripted::start(Script {
        slots: 2,
        ..Script::steady(Duration::from_millis(20), Duration::from_millis(2))
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("serve.json");
    let run = suite_run_of(
        common::suite_cmd("pepbench", "llm_serve")
            .args("--no-store --json --burnin-seconds 0 --export-file".split(' '))
            .arg(&export)
            .arg("--param")
            .arg(format!("endpoint={}", server.url))
            .args(["--param", "concurrency=1,2,8", "--param", "requests=48"])
            .args(["--param", "output_tokens=6", "--param", "slo_ttft_ms=45"]),
    );
    let goodput: Vec<(String, f64)> = run
        .benchmarks
        .iter()
        .map(|b| {
            assert_eq!(b.status, RunStatus::Passed, "{:?}", b.error_message);
            let g = b
                .metrics
                .iter()
                .find(|m| m.name == "goodput_requests_per_s")
                .unwrap();
            (g.tags["concurrency"].clone(), g.value)
        })
        .collect();
    let best = goodput.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    assert_eq!(best.0, "2", "{goodput:?}");

    let html = String::from_utf8(stdout_of(
        warpt().args(["report", "--format", "html"]).arg(&export),
    ))
    .unwrap();
    assert!(html.contains("Latency against throughput"), "no section");
    for metric in ["ttft_ms", "tpot_ms", "request_latency_ms"] {
        assert!(
            html.contains(&format!("llm_serve {metric} against throughput")),
            "no {metric} curve"
        );
    }
    assert!(html.contains("knee: "), "no knee marked");
    assert!(html.contains("SLO 45"), "no SLO line");

    // compare: every serving metric of every concurrency matched with its own.
    let c = json_of(
        warpt()
            .args(["benchmark", "compare", "--format", "json"])
            .arg(&export)
            .arg(&export),
    );
    let names = common::texts(&c["metrics"], "metric");
    for metric in [
        "ttft_ms",
        "itl_ms",
        "tpot_ms",
        "request_latency_ms",
        "output_tokens_per_s",
        "requests_per_s",
        "goodput_requests_per_s",
    ] {
        assert_eq!(
            names.iter().filter(|n| **n == metric).count(),
            3,
            "{metric}: {names:?}"
        );
    }
}

#[test]
fn a_load_longer_than_the_warm_up_limit_is_held_to_the_measurement_limit() {
    // 20 requests of 90 ms one after another: 1.8 s, past the warm-up's
    // limit at a tenth of the margins (1.5 s); the load is the measurement,
    // whose limit llm_serve reckons from its requests' timeouts.
    let server = Scripted::start(Script::steady(
        Duration::from_millis(50),
        Duration::from_millis(10),
    ))
    .unwrap();
    let run = suite_run_of(
        common::suite_cmd("pepbench", "llm_serve")
            .args(["--no-store", "--json", "--burnin-seconds", "0"])
            .args(["--timeout-multiplier", "0.1"])
            .arg("--param")
            .arg(format!("endpoint={}", server.url))
            .args(["--param", "requests=20", "--param", "output_tokens=5"])
            .args(["--param", "timeout_s=10"]),
    );
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
}
