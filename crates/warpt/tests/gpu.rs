//! The GPU benchmarks on a real Vulkan device: Mesa's lavapipe, a software
//! device scripts/test installs (mesa-vulkan-drivers) and announces with
//! WARPT_TEST_VULKAN=1. Every benchmark runs for real with
//! `allow_software=true` and its validation; without it the software
//! device is never taken for a GPU; a corrupted result fails validation.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{bench_cmd, warpt};

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
    let (code, r, _) = common::first_result(
        &[
            "--benchmark",
            benchmark,
            "--duration",
            "0.3",
            "--burnin-seconds",
            "0.05",
        ],
        params,
    );
    (code.unwrap(), r)
}

/// `r` was skipped, saying `why`.
fn skipped_with(r: &Value, why: &str) {
    assert_eq!(r["status"], "skipped", "{r}");
    let message = r["error_message"].as_str().unwrap();
    assert!(message.contains(why), "{message}");
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
    skipped_with(&r, "no hardware GPU (only llvmpipe");

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

#[test]
fn bandwidth_transfer_and_latency_run_and_catch_a_wrong_result() {
    if !vulkan() {
        return;
    }
    let (code, r) = run("gpu_bandwidth", &["allow_software=true", "size_mb=8"]);
    assert_eq!((code, r["status"].as_str()), (0, Some("passed")), "{r}");
    for kernel in ["copy", "triad"] {
        assert!(
            metric(&r, "bandwidth", ("kernel", kernel))["value"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    assert_eq!(detail(&r, "array_mib"), 8.0);
    let (code, r) = run("gpu_transfer", &["allow_software=true", "size_mb=4"]);
    assert_eq!((code, r["status"].as_str()), (0, Some("passed")), "{r}");
    for d in ["h2d", "d2h"] {
        assert_eq!(metric(&r, "transfer", ("direction", d))["unit"], "GB/s");
    }
    assert!(detail(&r, "h2d_path").as_str().unwrap().contains("staging"));
    let (code, r) = run("gpu_latency", &["allow_software=true"]);
    assert_eq!((code, r["status"].as_str()), (0, Some("passed")), "{r}");
    let us = &r["metrics"][0];
    assert_eq!(
        (us["name"].as_str(), us["unit"].as_str()),
        (Some("dispatch_us"), Some("us"))
    );
    assert_eq!(us["higher_is_better"], false);

    for (benchmark, size) in [
        ("gpu_bandwidth", Some("size_mb=4")),
        ("gpu_transfer", Some("size_mb=4")),
        ("gpu_latency", None),
    ] {
        let mut params = vec!["allow_software=true", "inject_error=true"];
        params.extend(size);
        let (code, r) = run(benchmark, &params);
        assert_eq!(
            (code, r["status"].as_str()),
            (1, Some("failed")),
            "{benchmark}: {r}"
        );
        assert_eq!(r["validation"]["passed"], false, "{benchmark}");
    }
    // A size past what the adapter can bind is refused before anything runs.
    let out = bench_cmd("gpu_bandwidth")
        .args(["--no-store", "--json"])
        .args([
            "--param",
            "allow_software=true",
            "--param",
            "size_mb=100000",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["benchmarks"][0]["status"], "failed");
    assert!(
        v["benchmarks"][0]["error_message"]
            .as_str()
            .unwrap()
            .contains("size_mb")
    );
}

#[test]
fn warpt_list_names_every_compute_adapter() {
    if !vulkan() {
        return;
    }
    let out = warpt().args(["list", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let adapters = v["compute_adapters"].as_array().unwrap();
    let lvp = adapters
        .iter()
        .find(|a| a["name"].as_str().unwrap().contains("llvmpipe"))
        .unwrap_or_else(|| panic!("{adapters:?}"));
    assert_eq!(
        (lvp["software"].as_bool(), lvp["device_type"].as_str()),
        (Some(true), Some("Cpu"))
    );
    assert_eq!(lvp["index"], 0);
}

#[test]
fn stress_gpu_checks_every_result_and_counts_an_injected_error() {
    if !vulkan() {
        return;
    }
    let stress = |params: &[&str]| {
        let mut cmd = warpt();
        cmd.args("stress gpu --duration 1 --burnin-seconds 0.1 --json --no-store".split(' '));
        for p in params {
            cmd.args(["--param", p]);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Only a software device here: refused unless allowed, saying why.
    let (code, _, err) = stress(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no hardware GPU"), "{err}");
    let (code, out, err) = stress(&["allow_software=true"]);
    assert_eq!(code, 0, "{err}");
    let run: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(run["target"], "gpu");
    assert_eq!(
        (run["passed"].as_bool(), run["errors"].as_u64()),
        (Some(true), Some(0))
    );
    assert!(run["checks"].as_u64().unwrap() > 1_000_000);
    let (code, out, _) = stress(&["allow_software=true", "inject_error=1"]);
    assert_eq!(code, 1);
    let run: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(run["errors"], 1);
    assert!(
        run["error_examples"][0]
            .as_str()
            .unwrap()
            .contains("FMA element")
    );
}

#[test]
fn the_cuda_benchmarks_skip_with_the_reason_where_they_cannot_run() {
    // scripts/test builds the tests' warpt with the `cuda` feature: on a
    // machine without an NVIDIA driver the reason is the driver; in a build
    // without the feature, the build.
    let (code, r) = run("linpack_fp64_gpu", &[]);
    assert_eq!(code, 0);
    if r["status"] == "passed" {
        return; // a machine with an NVIDIA GPU
    }
    let (build, blas) = if cfg!(feature = "cuda") {
        ("no NVIDIA driver", "cuBLAS: no NVIDIA driver")
    } else {
        ("--features cuda", "cuBLAS: this build has no CUDA path")
    };
    skipped_with(&r, build);
    let (code, r) = run("gpu_flops", &["precision=fp64"]);
    assert_eq!(code, 0);
    skipped_with(&r, blas);
}
