//! mlperf's `llm_serve`: LoadGen's Server and Offline scenarios driving an
//! OpenAI-compatible endpoint (warpt-serving's scripted server, first token
//! after 10 ms, then one every 2 ms) through pepbench's client, with the
//! suite's validity rules and logs; no endpoint: skipped.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use warpt_harness::InProcess;
use warpt_mlperf::MLPERF;
use warpt_model::{BenchmarkRunResult, ParamValue, RunStatus};
use warpt_serving::scripted::{Script, Scripted};

fn run(params: &[String]) -> BenchmarkRunResult {
    InProcess::new(MLPERF, Duration::from_secs(1))
        .run("llm_serve", params)
        .expect("valid selection")
}

#[test]
fn server_and_offline_drive_an_endpoint_with_loadgens_rules() {
    let server = Scripted::start(Script::steady(
        Duration::from_millis(10),
        Duration::from_millis(2),
    ))
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let p = |s: &str| s.to_string();
    let r = run(&[
        format!("endpoint={}", server.url),
        p("scenario=Server"),
        p("target_qps=100"),
        p("concurrency=8"),
        p("output_tokens=5"),
        p("input_tokens=16"),
        format!("log_dir={}", logs.path().display()),
    ]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert!(r.validation.as_ref().unwrap().passed);
    assert_eq!(
        r.details["result_valid"],
        ParamValue::Bool(true),
        "{:?}",
        r.details
    );
    // Every sample's first token 10 ms after it was sent (plus the wait
    // for a free worker, rare at 100 qps against 8 x 18 ms).
    let ttft = r.value_of("ttft_ms").unwrap();
    assert!((10.0..20.0).contains(&ttft), "TTFT {ttft}");
    let tpot = r.value_of("tpot_ms").unwrap();
    assert!((1.5..4.0).contains(&tpot), "TPOT {tpot}");
    assert!(r.details["samples"].as_i64().unwrap() >= 459);
    assert!(logs.path().join("mlperf_log_summary.txt").exists());

    let r = run(&[
        format!("endpoint={}", server.url),
        p("scenario=Offline"),
        p("concurrency=16"),
        p("output_tokens=5"),
        format!("log_dir={}", logs.path().join("offline").display()),
    ]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    // 16 in flight, 18 ms each: at most 889 samples/s.
    let rate = r.value_of("samples_per_s").unwrap();
    assert!(rate > 50.0 && rate < 16.0 / 0.018, "{rate}");
    assert!(r.value_of("tokens_per_s").unwrap() > 4.0 * rate);

    let r = run(&[]);
    assert_eq!(r.status, RunStatus::Skipped);
    // A server that is not there fails the test, naming it.
    let r = run(&[
        p("endpoint=http://127.0.0.1:9"),
        p("model=m"),
        p("scenario=Offline"),
    ]);
    assert_eq!(r.status, RunStatus::Failed);
    assert!(r.error_message.unwrap().contains("127.0.0.1:9"));
}
