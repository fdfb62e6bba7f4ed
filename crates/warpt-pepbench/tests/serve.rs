//! `llm_serve` end to end against the scripted OpenAI-compatible server of
//! warpt-serving: closed and open loop, the metrics and the counts, a
//! refused server failing the run with its counts, and no endpoint skipped;
//! conversations, a shared prefix, a trace replayed, and the
//! maximum-throughput search against a server of known capacity; and a
//! real server: Hugging Face's `transformers serve` (PyPI, in scripts/test's
//! transformers venv, named by `WARPT_TEST_TRANSFORMERS_PYTHON`) serving a
//! tiny seeded Llama written by transformers, a few requests on each API,
//! tokens counted with the model's own tokenizer, and `ignore_eos` (which
//! it refuses) named in the failure with the flag that fixes it.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use warpt_harness::InProcess;
use warpt_model::{BenchmarkRunResult, ParamValue, RunStatus};
use warpt_pepbench::PEPBENCH;
use warpt_serving::scripted::{Script, Scripted};

fn run(params: &[String]) -> BenchmarkRunResult {
    suite().run("llm_serve", params).expect("valid selection")
}

fn suite() -> InProcess {
    InProcess::new(PEPBENCH, Duration::from_secs(5))
}

#[test]
fn llm_serve_measures_a_server_in_closed_and_open_loop() {
    let server = Scripted::start(Script::steady(
        Duration::from_millis(20),
        Duration::from_millis(5),
    ))
    .unwrap();
    let p = |s: &str| s.to_string();
    for load in [p("concurrency=4"), p("request_rate=50")] {
        let r = run(&[
            format!("endpoint={}/v1", server.url),
            load.clone(),
            p("requests=24"),
            p("output_tokens=8"),
            p("input_tokens=16"),
            p("slo_ttft_ms=1000"),
        ]);
        assert_eq!(r.status, RunStatus::Passed, "{load}: {:?}", r.error_message);
        assert!(r.validation.as_ref().unwrap().passed);
        // The model from /v1/models, every request counted, tokens from usage.
        assert_eq!(r.details["model"], ParamValue::Str("scripted".into()));
        assert_eq!(r.details["requests_ok"], ParamValue::Int(24));
        assert_eq!(r.details["token_counting"], ParamValue::Str("usage".into()));
        assert_eq!(r.details["output_tokens"], ParamValue::Int(24 * 8));
        assert_eq!(
            r.details["http_version"],
            ParamValue::Str("HTTP/1.1".into())
        );
        let ttft = r.value_of("ttft_ms").unwrap();
        assert!((20.0..40.0).contains(&ttft), "{load}: TTFT {ttft}");
        let itl = r.value_of("itl_ms").unwrap();
        assert!((4.0..8.0).contains(&itl), "{load}: ITL {itl}");
        // Every request met the loose SLO: goodput is the request rate.
        assert_eq!(
            r.value_of("goodput_requests_per_s").unwrap(),
            r.value_of("requests_per_s").unwrap()
        );
        for name in ["tpot_ms", "request_latency_ms", "output_tokens_per_s"] {
            assert!(r.value_of(name).unwrap() > 0.0, "{name}");
        }
    }
    // The user's prompts, each with its own output length.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompts.jsonl");
    std::fs::write(
        &file,
        "{\"prompt\": \"one\", \"output_tokens\": 5}\n{\"prompt\": \"two\", \"output_tokens\": 5}\n",
    )
    .unwrap();
    let r = run(&[
        format!("endpoint={}", server.url),
        format!("prompts_file={}", file.display()),
        p("requests=6"),
    ]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert_eq!(r.details["output_tokens"], ParamValue::Int(30));
    // validate=echo: the prompt comes back first, is checked, and is not
    // output (TTFT is still the first token's, the count still 8 each).
    let r = run(&[
        format!("endpoint={}", server.url),
        p("validate=echo"),
        p("requests=4"),
        p("output_tokens=8"),
    ]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    let v = r.validation.as_ref().unwrap();
    assert!(
        v.passed && v.message.contains("echoing its prompt"),
        "{v:?}"
    );
    assert_eq!(r.details["output_tokens"], ParamValue::Int(32));
    assert!(r.value_of("ttft_ms").unwrap() >= 20.0);
    // An impossible SLO: no goodput.
    let r = run(&[
        format!("endpoint={}", server.url),
        p("requests=4"),
        p("slo_ttft_ms=1"),
    ]);
    assert_eq!(r.value_of("goodput_requests_per_s").unwrap(), 0.0);
}

#[test]
fn a_refused_server_fails_the_run_with_its_counts_and_no_endpoint_skips() {
    let r = run(&[
        "endpoint=http://127.0.0.1:9".into(),
        "model=m".into(),
        "requests=3".into(),
    ]);
    assert_eq!(r.status, RunStatus::Failed);
    let e = r.error_message.unwrap_or_default();
    assert!(
        e.contains("3 of 3 requests failed") && e.contains("failed 3"),
        "{e}"
    );
    let r = run(&[]);
    assert_eq!(r.status, RunStatus::Skipped);
    assert!(r.error_message.unwrap_or_default().contains("no endpoint"));
}

#[test]
fn conversations_a_shared_prefix_and_a_trace() {
    let server = Scripted::start(Script::steady(
        Duration::from_millis(5),
        Duration::from_millis(1),
    ))
    .unwrap();
    let p = |s: &str| s.to_string();
    let r = run(&[
        format!("endpoint={}", server.url),
        p("api=chat"),
        p("concurrency=2"),
        p("requests=6"),
        p("turns=3"),
        p("prefix_tokens=10"),
        p("output_tokens=4"),
    ]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert_eq!(r.details["requests_ok"], ParamValue::Int(6));
    let by_turn = r.details["ttft_p50_ms_by_turn"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(by_turn.contains("turn 3"), "{by_turn}");
    // Every conversation opened with the same ten words, each turn after
    // the first carried the earlier ones.
    let bodies: Vec<serde_json::Value> = server
        .take_truths()
        .iter()
        .map(|t| serde_json::from_str(&t.body).unwrap())
        .filter(|b: &serde_json::Value| b["max_tokens"] == 4)
        .collect();
    assert_eq!(bodies.len(), 6);
    let first_words = |b: &serde_json::Value| -> Vec<String> {
        b["messages"][0]["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .take(10)
            .map(String::from)
            .collect()
    };
    assert!(
        bodies
            .iter()
            .all(|b| first_words(b) == first_words(&bodies[0]))
    );
    let mut lengths: Vec<usize> = bodies
        .iter()
        .map(|b| b["messages"].as_array().unwrap().len())
        .collect();
    lengths.sort();
    assert_eq!(lengths, [1, 1, 3, 3, 5, 5]);

    // A trace of five requests, three replayed (and the result says so).
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(
        &trace,
        (0..5)
            .map(|i| {
                format!(
                    "{{\"timestamp\": {}, \"input_tokens\": 8, \"output_tokens\": {}}}\n",
                    i * 40,
                    i + 2
                )
            })
            .collect::<String>(),
    )
    .unwrap();
    let r = run(&[
        format!("endpoint={}", server.url),
        format!("trace_file={}", trace.display()),
        p("trace_speedup=2"),
        p("requests=3"),
    ]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert_eq!(r.details["output_tokens"], ParamValue::Int(2 + 3 + 4));
    assert!(
        r.details["mode"]
            .as_str()
            .unwrap()
            .starts_with("trace replay, 3 requests")
    );
    assert!(
        r.warnings.iter().any(|w| w.contains("first 3")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn max_throughput_finds_the_rate_a_server_of_known_capacity_holds() {
    // Two completions at a time, each 20 ms + 5 x 2 ms: 66.7 requests/s at
    // most; a rate near it queues, and TTFTs past 60 ms fail the SLO. Steps
    // of 200 requests (3 s) are long enough for a backlog above capacity to
    // show (60 would hide 5 requests/s too many in 40 ms of slack).
    let server = Scripted::start(Script {
        slots: 2,
        ..Script::steady(Duration::from_millis(20), Duration::from_millis(2))
    })
    .unwrap();
    let p = |s: &str| s.to_string();
    let r = run(&[
        format!("endpoint={}", server.url),
        p("max_throughput=true"),
        p("requests=200"),
        p("output_tokens=6"),
        p("slo_ttft_ms=60"),
        p("slo_attainment_pct=90"),
    ]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    let best = r.value_of("max_throughput_requests_per_s").unwrap();
    let steps = r.details["search_steps"].as_str().unwrap().to_string();
    assert!((15.0..=70.0).contains(&best), "{best}: {steps}");
    assert!(steps.contains("pass") && steps.contains("fail"), "{steps}");
    assert!(r.details["mode"].as_str().unwrap().starts_with("open loop"));
    // Without an SLO there is nothing to search for: refused before the run.
    let endpoint = format!("endpoint={}", server.url);
    let e = suite()
        .plan("llm_serve", &[endpoint.as_str(), "max_throughput=true"])
        .unwrap_err();
    assert!(format!("{e:?}").contains("needs an SLO"), "{e:?}");
    // A CA file for a plain-HTTP endpoint, an HTTP that does not exist:
    // refused before the run, naming the parameter.
    for (bad, says) in [
        ("ca_file=Cargo.toml", "parameter 'ca_file'"),
        ("http_version=3", "http_version"),
    ] {
        let e = suite()
            .plan("llm_serve", &[endpoint.as_str(), bad])
            .unwrap_err();
        assert!(format!("{e:?}").contains(says), "{bad}: {e:?}");
    }
}

/// The server process, stopped when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn llm_serve_measures_transformers_serve() {
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-llama");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peer/tiny_served_model.py");
    let made = Command::new(&python)
        .arg(&script)
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let cli = Path::new(&python).with_file_name("transformers");
    let port = free_port();
    let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
    let _server = Server(
        Command::new(&cli)
            .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string()])
            .env("HF_HUB_OFFLINE", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    // Up when it answers; torch takes a while to import.
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "transformers serve did not start: {}",
            std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let endpoint = format!("endpoint=http://127.0.0.1:{port}");
    let model_param = format!("model={}", model.display());
    let tokenizer = format!("tokenizer={}", model.join("tokenizer.json").display());
    let p = |s: &str| s.to_string();
    for api in ["api=completions", "api=chat"] {
        let r = run(&[
            endpoint.clone(),
            model_param.clone(),
            tokenizer.clone(),
            p(api),
            p("ignore_eos=false"),
            p("requests=4"),
            p("concurrency=2"),
            p("input_tokens=16"),
            p("output_tokens=8"),
            p("timeout_s=120"),
        ]);
        assert_eq!(r.status, RunStatus::Passed, "{api}: {:?}", r.error_message);
        assert!(r.validation.as_ref().unwrap().passed, "{:?}", r.validation);
        assert_eq!(r.details["requests_ok"], ParamValue::Int(4));
        assert_eq!(
            r.details["token_counting"],
            ParamValue::Str("tokenizer".into())
        );
        let tokens = r.details["output_tokens"].as_i64().unwrap();
        assert!((4..=32).contains(&tokens), "{api}: {tokens} tokens");
        let ttft = r.metrics.iter().find(|m| m.name == "ttft_ms").unwrap();
        assert!(ttft.value > 0.0);
    }
    // With ignore_eos (the default) this server refuses every request; the
    // failure says which flag to change.
    let r = run(&[endpoint, model_param, p("requests=2"), p("output_tokens=4")]);
    assert_eq!(r.status, RunStatus::Failed);
    let e = r.error_message.unwrap();
    assert!(e.contains("ignore_eos=false"), "{e}");
}
