//! The model benchmarks on a GPU, as far as a machine without one can see
//! them: `--component gpu` plans them with `device=cuda`, and a run on
//! `device=cuda` is skipped naming what is missing (a build without the
//! `cuda` feature, or no NVIDIA driver) instead of failing or faking a
//! figure. On a machine with an NVIDIA GPU, `scripts/gpu-check` runs them.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::run_json;

use serde_json::Value;

/// The planned benchmarks of `args` (a dry run): (name, its `device`).
fn planned(args: &[&str]) -> Vec<(String, Value)> {
    let mut all = vec!["benchmark", "run", "--dry-run", "--json"];
    all.extend_from_slice(args);
    run_json(&all)["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["id"]["name"].as_str().unwrap().to_string(),
                b["params"]["device"].clone(),
            )
        })
        .collect()
}

#[test]
fn component_gpu_plans_the_model_benchmarks_on_cuda() {
    let pep = planned(&["--suite", "pepbench", "--component", "gpu"]);
    let names: Vec<&str> = pep.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "llm_infer",
        "embed",
        "vision_infer",
        "speech_infer",
        "end_to_end_infer",
    ] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    // Nothing that never touches a GPU (tokenize, the HTTP client).
    assert!(
        !names.contains(&"tokenize") && !names.contains(&"llm_serve"),
        "{names:?}"
    );
    assert!(pep.iter().all(|(_, d)| d == "cuda"), "{pep:?}");

    let mlperf = planned(&["--suite", "mlperf", "--component", "gpu"]);
    let names: Vec<&str> = mlperf.iter().map(|(n, _)| n.as_str()).collect();
    for want in ["resnet50_infer", "bert_infer", "llm_infer"] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    assert!(mlperf.iter().all(|(_, d)| d == "cuda"), "{mlperf:?}");

    // A device the user names wins; cpu and gpu together keep the default.
    let named = planned(&[
        "--suite",
        "pepbench",
        "--component",
        "gpu",
        "--param",
        "device=cpu",
    ]);
    assert!(named.iter().all(|(_, d)| d == "cpu"), "{named:?}");
    let both = planned(&["--suite", "pepbench", "--component", "cpu,gpu"]);
    assert!(
        both.iter().all(|(_, d)| d.is_null() || d == "cpu"),
        "{both:?}"
    );
}

#[test]
fn a_model_on_cuda_without_a_gpu_is_skipped_with_the_reason() {
    for (suite, name, extra) in [
        ("pepbench", "llm_infer", "model=tiny"),
        ("pepbench", "embed", "model=tiny"),
        ("mlperf", "resnet50_infer", "image_size=32"),
    ] {
        let run = run_json(&[
            "benchmark",
            "run",
            "--suite",
            suite,
            "--benchmark",
            name,
            "--param",
            "device=cuda",
            "--param",
            extra,
            "--duration",
            "0.1",
            "--no-store",
            "--json",
        ]);
        let r = &run["benchmarks"][0];
        if r["status"] == "passed" {
            // A machine with a GPU and a cuda build: it ran there.
            let device = r["details"]["device"].as_str().unwrap();
            assert!(device.contains("(cuda:0)"), "{device}");
            continue;
        }
        assert_eq!(r["status"], "skipped", "{name}: {r}");
        let why = r["error_message"].as_str().unwrap();
        assert!(
            why.contains("built without candle's cuda support")
                || why.contains("no NVIDIA driver")
                || why.contains("could not be loaded")
                || why.contains("no CUDA device"),
            "{name}: {why}"
        );
    }
}

/// The binary (with or without the `cuda` feature) needs no CUDA library
/// to start: cuBLAS, cuSOLVER, cuRAND and the driver are opened when a
/// CUDA benchmark first asks, and the static kernels' runtime is linked
/// in. So one binary serves machines with and without NVIDIA GPUs.
#[test]
fn the_binary_links_no_cuda_library() {
    let bin = env!("CARGO_BIN_EXE_warpt");
    let out = std::process::Command::new("ldd").arg(bin).output().unwrap();
    assert!(out.status.success(), "ldd {bin} failed");
    let needed = String::from_utf8_lossy(&out.stdout);
    for lib in [
        "libcuda",
        "libcublas",
        "libcudart",
        "libcurand",
        "libnvrtc",
        "libcusolver",
    ] {
        assert!(!needed.contains(lib), "{bin} needs {lib}:\n{needed}");
    }
    // And it starts: the inventory runs where there is no driver.
    common::warpt().arg("list").assert().success();
}
