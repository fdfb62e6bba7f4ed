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
            .args([
                "benchmark",
                "run",
                "--component",
                "cpu",
                "--duration",
                "1",
                "--burnin-seconds",
                "0",
            ])
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
        .args([
            "monitor",
            "--interval",
            "0.1",
            "--duration",
            "5",
            "--prometheus",
        ])
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
