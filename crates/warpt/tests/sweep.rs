//! Parameter sweeps: `--param n=100,200` runs one result per value, each
//! metric tagged with it, and a comparison keeps the values apart.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{bench_cmd, json_of, stderr_of, stdout_of, suite_run_of, warpt};

use warpt_model::{BenchmarkSuiteRun, RunStatus};

fn sweep_run(dir: &std::path::Path, name: &str) -> (BenchmarkSuiteRun, std::path::PathBuf) {
    let path = dir.join(name);
    let out = stdout_of(
        bench_cmd("linpack_fp64_cpu")
            .args(["--no-store"])
            .args("--param n=64,96 --param solver=blocked --param nb=16,32".split(' '))
            .args("--duration 0.1 --burnin-seconds 0 --json --export-file".split(' '))
            .arg(&path),
    );
    (serde_json::from_slice(&out).unwrap(), path)
}

#[test]
fn a_sweep_runs_every_combination_tagged_with_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let (run, first) = sweep_run(dir.path(), "a.json");
    let combos: Vec<(String, String)> = run
        .benchmarks
        .iter()
        .map(|b| {
            assert_eq!(b.status, RunStatus::Passed, "{:?}", b.error_message);
            let g = b.metrics.iter().find(|m| m.name == "gflops").unwrap();
            assert_eq!(g.tags.get("n").unwrap(), &b.params["n"].to_string());
            assert!(
                !g.tags.contains_key("solver"),
                "a single value is not a sweep"
            );
            (g.tags["n"].clone(), g.tags["nb"].clone())
        })
        .collect();
    assert_eq!(
        combos,
        [("64", "16"), ("64", "32"), ("96", "16"), ("96", "32")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );

    // Compared with another sweep, each combination matches its own.
    let (_, second) = sweep_run(dir.path(), "b.json");
    let c = json_of(
        warpt()
            .args(["benchmark", "compare", "--format", "json"])
            .arg(&first)
            .arg(&second)
            .arg("--threshold")
            .arg("1000"),
    );
    let gflops = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"] == "gflops")
        .count();
    assert_eq!(gflops, 4);

    // A bad value anywhere in the list is a usage error before anything runs.
    bench_cmd("linpack_fp64_cpu")
        .args(["--param", "n=64,x"])
        .assert()
        .code(2);
}

#[test]
fn strings_with_declared_choices_sweep_and_others_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("matrix.json");
    let run = suite_run_of(
        // pepbench's (mlperf has an llm_infer too): `suite/name`.
        bench_cmd("pepbench/llm_infer")
            .args(["--no-store", "--json"])
            .arg("--export-file")
            .arg(&export)
            .args(["--param", "model=tiny", "--param", "precision=f32,bf16"])
            .args(["--param", "batch=1,2", "--param", "prompt_tokens=8"])
            .args("--param gen_tokens=3 --duration 0.1 --burnin-seconds 0".split(' ')),
    );
    let combos: Vec<(String, String)> = run
        .benchmarks
        .iter()
        .map(|b| {
            assert_eq!(b.status, RunStatus::Passed, "{:?}", b.error_message);
            let m = b
                .metrics
                .iter()
                .find(|m| m.name == "output_tokens_per_s")
                .unwrap();
            assert!(
                !m.tags.contains_key("model"),
                "a single value is not a sweep"
            );
            (m.tags["precision"].clone(), m.tags["batch"].clone())
        })
        .collect();
    assert_eq!(
        combos,
        // Keys in name order (batch, precision), values in the order given.
        [("f32", "1"), ("bf16", "1"), ("f32", "2"), ("bf16", "2")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // The HTML report draws throughput against batch, one line per precision.
    let html = stdout_of(warpt().args(["report", "--format", "html"]).arg(&export));
    let html = String::from_utf8(html).unwrap();
    let at = html
        .find("llm_infer output_tokens_per_s against batch")
        .expect("a scaling chart against batch");
    let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
    for precision in ["precision=f32", "precision=bf16"] {
        assert!(figure.contains(precision), "no {precision} line");
    }
    // A value outside the choices is a usage error naming them.
    let err = stderr_of(
        warpt().args([
            "benchmark",
            "run",
            "--benchmark",
            // pepbench's (mlperf has an llm_infer too): `suite/name`.
            "pepbench/llm_infer",
            "--param",
            "precision=f32,f64",
        ]),
        2,
    );
    assert!(err.contains("'f64' is not one of f32, bf16, f16"), "{err}");
}

#[test]
fn a_swept_value_clashing_with_a_metric_tag_goes_to_param_dot_name() {
    // cpu_flops tags its series threads=1 and threads=all; sweeping its
    // `threads` parameter must still tell the two entries' series apart.
    let run = suite_run_of(
        bench_cmd("cpu_flops")
            .args(["--param", "threads=1,2", "--param", "precision=fp64"])
            .args("--duration 0.05 --burnin-seconds 0 --no-store --json".split(' ')),
    );
    let mut keys: Vec<String> = run
        .benchmarks
        .iter()
        .flat_map(|b| &b.metrics)
        .map(|m| m.tag_label())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "param.threads=1,precision=fp64,threads=all",
            "param.threads=2,precision=fp64,threads=1",
            "param.threads=2,precision=fp64,threads=all",
            "precision=fp64,threads=1",
        ]
    );
}
