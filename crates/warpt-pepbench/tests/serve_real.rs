//! `llm_serve` against a real OpenAI-compatible server: Hugging Face's
//! `transformers serve` (PyPI, in scripts/test's transformers venv, named
//! by `WARPT_TEST_TRANSFORMERS_PYTHON`) serving a tiny seeded Llama written
//! by transformers. A few requests on each API, tokens counted with the
//! model's own tokenizer; `ignore_eos`, which this server refuses, named in
//! the failure with the flag that fixes it.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use warpt_harness::{NoProgress, Plan, Registry, RunOptions, Selection, run_plan};
use warpt_model::{BenchmarkRunResult, ParamValue, RunStatus};
use warpt_pepbench::PepbenchSuite;

fn run(params: &[String]) -> BenchmarkRunResult {
    let mut registry = Registry::new();
    registry.register(Box::new(PepbenchSuite));
    let selection = Selection {
        suite: Some("pepbench".into()),
        benchmarks: vec!["llm_serve".into()],
        params: params.to_vec(),
        ..Selection::default()
    };
    let plan = Plan::resolve(&registry, &selection).expect("valid selection");
    let mut options = RunOptions::new("test", "test");
    options.duration = Some(Duration::from_secs(5));
    options.burnin = Duration::ZERO;
    options.in_process = true;
    run_plan(&registry, &plan, &options, &NoProgress)
        .benchmarks
        .remove(0)
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
