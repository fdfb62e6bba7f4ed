//! `warpt harness run` on real Python files in temporary trees: every way
//! a user's benchmark can go wrong gets its status, and the run completes.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use serde_json::Value;

mod common;
use common::{put, warpt};

/// Short trials: these tests check statuses and reports, not speed.
const QUICK: [&str; 4] = ["--duration", "0.2", "--burnin-seconds", "0.05"];

/// For a tree whose pairs are ties (the same work on both sides), where
/// what is checked is not the verdict: a noisy host reads either side up
/// to 2x slower between neighbouring seconds, so no threshold it can reach.
const NO_VERDICT: [&str; 2] = ["--regression-threshold", "1000"];

/// Runs `warpt harness run DIR ARGS` with its reports in `out`: (exit
/// code, summary.json, stderr).
fn run(dir: &Path, out: &Path, extra: &[&str]) -> (i32, Value, String) {
    let o = warpt()
        .args(["harness", "run"])
        .arg(dir)
        .arg("--output-dir")
        .arg(out)
        .arg("--no-store")
        .args(QUICK)
        .args(if extra.contains(&"--rounds") {
            &[][..]
        } else {
            &["--rounds", "2"][..]
        })
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let summary = std::fs::read_to_string(out.join("summary.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (o.status.code().unwrap_or(-1), summary, stderr)
}

/// The summary entry `id` failed, its error saying `why`.
fn failed_with(s: &Value, id: &str, why: &str) {
    let e = entry(s, id);
    assert_eq!(e["status"], "failed", "{e:#}");
    assert!(e["error"].as_str().unwrap().contains(why), "{e:#}");
}

fn entry<'a>(s: &'a Value, id: &str) -> &'a Value {
    common::find_in(&s["benchmarks"], "id", id)
}

/// A benchmark class whose calls sleep `ms` and return `value`.
fn sleeper(ms: f64, value: &str) -> String {
    format!(
        "import time\nclass B:\n    def setup(self): pass\n    def benchmark_fn(self):\n        \
         time.sleep({})\n        return {value}\n    def teardown(self): pass\n",
        ms / 1e3
    )
}

#[test]
fn every_failure_gets_its_status_and_the_run_completes() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    // A setup that never returns: the supervisor's setup limit stops it.
    put(
        &root,
        "ch1/baseline_hang.py",
        "import time\nclass B:\n    def setup(self): time.sleep(3600)\n    def benchmark_fn(self): pass\n    def teardown(self): pass\n",
    );
    put(&root, "ch1/optimized_hang.py", &sleeper(1.0, "None"));
    // benchmark_fn raises.
    put(
        &root,
        "ch1/baseline_crash.py",
        "class B:\n    def setup(self): pass\n    def benchmark_fn(self): return {}['missing']\n    def teardown(self): pass\n",
    );
    put(&root, "ch1/optimized_crash.py", &sleeper(1.0, "None"));
    // A second variant of a failed baseline is not run against it again.
    put(&root, "ch1/optimized_crash_fast.py", &sleeper(0.5, "None"));
    // The variant crashes; its baseline still passed.
    put(&root, "ch1/baseline_fine.py", &sleeper(1.0, "None"));
    put(
        &root,
        "ch1/optimized_fine.py",
        "class B:\n    def setup(self): pass\n    def benchmark_fn(self): raise RuntimeError('boom')\n    def teardown(self): pass\n",
    );
    // validate_result() reports an error.
    put(
        &root,
        "ch2/baseline_check.py",
        "class B:\n    def setup(self): pass\n    def benchmark_fn(self): return 1\n    def validate_result(self): return 'checksum mismatch'\n    def teardown(self): pass\n",
    );
    put(&root, "ch2/optimized_check.py", &sleeper(0.5, "1"));
    // Faster, but wrong.
    put(
        &root,
        "ch2/baseline_wrong.py",
        &sleeper(4.0, "[1.0, 2.0, 3.0]"),
    );
    put(
        &root,
        "ch2/optimized_wrong.py",
        &sleeper(1.0, "[1.0, 2.0, 3.5]"),
    );
    // Decoys discovery must not run.
    put(
        &root,
        "ch2/test_wrong.py",
        "raise SystemExit('a test, not a benchmark')\n",
    );
    put(
        &root,
        "ch2/__init__.py",
        "raise SystemExit('a package marker')\n",
    );
    put(
        &root,
        "ch2/optimized_orphan.py",
        "raise SystemExit('no baseline')\n",
    );
    put(&root, "ch2/helpers.py", "raise SystemExit('a helper')\n");
    let out = t.path().join("out");
    let (code, s, stderr) = run(&root, &out, &["--timeout-multiplier", "0.1"]);
    assert_eq!(code, 1, "{stderr}");
    let hang = entry(&s, "ch1/hang/baseline_hang");
    assert_eq!(hang["status"], "timeout", "{hang:#}");
    assert!(
        hang["error"].as_str().unwrap().contains("setup"),
        "{hang:#}"
    );
    let crash = entry(&s, "ch1/crash/baseline_crash");
    assert_eq!(crash["status"], "failed", "{crash:#}");
    let why = crash["error"].as_str().unwrap();
    assert!(
        why.contains("KeyError") && why.contains("Traceback"),
        "{why}"
    );
    // The other side of a pair whose baseline failed is not compared.
    assert_eq!(entry(&s, "ch1/crash/optimized_crash")["status"], "failed");
    let second = entry(&s, "ch1/crash/optimized_crash_fast");
    assert_eq!(second["status"], "failed", "{second:#}");
    assert_eq!(
        second["error"], "not compared: its baseline failed",
        "{second:#}"
    );
    failed_with(&s, "ch1/fine/optimized_fine", "RuntimeError: boom");
    let base = entry(&s, "ch1/fine/baseline_fine");
    assert_eq!(base["status"], "passed", "{base:#}");
    assert!(base["trials"].as_u64().unwrap() >= 1, "{base:#}");
    failed_with(&s, "ch2/check/baseline_check", "checksum mismatch");
    failed_with(&s, "ch2/wrong/optimized_wrong", "wrong answer");
    let wrong = entry(&s, "ch2/wrong/optimized_wrong");
    assert!(wrong["speedup"].as_f64().unwrap() > 1.5, "{wrong:#}");
    assert!((wrong["accuracy"]["max_abs_error"].as_f64().unwrap() - 0.5).abs() < 1e-12);
    assert_eq!(entry(&s, "ch2/wrong/baseline_wrong")["status"], "passed");
    // Only the eleven pair files ran; no decoy's SystemExit anywhere.
    assert_eq!(s["overall"]["total"], 11, "{s:#}");
    assert!(!stderr.contains("SystemExit"), "{stderr}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("## Key findings") && md.contains("Wrong answer"),
        "{md}"
    );
    for f in ["env.json", "manifest.json"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
}

#[test]
fn a_planted_slowdown_is_named_in_regressions_md() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(&root, "ch1/baseline_work.py", &sleeper(6.0, "[1.0]"));
    let opt = put(&root, "ch1/optimized_work.py", &sleeper(2.0, "[1.0]"));
    let first = t.path().join("first");
    let (code, s, stderr) = run(&root, &first, &["--rounds", "4"]);
    assert_eq!(code, 0, "{stderr}");
    let e = entry(&s, "ch1/work/optimized_work");
    let speedup = e["speedup"].as_f64().unwrap();
    assert!(speedup > 2.0, "6 ms against 2 ms: {speedup}");
    assert_eq!(e["speedup_verdict"], "improved", "{e:#}");
    let [lo, hi] = [0, 1].map(|i| e["speedup_ci95"][i].as_f64().unwrap());
    assert!(lo > 1.0 && lo <= speedup && speedup <= hi, "{e:#}");
    // The optimized variant becomes twice as slow (still faster than its baseline).
    std::fs::write(&opt, sleeper(4.0, "[1.0]")).unwrap();
    let second = t.path().join("second");
    let (code, _, stderr) = run(
        &root,
        &second,
        &["--compare-to", first.join("summary.json").to_str().unwrap()],
    );
    assert_eq!(
        code, 1,
        "a regression against the earlier run fails: {stderr}"
    );
    let md = std::fs::read_to_string(second.join("regressions.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.contains("ch1/work/optimized_work"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains("latency"), "{row}");
    assert!(
        !md.contains("ch1/work/baseline_work |"),
        "the baseline did not change: {md}"
    );
    // The earlier summary as a git ref holds it: REF:PATH.
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(t.path())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "first/summary.json"]);
    git(&["commit", "-q", "-m", "first"]);
    let third = t.path().join("third");
    let (code, _, stderr) = run(&root, &third, &["--compare-to", "HEAD:first/summary.json"]);
    assert_eq!(code, 1, "{stderr}");
    let md = std::fs::read_to_string(third.join("regressions.md")).unwrap();
    assert!(md.contains("against `HEAD:first/summary.json`"), "{md}");
    assert!(md.contains("ch1/work/optimized_work"), "{md}");
}

#[test]
fn an_optimized_variant_slower_than_its_baseline_regresses() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(&root, "ch1/baseline_slow.py", &sleeper(2.0, "None"));
    put(&root, "ch1/optimized_slow.py", &sleeper(4.0, "None"));
    let (code, s, stderr) = run(&root, &t.path().join("out"), &["--rounds", "4"]);
    assert_eq!(code, 1, "{stderr}");
    let e = entry(&s, "ch1/slow/optimized_slow");
    assert_eq!(e["regression"], true, "{e:#}");
    assert_eq!(s["overall"]["regressed"], 1);
    assert!(e["speedup"].as_f64().unwrap() < 0.7, "{e:#}");
    assert!(
        e["accuracy_note"]
            .as_str()
            .unwrap()
            .starts_with("not checked"),
        "None is no output: {e:#}"
    );
}

#[test]
fn a_bench_yaml_matrix_with_a_skip_condition() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(
        &root,
        "kernels/scale.py",
        "def run_benchmark(problem_size=8, iterations=1, precision='fp64', backend='cpu'):\n    \
         assert precision in ('fp32', 'fp64') and backend == 'cpu', (precision, backend)\n    \
         return [float(i) for i in range(problem_size)]\n",
    );
    put(
        &root,
        "kernels/bench.yaml",
        "problem_size:\n  problem_size: 16\nprecisions: [fp32, fp64]\nbackends: [cpu, cuda]\n\
         skip_conditions:\n  - backend: cuda\n    reason: no CUDA on this machine\n    check: \"true\"\n",
    );
    let out = t.path().join("out");
    let (code, s, stderr) = run(&root, &out, &["--targets", "kernels"]);
    assert_eq!(code, 0, "{stderr}");
    let all = s["benchmarks"].as_array().unwrap();
    assert_eq!(all.len(), 4, "{s:#}");
    let status = |p: &str, b: &str| {
        all.iter()
            .find(|e| e["tags"]["precision"] == p && e["tags"]["backend"] == b)
            .map(|e| {
                (
                    e["status"].as_str().unwrap().to_string(),
                    e["error"].clone(),
                )
            })
            .unwrap()
    };
    assert_eq!(status("fp32", "cpu").0, "passed");
    assert_eq!(status("fp64", "cpu").0, "passed");
    let (st, why) = status("fp32", "cuda");
    assert_eq!(st, "skipped");
    assert_eq!(why, "no CUDA on this machine");
    let cpu = all
        .iter()
        .find(|e| e["tags"]["precision"] == "fp32" && e["tags"]["backend"] == "cpu")
        .unwrap();
    assert!(cpu["latency_ms"]["p50"].as_f64().unwrap() > 0.0);
    // Each combination has its own per-benchmark file.
    let files = std::fs::read_dir(out.join("benchmarks")).unwrap().count();
    assert_eq!(files, 4);
    // --precision / --backends run the combinations they name.
    let out = t.path().join("only");
    let (code, s, stderr) = run(
        &root,
        &out,
        &[
            "--targets",
            "kernels",
            "--precision",
            "fp64",
            "--backends",
            "cpu",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let only = s["benchmarks"].as_array().unwrap();
    assert_eq!(only.len(), 1, "{s:#}");
    assert_eq!(only[0]["tags"]["precision"], "fp64");
    assert_eq!(only[0]["tags"]["backend"], "cpu");
    // A value no bench.yaml declares is a usage error before anything runs.
    let (code, _, stderr) = run(&root, &t.path().join("typo"), &["--precision", "fp46"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--precision fp46: no bench.yaml"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_bench_yaml_is_a_usage_error_naming_line_and_key() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(&root, "ch1/baseline_a.py", &sleeper(1.0, "None"));
    put(&root, "ch1/optimized_a.py", &sleeper(1.0, "None"));
    put(
        &root,
        "ch1/bench.yaml",
        "precisions: [fp32]\ntolerance:\n  rmse: 1\n",
    );
    let o = warpt()
        .args(["harness", "run"])
        .arg(&root)
        .arg("--output-dir")
        .arg(t.path().join("out"))
        .arg("--no-store")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bench.yaml:2"), "{err}");
    assert!(err.contains("tolerance"), "{err}");
}

#[test]
fn llm_latencies_become_ttft_and_tpot_metrics() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    let llm = "import time\nclass Llm:\n    def setup(self): self.i = 0\n    def benchmark_fn(self):\n        \
         self.i += 1\n        time.sleep(0.005)\n        \
         return {'ttft_times_ms': [10.0 + self.i % 3, 12.0], 'tpot_times_ms': [1.0, 1.5, 2.0]}\n    \
         def teardown(self): pass\n";
    put(&root, "ch1/baseline_llm.py", llm);
    put(&root, "ch1/optimized_llm.py", llm);
    let (code, s, stderr) = run(
        &root,
        &t.path().join("out"),
        &["--regression-threshold", "50"],
    );
    assert_eq!(code, 0, "{stderr}");
    let e = entry(&s, "ch1/llm/optimized_llm");
    let ttft = &e["ttft_ms"];
    // Two requests a call, counted over the measured calls only (one call
    // a sample at 5 ms), not the warm-up's.
    let calls = e["latency_ms"]["n"].as_u64().unwrap();
    assert_eq!(ttft["n"].as_u64().unwrap(), 2 * calls, "{e:#}");
    assert!(
        (10.0..=12.0).contains(&ttft["p50"].as_f64().unwrap()),
        "{e:#}"
    );
    assert_eq!(e["tpot_ms"]["p50"].as_f64().unwrap(), 1.5, "{e:#}");
    assert!(e["peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "{e:#}");
    // Which timer made the samples, and how fine it is (perf_counter on
    // Linux: 1 ns; never coarser than a microsecond here).
    assert_eq!(e["timing"], "host", "{e:#}");
    let resolution = e["timer_resolution_ns"].as_u64().unwrap();
    assert!((1..=1000).contains(&resolution), "{e:#}");
}

#[test]
fn cold_start_reproducible_and_profile_runs_complete() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    let seeded = "import random\nclass B:\n    def setup(self): self.x = random.random()\n    \
                  def benchmark_fn(self): return [self.x]\n    def teardown(self): pass\n";
    put(&root, "ch1/baseline_seeded.py", seeded);
    put(&root, "ch1/optimized_seeded.py", seeded);
    let out = t.path().join("out");
    let (code, s, stderr) = run(
        &root,
        &out,
        // Identical code on both sides: the verdict on their speed is not
        // what this test checks (a chance 5% would fail it).
        &[
            "--cold-start",
            "--reproducible",
            "--profile",
            "perf",
            "--regression-threshold",
            "50",
        ],
    );
    // Seeded alike, both sides return the same random number: accurate.
    assert_eq!(code, 0, "{stderr}");
    let e = entry(&s, "ch1/seeded/optimized_seeded");
    assert_eq!(e["accuracy"]["max_abs_error"], 0.0, "{e:#}");
    let full: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("benchmarks/ch1__seeded__optimized_seeded.json"))
            .unwrap(),
    )
    .unwrap();
    let cold = full["details"]["cold_start"].as_str().unwrap_or_default();
    assert!(cold.contains("fresh interpreter per sample"), "{full:#}");
    assert_eq!(full["details"]["calls_per_sample"], 1, "{full:#}");
    let profiled: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("profile/profile.json")).unwrap())
            .unwrap();
    let first = &profiled[0];
    assert!(
        first["artifact"].is_string() || first["note"].is_string(),
        "{profiled:#}"
    );
    assert!(stderr.contains("profile perf"), "{stderr}");
}

/// The adapter's channel is private: a setup that writes a forged reply
/// to fd 1 through a shell (`os.system`) and through C (`write(2)`, as an
/// extension module would), and reads fd 0, neither breaks the run nor
/// passes for a timing (what they wrote goes to the worker's stderr, whose
/// tail a crash report quotes).
#[test]
fn user_code_writing_to_fd_1_cannot_forge_the_channel() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(
        &root,
        "ch1/baseline_loud.py",
        r#"import ctypes, os, time
class B:
    def setup(self):
        os.system("echo '{\"ok\":true,\"elapsed_ns\":1}' ; echo shell-wrote-this")
        line = b'{"ok":true,"elapsed_ns":1}\nc-wrote-this\n'
        ctypes.CDLL(None).write(1, line, len(line))
        input_seen = os.read(0, 10)
        assert input_seen == b"", input_seen
    def benchmark_fn(self):
        time.sleep(0.002)
    def teardown(self): pass
"#,
    );
    put(&root, "ch1/optimized_loud.py", &sleeper(2.0, "None"));
    let out = t.path().join("out");
    let (code, summary, stderr) = run(&root, &out, &NO_VERDICT);
    assert_eq!(code, 0, "{stderr}");
    let e = entry(&summary, "ch1/loud/baseline_loud");
    assert_eq!(e["status"], "passed", "{e:#}\n{stderr}");
    // 2 ms sleeps: a forged 1 ns timing would show as a far smaller p50.
    let p50 = e["latency_ms"]["p50"].as_f64().unwrap();
    assert!(p50 > 1.0, "p50 {p50} ms: a forged reply was taken");
}

/// A benchmark class whose call sums `n` integers in a Python loop.
fn summer(n: u32) -> String {
    format!(
        "class B:\n    def setup(self): self.n = {n}\n    def benchmark_fn(self):\n        \
         s = 0\n        for i in range(self.n):\n            s += i % 7\n        return 1\n    \
         def teardown(self): pass\n"
    )
}

#[test]
fn measure_instructions_counts_one_call_and_follows_the_work() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(&root, "ch1/baseline_sum.py", &summer(2000));
    put(&root, "ch1/optimized_sum.py", &summer(1000));
    let export = t.path().join("run.json");
    let (code, s, stderr) = run(
        &root,
        &t.path().join("out"),
        &[
            "--rounds",
            "1",
            "--measure",
            "instructions",
            // Counted under cachegrind where the CPU's counters are not
            // given (a guest), the interpreter runs ~50x slower: a slow
            // host's 2000-call session passed the stage's default limit.
            "--timeout-multiplier",
            "4",
            "--export-file",
            export.to_str().unwrap(),
        ],
    );
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let named = |list: &Value, name: &str| -> Value {
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["spec"]["id"]["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {list:#}"))
            .clone()
    };
    let base = &named(&run["benchmarks"], "ch1/sum/baseline_sum");
    // `python3` was asked once which file it runs (a launcher such as
    // pyenv's shim then runs once, not per trial), and that is recorded.
    assert_eq!(base["params"]["python"], "python3");
    let exe = std::path::Path::new(base["params"]["python_executable"].as_str().unwrap());
    assert!(exe.is_absolute() && exe.is_file(), "{exe:?}");
    if base["status"] == "skipped" {
        // Neither the CPU's counters nor valgrind here: it says so.
        let why = base["error_message"].as_str().unwrap();
        assert!(why.contains("--measure instructions"), "{why}");
        return;
    }
    assert_eq!(code, 0, "{stderr}");
    let per_call = |r: &Value| {
        let m = common::metric_of(r, "instructions");
        assert_eq!(m["unit"], "instructions");
        m["value"].as_f64().unwrap()
    };
    let opt = &named(&run["benchmarks"], "ch1/sum/optimized_sum");
    let (b, o) = (per_call(base), per_call(opt));
    // Half the loop, half the instructions: the interpreter's start,
    // imports and setup cancel out between the sessions of N and 2N calls.
    assert!(o > 0.4 * b && o < 0.6 * b, "{b} then {o}");
    let source = base["details"]["count_source"].as_str().unwrap();
    assert!(["perf_event", "cachegrind"].contains(&source), "{source}");
    // Counted twice; under cachegrind the same to a few instructions.
    assert_eq!(base["details"]["count_runs"], 2);
    let spread = base["details"]["instructions_spread_pct"].as_f64().unwrap();
    if source == "cachegrind" {
        assert!(spread < 0.01, "{spread}");
    }
    let e = entry(&s, "ch1/sum/baseline_sum");
    assert_eq!(e["instructions_per_call"].as_f64().unwrap(), b, "{e:#}");
}

#[test]
fn a_passing_benchmarks_own_output_is_kept_in_its_log() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    // Python's print and a write to fd 1 underneath it (as C's printf).
    let talker = |name: &str| {
        format!(
            "import os, sys\nclass B:\n    def setup(self):\n        \
             print('setup of {name}', flush=True)\n        \
             os.write(1, b'native write of {name}\\n')\n    \
             def benchmark_fn(self): return 1.0\n    def teardown(self): pass\n"
        )
    };
    put(&root, "ch1/baseline_talk.py", &talker("baseline"));
    put(&root, "ch1/optimized_talk.py", &talker("optimized"));
    let out = t.path().join("out");
    let (code, s, stderr) = run(&root, &out, &NO_VERDICT);
    assert_eq!(code, 0, "{stderr}");
    for (id, name) in [
        ("ch1/talk/baseline_talk", "baseline"),
        ("ch1/talk/optimized_talk", "optimized"),
    ] {
        let e = entry(&s, id);
        assert_eq!(e["status"], "passed", "{e:#}");
        let log = e["output_log"].as_str().unwrap();
        assert!(
            log.starts_with("outputs/") && log.ends_with(".log"),
            "{e:#}"
        );
        let text = std::fs::read_to_string(out.join(log)).unwrap();
        // Every trial (2 rounds) appended its output, all from the one
        // worker the benchmark keeps for its trials.
        assert_eq!(
            text.matches(&format!("setup of {name}")).count(),
            2,
            "{text}"
        );
        assert_eq!(
            text.matches(&format!("native write of {name}")).count(),
            2,
            "{text}"
        );
        assert_eq!(text.matches("worker started").count(), 1, "{text}");
        let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(md.contains(&format!("[log]({log})")), "{md}");
    }
    // A second run into the same directory starts the logs afresh.
    let (code, s, stderr) = run(&root, &out, &NO_VERDICT);
    assert_eq!(code, 0, "{stderr}");
    let log = entry(&s, "ch1/talk/baseline_talk")["output_log"]
        .as_str()
        .unwrap()
        .to_string();
    let text = std::fs::read_to_string(out.join(log)).unwrap();
    assert_eq!(text.matches("setup of baseline").count(), 2, "{text}");
}
