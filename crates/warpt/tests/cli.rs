//! The command line, driven as a user would: the real binary, real
//! benchmarks on tiny configurations, real files.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use warpt_model::{BenchmarkSuiteRun, RunStatus, StopReason};

mod common;
use common::{succeeded, warpt};

/// Flags that make every micro benchmark finish in well under a second
/// (with `array_mb=4` for mem_bandwidth and `max_mb=1` for mem_latency).
const TINY: &[&str] = &["--duration", "0.05", "--burnin-seconds", "0"];

fn tiny_run(extra: &[&str]) -> Command {
    let mut cmd = warpt();
    cmd.args(["benchmark", "run"]).args(TINY).args(extra);
    cmd
}

fn load(path: &Path) -> BenchmarkSuiteRun {
    common::load_export(path)
}

fn json_stdout(cmd: &mut Command) -> Value {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("stdout is JSON and nothing else")
}

fn assert_usage_error(cmd: &mut Command, needles: &[&str]) {
    let assert = cmd.assert().code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    for n in needles {
        assert!(stderr.contains(n), "stderr {stderr:?} lacks {n:?}");
    }
}

fn assert_measured_and_valid(run: &BenchmarkSuiteRun, name: &str) {
    let r = run
        .benchmarks
        .iter()
        .find(|b| b.spec.id.name == name)
        .unwrap_or_else(|| panic!("{name} missing from the run"));
    assert_eq!(r.status, RunStatus::Passed, "{name}: {:?}", r.error_message);
    assert!(r.success);
    let v = r.validation.as_ref().expect("validated");
    assert!(v.passed, "{name}: {}", v.message);
    assert!(r.stop_reason.is_some());
    assert!(!r.metrics.is_empty());
    for m in &r.metrics {
        let st = m.stats.as_ref().expect("metric carries stats");
        assert!(st.n >= 1 && st.samples.len() == st.n);
        assert!(st.min <= st.median && st.median <= st.max);
        assert!(st.ci95_low <= st.median && st.median <= st.ci95_high);
        assert!(
            m.value > 0.0 && m.value.is_finite(),
            "{name} {} = {}",
            m.name,
            m.value
        );
        assert!(matches!(
            st.stop_reason,
            Some(StopReason::TargetMet | StopReason::TimeCap | StopReason::SampleCap)
        ));
    }
}

#[test]
fn list_shows_every_micro_benchmark() {
    warpt()
        .args(["benchmark", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("cpu_flops").and(predicate::str::contains("mem_latency")));
    let specs = json_stdout(warpt().args(["benchmark", "list", "--json"]));
    let names: Vec<&str> = specs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cpu_flops",
            "mem_bandwidth",
            "mem_latency",
            "disk_io",
            "net_bandwidth",
            "net_latency",
            "gpu_flops",
            "gpu_bandwidth",
            "gpu_transfer",
            "gpu_latency",
            "gemm",
            "linpack_fp64_cpu",
            "linpack_fp32_cpu",
            "linpack_mxp_cpu",
            "linpack_external",
            "linpack_fp64_gpu",
            "llm_infer",
            "llm_serve",
            "tokenize",
            "embed",
            "data_pipeline",
            "end_to_end_infer",
            "vision_infer",
            "speech_infer",
            "file",
            "resnet50_infer",
            "resnet50_train",
            "bert_infer",
            "llm_infer",
            "llm_serve",
            "synthetic",
            "mlperf_external",
            "sw_align",
            "kmer_count",
            "read_map",
            "variant_call",
            "assembly"
        ]
    );
}

#[test]
fn list_filters_by_suite_and_component() {
    let specs =
        json_stdout(warpt().args("benchmark list --suite micro --component ram --json".split(' ')));
    let names: Vec<&str> = specs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mem_bandwidth", "mem_latency"]);
    let specs =
        json_stdout(warpt().args(["benchmark", "list", "--component", "gpu,cpu", "--json"]));
    // cpu_flops, the four linpack benchmarks, seven of pepbench (its
    // end_to_end_infer for its GPU), the harness's user file, four of
    // mlperf (resnet50_infer and _train, bert_infer, llm_infer) and
    // biobench's five (sw_align, kmer_count, read_map, variant_call,
    // assembly); micro's four GPU benchmarks and linpack_fp64_gpu; micro's
    // gemm.
    assert_eq!(specs.as_array().unwrap().len(), 28);
    assert_usage_error(
        warpt().args(["benchmark", "list", "--suite", "nope"]),
        &["unknown suite 'nope'", "micro"],
    );
}

#[test]
fn describe_prints_spec_and_parameters() {
    warpt()
        .args("benchmark describe --suite micro --benchmark mem_bandwidth".split(' '))
        .assert()
        .success()
        .stdout(predicate::str::contains("array_mb").and(predicate::str::contains("STREAM")));
    let spec = json_stdout(
        warpt().args("benchmark describe --suite micro --benchmark cpu_flops --json".split(' ')),
    );
    assert_eq!(spec["id"]["suite"], "micro");
    assert_eq!(spec["params"]["threads"], 0);
    assert_eq!(spec["components"][0], "cpu");
    assert_usage_error(
        warpt().args("benchmark describe --suite micro --benchmark nope".split(' ')),
        &[
            "unknown benchmark 'nope'",
            "cpu_flops",
            "mem_bandwidth",
            "mem_latency",
        ],
    );
    assert_usage_error(
        warpt().args("benchmark describe --suite x --benchmark cpu_flops".split(' ')),
        &["unknown suite 'x'", "micro"],
    );
}

#[test]
fn dry_run_prints_the_plan_with_effective_params() {
    let plan = json_stdout(
        warpt().args(
            "benchmark run --component cpu --component ram --param array_mb=64 --dry-run --json"
                .split(' '),
        ),
    );
    let ids: Vec<&str> = plan["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["cpu_flops", "mem_bandwidth", "mem_latency"]);
    assert_eq!(plan["benchmarks"][1]["params"]["array_mb"], 64);
    assert_eq!(plan["label"], "cpu-ram");
    // Components whose benchmarks do not exist yet are named, not faked.
    let plan = json_stdout(
        warpt().args("benchmark run --component cpu,gpu,system --dry-run --json".split(' ')),
    );
    // cpu: cpu_flops; gpu: gpu_flops; system: pepbench's end_to_end_infer.
    let mut ids: Vec<&str> = plan["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"]["name"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["cpu_flops", "end_to_end_infer", "gpu_flops"]);
    assert!(
        plan["unavailable"].as_array().is_none_or(|u| u.is_empty()),
        "{plan}"
    );
    warpt()
        .args(["benchmark", "run", "--component", "gpu,cpu", "--dry-run"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("micro/cpu_flops")
                .and(predicate::str::contains("micro/gpu_flops")),
        );
    // Suite filtered by component, and repeated --benchmark.
    let plan = json_stdout(
        warpt().args("benchmark run --suite micro --component ram --dry-run --json".split(' ')),
    );
    assert_eq!(plan["benchmarks"].as_array().unwrap().len(), 2);
    let plan = json_stdout(warpt().args("benchmark run --suite micro --benchmark mem_latency --benchmark cpu_flops --dry-run --json".split(' ')));
    assert_eq!(plan["benchmarks"][0]["id"]["name"], "mem_latency");
    assert_eq!(plan["benchmarks"][1]["id"]["name"], "cpu_flops");
    assert_eq!(plan["label"], "micro");
}

#[test]
fn component_cpu_exports_a_valid_suite_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.json");
    tiny_run(&[
        "--component",
        "cpu",
        "--seed",
        "7",
        "--precision",
        "5",
        "--export-file",
    ])
    .arg(&path)
    .assert()
    .success()
    .stdout(predicate::str::contains("gflops"));
    let run = load(&path);
    assert_eq!(run.benchmarks.len(), 1);
    assert_measured_and_valid(&run, "cpu_flops");
    let r = &run.benchmarks[0];
    let mut tags: Vec<(String, String)> = r
        .metrics
        .iter()
        .map(|m| (m.tags["precision"].clone(), m.tags["threads"].clone()))
        .collect();
    tags.sort();
    // fp64 and fp32 everywhere, and each low precision this CPU has
    // (tests/cpu_flops.rs checks those).
    let mut want: Vec<(String, String)> = ["fp32", "fp64"]
        .into_iter()
        .chain(
            warpt_micro::cpu_flops::LowPrecision::ALL
                .into_iter()
                .filter(|p| p.kernel().is_ok())
                .map(|p| p.tag()),
        )
        .flat_map(|p| {
            [
                (p.to_string(), "1".to_string()),
                (p.to_string(), "all".to_string()),
            ]
        })
        .collect();
    want.sort();
    assert_eq!(tags, want);
    assert!(r.metrics.iter().all(|m| m.name == "gflops"
        && m.higher_is_better
        && m.unit
            == if m.tags["precision"].starts_with("int8") {
                // int8 and int8_amx count integer operations.
                "GOP/s"
            } else {
                "GFLOP/s"
            }));
    assert!(r.details.contains_key("isa"));
    let manifest = run.manifest.as_ref().expect("manifest");
    assert_eq!(manifest.seed, 7);
    assert_eq!(manifest.config.duration_s, Some(0.05));
    assert_eq!(manifest.config.burnin_s, 0.0);
    assert!((manifest.config.target_rel_ci - 0.05).abs() < 1e-12);
    assert!(!manifest.kernel.is_empty());
    assert!(
        run.system
            .as_ref()
            .is_some_and(|s| s.cpu.logical_cores >= 1)
    );
    // Pretty-printed, as the seed's export convention asks.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("{\n  \""));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left behind"
    );
}

#[test]
fn component_ram_runs_both_memory_benchmarks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ram.json");
    tiny_run(&[
        "--component",
        "ram",
        "--param",
        "array_mb=4",
        "--param",
        "max_mb=1",
        "--export-file",
    ])
    .arg(&path)
    .assert()
    .success();
    let run = load(&path);
    assert_eq!(run.components, [warpt_model::BenchmarkComponent::Ram]);
    assert_measured_and_valid(&run, "mem_bandwidth");
    assert_measured_and_valid(&run, "mem_latency");
    let bw = &run.benchmarks[0];
    assert_eq!(bw.params["array_mb"], warpt_model::ParamValue::Int(4));
    let kernels: Vec<&str> = bw
        .metrics
        .iter()
        .filter(|m| m.name == "bandwidth")
        .map(|m| m.tags["kernel"].as_str())
        .collect();
    assert_eq!(kernels, ["copy", "scale", "add", "triad"]);
    assert!(bw.metrics.iter().all(|m| m.unit == "GB/s"));
    let lat = &run.benchmarks[1];
    let sizes: Vec<&str> = lat
        .metrics
        .iter()
        .map(|m| m.tags["size_kib"].as_str())
        .collect();
    assert_eq!(sizes, ["16", "32", "64", "128", "256", "512", "1024"]);
    assert!(
        lat.metrics
            .iter()
            .all(|m| m.name == "latency" && m.unit == "ns" && !m.higher_is_better)
    );
}

#[test]
fn json_prints_only_the_suite_run_on_stdout() {
    let out = tiny_run(&[
        "--benchmark",
        "mem_latency",
        "--param",
        "max_mb=1",
        "--json",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let run: BenchmarkSuiteRun =
        serde_json::from_slice(&out.stdout).expect("stdout is exactly one suite run");
    assert_eq!(run.suite, "micro");
    assert_measured_and_valid(&run, "mem_latency");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("latency"),
        "the table goes to stderr"
    );
}

#[test]
fn export_names_the_file_after_suite_or_component() {
    let dir = tempfile::tempdir().unwrap();
    for selection in [["--suite", "micro"], ["--component", "ram"]] {
        tiny_run(&[
            selection[0],
            selection[1],
            "--benchmark",
            "mem_latency",
            "--param",
            "max_mb=1",
            "--export",
        ])
        .current_dir(dir.path())
        .assert()
        .success();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    for (name, label) in names.iter().zip(["micro", "micro"]) {
        // warpt_benchmark_<SUITE_OR_COMPONENT>_<YYYYMMDD>_<HHMMSS>_<6 hex>.json
        let rest = name
            .strip_prefix(&format!("warpt_benchmark_{label}_"))
            .unwrap_or_else(|| panic!("{name}"));
        let parts: Vec<&str> = rest.trim_end_matches(".json").split('_').collect();
        assert_eq!(parts.len(), 3, "{name}");
        assert!(
            parts[0].len() == 8 && parts[1].len() == 6 && parts[2].len() == 6,
            "{name}"
        );
        assert!(parts[2].chars().all(|c| c.is_ascii_hexdigit()));
        load(&dir.path().join(name));
    }
    let plan = json_stdout(warpt().args(["benchmark", "run"]).args(common::RAM_PLAN));
    assert_eq!(plan["label"], "ram");
}

#[test]
fn bad_input_exits_2_naming_the_input() {
    let run = |args: &[&str]| {
        let mut c = warpt();
        c.args(["benchmark", "run"]).args(args);
        c
    };
    assert_usage_error(
        &mut run(&["--suite", "nope"]),
        &["unknown suite 'nope'", "available suites: micro"],
    );
    assert_usage_error(
        &mut run(&["--suite", "micro", "--benchmark", "nope"]),
        &["unknown benchmark 'nope'", "cpu_flops"],
    );
    assert_usage_error(
        &mut run(&["--benchmark", "nope"]),
        &["unknown benchmark 'nope'", "micro/cpu_flops"],
    );
    assert_usage_error(
        &mut run(&["--component", "cpu,disk"]),
        &["disk", "cpu", "ram", "storage"],
    );
    assert_usage_error(
        &mut run(&["--param", "array_mb"]),
        &["malformed --param 'array_mb'", "key=value"],
    );
    assert_usage_error(&mut run(&["--param", "=3"]), &["malformed --param '=3'"]);
    assert_usage_error(
        &mut run(&["--component", "cpu", "--param", "array_mb=8"]),
        &["unknown parameter 'array_mb'", "threads"],
    );
    assert_usage_error(
        &mut run(&["--component", "ram", "--param", "array_mb=big"]),
        &["parameter 'array_mb'", "'big' is not an integer"],
    );
    assert_usage_error(&mut run(&["--duration", "-1"]), &["--duration", "-1"]);
    assert_usage_error(
        &mut run(&["--burnin-seconds", "-0.5"]),
        &["--burnin-seconds", "-0.5"],
    );
    assert_usage_error(
        &mut run(&["--duration", "abc"]),
        &["'abc' is not a number of seconds"],
    );
    assert_usage_error(&mut run(&["--precision", "0"]), &["--precision"]);
    assert_usage_error(
        &mut run(&["--export", "--export-file", "x.json"]),
        &["--export"],
    );
    assert_usage_error(
        &mut run(&["--suite", "biobench", "--component", "gpu"]),
        &["nothing to run", "gpu"],
    );
}

#[test]
fn a_request_file_is_the_servers_json_run_request() {
    let (dir, request) = common::file_in(
        "request.json",
        r#"{"suite": "micro", "benchmarks": ["cpu_flops"], "params": {"threads": 1}, "duration": 0.05}"#,
    );
    let plan = json_stdout(
        warpt()
            .args(["benchmark", "run", "--dry-run", "--json", "--request"])
            .arg(&request),
    );
    assert_eq!(plan["benchmarks"].as_array().unwrap().len(), 1);
    assert_eq!(plan["benchmarks"][0]["id"]["name"], "cpu_flops");
    assert_eq!(plan["benchmarks"][0]["params"]["threads"], 1);
    // `-`: the request on stdin.
    let plan = json_stdout(
        warpt()
            .args("benchmark run --dry-run --json --request -".split(' '))
            .write_stdin(r#"{"suite": "micro", "benchmarks": ["mem_latency"]}"#),
    );
    assert_eq!(plan["benchmarks"][0]["id"]["name"], "mem_latency");
    // Any node id is a benchmark of the pytest plugin's suite; its socket
    // must be given (the plugin sets WARPT_PYTEST_SOCKET) and exist, and it
    // is no parameter (two sessions' results share their noise history).
    let socket = dir.path().join("adapter.sock");
    std::fs::write(&socket, "").unwrap();
    let pytest = dir.path().join("pytest.json");
    let body = serde_json::json!({"suite": "pytest", "benchmarks": ["tests/test_a.py::test_x[1]"],
        "in_process": true});
    std::fs::write(&pytest, body.to_string()).unwrap();
    let plan = json_stdout(
        warpt()
            .args(["benchmark", "run", "--dry-run", "--json", "--request"])
            .arg(&pytest)
            .env("WARPT_PYTEST_SOCKET", &socket),
    );
    assert_eq!(plan["benchmarks"][0]["id"]["suite"], "pytest");
    assert_eq!(
        plan["benchmarks"][0]["id"]["name"],
        "tests/test_a.py::test_x[1]"
    );
    assert_eq!(plan["benchmarks"][0]["params"], serde_json::json!({}));
    let run = |text: &str| {
        std::fs::write(&request, text).unwrap();
        let mut c = warpt();
        c.args(["benchmark", "run", "--dry-run", "--request"])
            .arg(&request);
        c
    };
    assert_usage_error(
        &mut run(r#"{"suite": "micro", "nope": 1}"#),
        &["--request", "nope"],
    );
    assert_usage_error(&mut run("not json"), &["--request"]);
    assert_usage_error(
        &mut run(r#"{"suite": "pytest", "benchmarks": ["t.py::t"]}"#),
        &["WARPT_PYTEST_SOCKET", "pytest --warpt"],
    );
    assert_usage_error(
        run(r#"{"suite": "pytest", "benchmarks": ["t.py::t"]}"#)
            .env("WARPT_PYTEST_SOCKET", dir.path().join("gone.sock")),
        &["gone.sock", "does not exist"],
    );
    assert_usage_error(
        &mut run(r#"{"suite": "pytest", "benchmarks": ["not_a_node_id"]}"#),
        &["unknown benchmark 'not_a_node_id'"],
    );
    assert_usage_error(
        warpt()
            .args(["benchmark", "run", "--suite", "micro", "--request"])
            .arg(&request),
        &["--request", "--suite"],
    );
    assert_usage_error(
        warpt().args(["benchmark", "run", "--request", "/no/such/request.json"]),
        &["--request /no/such/request.json"],
    );
}

#[test]
fn unwritable_export_fails_before_running_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/out.json");
    let mut cmd = tiny_run(&["--component", "cpu", "--export-file"]);
    cmd.arg(&missing);
    assert_usage_error(&mut cmd, &["does not exist", "no/such/dir"]);
    // A directory is not a file name.
    let mut cmd = tiny_run(&["--component", "cpu", "--export-file"]);
    cmd.arg(dir.path());
    assert_usage_error(&mut cmd, &["is a directory"]);
    // A read-only file system (procfs refuses new files even to root).
    let mut cmd = tiny_run(&["--component", "cpu", "--export-file", "/proc/warpt.json"]);
    assert_usage_error(&mut cmd, &["cannot write export '/proc/warpt.json'"]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn schema_describes_the_export() {
    let schema = json_stdout(warpt().arg("schema"));
    assert_eq!(schema["title"], "BenchmarkSuiteRun");
    let text = schema.to_string();
    for name in [
        "stop_reason",
        "ci95_low",
        "target_met",
        "crashed",
        "validation",
        "watchdog",
    ] {
        assert!(text.contains(name), "schema lacks {name}");
    }
}

/// Asks bash, with `warpt completions bash` sourced, to complete `words`.
fn bash_complete(script: &std::path::Path, words: &[&str]) -> String {
    let line = words.join(" ");
    let program = format!(
        "source {script}; COMP_WORDS=({line}); COMP_CWORD={cword}; COMP_LINE='{line}'; \
         COMP_POINT={point}; _warpt warpt {cur} {prev}; echo \"${{COMPREPLY[@]}}\"",
        script = script.display(),
        cword = words.len() - 1,
        point = line.len(),
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = succeeded(std::process::Command::new("bash").args(["-c", &program]));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn bash_completes_commands_and_flags_and_the_man_page_renders() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("warpt.bash");
    let out = warpt().args(["completions", "bash"]).assert().success();
    std::fs::write(&script, &out.get_output().stdout).unwrap();
    assert_eq!(bash_complete(&script, &["warpt", "bench"]), "benchmark");
    assert_eq!(
        bash_complete(&script, &["warpt", "benchmark", "compare", "--fail"]),
        "--fail-on-inconclusive"
    );
    for shell in ["zsh", "fish", "powershell"] {
        let out = warpt().args(["completions", shell]).assert().success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        assert!(
            text.contains("benchmark") && text.contains("noise"),
            "{shell}"
        );
    }
    warpt().args(["completions", "tcsh"]).assert().code(2);
    let man = warpt().arg("man").assert().success();
    let roff = String::from_utf8(man.get_output().stdout.clone()).unwrap();
    assert!(roff.contains(".TH warpt 1"), "{roff}");
    assert!(roff.contains("benchmark") && roff.contains("completions"));
    // A reader that stops early (`| head -1`) ends them quietly, as any filter.
    for args in [&["completions", "bash"][..], &["man"][..]] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("warpt"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "{args:?}: {err}");
    }
}

/// `COLUMNS` (a script's, a pager's or CI's width) bounds every table and
/// paragraph: long cells wrap inside their column.
#[test]
fn tables_fit_the_width_columns_gives() {
    let widest = |args: &[&str]| {
        let out = warpt()
            .env("COLUMNS", "60")
            .env("WARPT_SELFTEST", "1")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        // The tables' lines (and describe's paragraphs, wrapped to the width).
        let w = text
            .lines()
            .filter(|l| !l.contains(": ") || l.starts_with(['│', '┌', '└', '╞', '├']))
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0);
        (w, text)
    };
    for args in [
        &["benchmark", "list"][..],
        &[
            "benchmark",
            "describe",
            "--suite",
            "micro",
            "--benchmark",
            "cpu_flops",
        ][..],
        &[
            "benchmark",
            "run",
            "--suite",
            "selftest",
            "--benchmark",
            "ok",
            "--duration",
            "0.05",
            "--burnin-seconds",
            "0",
            "--no-store",
        ][..],
    ] {
        let (w, text) = widest(args);
        assert!(w <= 60, "{args:?}: {w} columns\n{text}");
    }
}
