//! The GPU benchmarks on a real Vulkan device: Mesa's lavapipe, a software
//! device scripts/test installs (mesa-vulkan-drivers) and announces with
//! WARPT_TEST_VULKAN=1. Every benchmark runs for real with
//! `allow_software=true` and its validation; without it the software
//! device is never taken for a GPU; a corrupted result fails validation.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use serde_json::Value;

fn vulkan() -> bool {
    let ok = std::env::var("WARPT_TEST_VULKAN").is_ok_and(|v| v == "1");
    if !ok {
        eprintln!("WARPT_TEST_VULKAN unset: scripts/test installs lavapipe for these tests");
    }
    ok
}

/// Runs `benchmark` with `params`; (exit code, its result).
fn run(benchmark: &str, params: &[&str]) -> (i32, Value) {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("warpt"));
    cmd.env("WARPT_NO_PROGRESS", "1")
        .args([
            "benchmark",
            "run",
            "--benchmark",
            benchmark,
            "--json",
            "--no-store",
        ])
        .args(["--duration", "0.3", "--burnin-seconds", "0.05"]);
    for p in params {
        cmd.args(["--param", p]);
    }
    let out = cmd.output().unwrap();
    let run: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), run["benchmarks"][0].clone())
}

fn metric<'a>(result: &'a Value, name: &str, tag: (&str, &str)) -> &'a Value {
    result["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name && m["tags"][tag.0] == tag.1)
        .unwrap_or_else(|| panic!("no {name} {tag:?} in {result}"))
}

fn detail<'a>(result: &'a Value, key: &str) -> &'a Value {
    &result["details"][key]
}

#[test]
fn gpu_flops_runs_on_the_software_device_only_when_allowed_and_validates() {
    if !vulkan() {
        return;
    }
    let (code, r) = run("gpu_flops", &[]);
    assert_eq!(code, 0);
    assert_eq!(r["status"], "skipped", "{r}");
    let why = r["error_message"].as_str().unwrap();
    assert!(why.contains("no hardware GPU (only llvmpipe"), "{why}");

    let (code, r) = run("gpu_flops", &["allow_software=true"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["status"], "passed", "{r}");
    assert!(
        r["validation"]["message"]
            .as_str()
            .unwrap()
            .contains("f32: all")
    );
    assert!(
        metric(&r, "gflops", ("precision", "f32"))["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // lavapipe has shader-f16: both precisions.
    assert!(
        metric(&r, "gflops", ("precision", "f16"))["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(detail(&r, "device_type"), "Cpu");
    assert_eq!(detail(&r, "backend"), "Vulkan");
    assert!(detail(&r, "adapter").as_str().unwrap().contains("llvmpipe"));
    assert!(detail(&r, "driver").as_str().unwrap().contains("Mesa"));

    let (code, r) = run(
        "gpu_flops",
        &["allow_software=true", "precision=f32", "inject_error=true"],
    );
    assert_eq!(code, 1);
    assert_eq!(r["status"], "failed", "{r}");
    let why = r["validation"]["message"].as_str().unwrap();
    assert!(why.contains("closed form"), "{why}");
}
