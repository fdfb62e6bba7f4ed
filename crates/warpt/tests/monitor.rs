//! `--monitor`: a background timeline, and a telemetry summary per result.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{stdout_of, suite_run_of, warpt};

use serde_json::Value;

#[test]
fn benchmark_run_attaches_telemetry_and_writes_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let timeline = dir.path().join("t.json");
    let run = suite_run_of(
        warpt()
            .args("benchmark run --component cpu --duration 1 --burnin-seconds 0".split(' '))
            .args(["--monitor", "--monitor-interval", "0.1", "--monitor-output"])
            .arg(&timeline)
            .arg("--json"),
    );
    let t = run.benchmarks[0]
        .telemetry
        .as_ref()
        .expect("telemetry summary");
    assert!(t.samples >= 5, "{t:?}");
    assert!(
        t.mean_cpu_utilization_percent.unwrap() > 30.0,
        "cpu_flops keeps the CPUs busy: {t:?}"
    );
    assert!(t.min_freq_mhz.unwrap() > 0.0);
    assert!(
        t.energy_j.is_some() || t.notes.iter().any(|n| n.contains("power")),
        "{t:?}"
    );
    let samples: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&timeline).unwrap()).unwrap();
    let extra = &run.manifest.unwrap().extra;
    assert_eq!(
        extra["monitor_samples"],
        warpt_model::ParamValue::Int(samples.len() as i64)
    );
    assert!(samples.len() >= 10);
    for s in &samples {
        for key in [
            "timestamp",
            "cpu_utilization_percent",
            "total_memory_bytes",
            "memory_utilization_percent",
            "gpu_usage",
        ] {
            assert!(s.get(key).is_some(), "{key} missing");
        }
        let cpu = s["cpu_utilization_percent"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&cpu));
    }
}

#[test]
fn each_result_carries_its_memory_over_time_and_the_report_draws_it() {
    // bert-tiny (4.4 M parameters) and bert-base's shape (110 M: 440 MB
    // in f32, with its packed copy more) in one run: each worker's memory
    // is its own result's.
    let dir = tempfile::tempdir().unwrap();
    let out = stdout_of(
        common::suite_cmd("pepbench", "embed")
            .args("--param model=tiny,base --param batch=2 --param seq_len=16".split(' '))
            .args(["--duration", "0.5", "--burnin-seconds", "0", "--no-store"])
            .args(["--monitor", "--monitor-interval", "0.05", "--json"]),
    );
    let path = dir.path().join("run.json");
    std::fs::write(&path, &out).unwrap();
    let run = warpt_model::load_suite_run(&String::from_utf8_lossy(&out)).unwrap();
    let memory = |model: &str| {
        let r = run
            .benchmarks
            .iter()
            .find(|r| r.metrics[0].tags["model"] == model)
            .unwrap();
        r.telemetry.clone().expect("telemetry summary")
    };
    let (tiny, base) = (memory("tiny"), memory("base"));
    for t in [&tiny, &base] {
        let (peak, mean) = (t.peak_rss_bytes.unwrap(), t.mean_rss_bytes.unwrap());
        assert!(peak >= mean && mean > 0, "{t:?}");
        assert!(!t.memory_timeline.is_empty() && t.memory_timeline.len() <= 200);
        assert!(t.memory_timeline.iter().any(|p| p.rss_bytes == peak));
        assert!(
            t.memory_timeline
                .windows(2)
                .all(|w| w[0].seconds <= w[1].seconds)
        );
    }
    let (small, large) = (tiny.peak_rss_bytes.unwrap(), base.peak_rss_bytes.unwrap());
    assert!(
        large > small + (400 << 20),
        "bert-base's peak {large} should exceed bert-tiny's {small} by its weights"
    );
    let html = String::from_utf8(stdout_of(
        warpt().args(["report", "--format", "html"]).arg(&path),
    ))
    .unwrap();
    assert!(html.contains("Memory over time"), "no memory section");
    assert!(html.contains("resident memory"), "no memory chart");
}

#[test]
fn monitor_flags_need_monitor_and_a_sane_interval() {
    let run = |args: &[&str]| {
        warpt()
            .args(["benchmark", "run", "--dry-run"])
            .args(args)
            .assert()
            .code(2)
    };
    run(&["--monitor-interval", "0.5"]);
    run(&["--monitor", "--monitor-interval", "0.01"]);
}

#[test]
fn monitor_streams_ndjson_and_serves_prometheus() {
    let out =
        stdout_of(warpt().args(["monitor", "--json", "--interval", "0.2", "--duration", "1"]));
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        (4..=6).contains(&lines.len()),
        "{} samples in 1 s at 0.2 s",
        lines.len()
    );
    assert!(
        lines
            .iter()
            .all(|s| s["total_memory_bytes"].as_u64().unwrap() > 0)
    );

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .args("monitor --interval 0.1 --duration 5 --prometheus".split(' '))
        .arg(addr.to_string())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut body = String::new();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if let Ok(mut s) = std::net::TcpStream::connect(addr) {
            use std::io::{Read, Write};
            s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
            s.read_to_string(&mut body).unwrap();
            if body.contains("warpt_memory_total_bytes") {
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(body.starts_with("HTTP/1.0 200"), "{body}");
    assert!(
        body.contains("# TYPE warpt_cpu_utilization_percent gauge"),
        "{body}"
    );
}
