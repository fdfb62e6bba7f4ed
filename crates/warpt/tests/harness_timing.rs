//! `warpt harness run`'s timing modes, device hygiene, cold caches and
//! error records, on real Python files: `pytorch` timing against `host`
//! timing with real PyTorch (the transformers venv scripts/test makes,
//! `WARPT_TEST_TRANSFORMERS_PYTHON`), `device` timing falling back on a
//! CPU, `triton` skipped where it cannot run, and a failure that keeps what
//! was measured before it.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{put, warpt};

/// Runs `warpt harness run DIR ARGS` with its reports and export in `out`:
/// (exit code, summary.json, the export, stderr).
/// The tests here time real work and compare timers: one at a time, so
/// that no other test of this file shares the two cores with a timed
/// comparison (the CIs of two timers drifted apart under that load).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn run(dir: &Path, out: &Path, extra: &[&str]) -> (i32, Value, Value, String) {
    let export = out.join("export.json");
    let o = warpt()
        .args(["harness", "run"])
        .arg(dir)
        .arg("--output-dir")
        .arg(out)
        .arg("--export-file")
        .arg(&export)
        .arg("--no-store")
        .args(["--burnin-seconds", "0.05"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null)
    };
    (
        o.status.code().unwrap_or(-1),
        read(out.join("summary.json")),
        read(export),
        stderr,
    )
}

fn entry<'a>(s: &'a Value, id: &str) -> &'a Value {
    common::find_in(&s["benchmarks"], "id", id)
}

/// The export's result for `id` (the summary's id, in suite `harness`).
fn result<'a>(export: &'a Value, id: &str) -> &'a Value {
    export["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["spec"]["id"]["name"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("no {id} in {export:#}"))
}

/// Whether torch in `python` sees a CUDA device.
fn cuda_available(python: &str) -> bool {
    let o = std::process::Command::new(python)
        .args(["-c", "import torch; print(torch.cuda.is_available())"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim() == "True"
}

/// A pair whose optimized side does one 96×96 matmul where the baseline
/// does four: a speedup near 4 whatever the timer, since both time the
/// same kernel.
fn matmul_pair(root: &Path) {
    let class = |repeats: usize| {
        format!(
            "import torch\nclass MM:\n    def setup(self):\n        torch.manual_seed(0)\n        \
             self.a = torch.randn(96, 96)\n        self.b = torch.randn(96, 96)\n    \
             def benchmark_fn(self):\n        for _ in range({repeats}):\n            \
             c = self.a @ self.b\n        return c\n    def teardown(self): pass\n"
        )
    };
    put(root, "ch1/baseline_mm.py", &class(4));
    put(root, "ch1/optimized_mm.py", &class(1));
}

/// The speedup and its CI of `ch1/mm/optimized_mm` under `--timing mode`,
/// and its p50 per call, ms.
fn speedup(python: &str, root: &Path, out: &Path, mode: &str) -> (f64, [f64; 2], f64) {
    let (code, s, export, stderr) = run(
        root,
        out,
        &[
            "--python",
            python,
            "--timing",
            mode,
            "--duration",
            "0.4",
            "--rounds",
            "3",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let e = entry(&s, "ch1/mm/optimized_mm");
    assert_eq!(e["timing"], mode, "{e:#}");
    let details = &result(&export, "ch1/mm/optimized_mm")["details"];
    assert_eq!(details["timing"], mode, "{details:#}");
    assert!(
        details["timer_resolution_ns"].as_i64().unwrap() >= 1,
        "{details:#}"
    );
    assert!(e["latency_ms"]["n"].as_u64().unwrap() >= 10, "{e:#}");
    // The mode kept the last call's return: the outputs were compared.
    assert!(
        e["accuracy"]["relative_error"].as_f64().unwrap() < 1e-5,
        "{e:#}"
    );
    // The result's stage times add up its three trials' (0.4 s each at least).
    let measured = result(&export, "ch1/mm/optimized_mm")["watchdog"]["measure"]["duration_s"]
        .as_f64()
        .unwrap();
    assert!(measured >= 1.2, "{measured} s measuring over 3 trials");
    let ci = e["speedup_ci95"].as_array().unwrap();
    (
        e["speedup"].as_f64().unwrap(),
        [ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap()],
        e["latency_ms"]["p50"].as_f64().unwrap(),
    )
}

#[test]
fn pytorch_timing_agrees_with_host_timing_on_a_cpu_matmul_pair() {
    let _alone = alone();
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    matmul_pair(&root);
    // The two modes' runs are minutes apart on a shared host: a pair that
    // disagrees (CIs apart, or one matmul's time off by 2x: a 16 us call
    // read 37 us once on a busy host) is measured again (twice at most)
    // before it counts as a disagreement.
    let mut seen = Vec::new();
    for attempt in 0..3 {
        let out = |m: &str| t.path().join(format!("{m}-{attempt}"));
        let (h, h_ci, h_ms) = speedup(&python, &root, &out("host"), "host");
        let (p, p_ci, p_ms) = speedup(&python, &root, &out("pytorch"), "pytorch");
        for v in [h, p] {
            assert!((2.0..8.0).contains(&v), "4 matmuls over 1: {v}");
        }
        // Both are per call: Timer's blocks are divided by their calls.
        let per_call_agrees = (0.5..2.0).contains(&(p_ms / h_ms));
        // The speedups agree when their CIs overlap, or when they are
        // within 5% of each other: three rounds can give CIs narrower than
        // what a shared host moves between runs (4.004 [3.960, 4.121]
        // against 3.952 [3.949, 3.959] failed three times once).
        let overlap = h_ci[0] <= p_ci[1] && p_ci[0] <= h_ci[1];
        let close = (p / h - 1.0).abs() < 0.05;
        if per_call_agrees && (overlap || close) {
            return;
        }
        seen.push(format!(
            "host {h:.3} {h_ci:?}, pytorch {p:.3} {p_ci:?}; one matmul {p_ms} ms (pytorch) \
             against {h_ms} ms (host)"
        ));
    }
    panic!("the two timings never agreed: {seen:#?}");
}

#[test]
fn device_timing_without_cuda_says_it_used_the_host_timer() {
    let _alone = alone();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(
        &root,
        "kernels/sum.py",
        "def run_benchmark(iterations=1):\n    return sum(range(1000))\n",
    );
    let out = t.path().join("out");
    let (code, s, export, stderr) = run(
        &root,
        &out,
        &["--timing", "device", "--duration", "0.2", "--rounds", "1"],
    );
    assert_eq!(code, 0, "{stderr}");
    let e = entry(&s, "kernels/sum");
    assert_eq!(e["status"], "passed", "{e:#}");
    assert_eq!(e["timing"], "host", "{e:#}");
    assert!(
        e["timing_note"]
            .as_str()
            .unwrap()
            .contains("does not use CUDA"),
        "{e:#}"
    );
    let d = &result(&export, "kernels/sum")["details"];
    assert_eq!(d["timing_requested"], "device (flag)", "{d:#}");
    assert!(
        d["device_hygiene"].as_str().unwrap().contains("gc.collect"),
        "{d:#}"
    );
}

#[test]
fn triton_timing_is_skipped_with_its_reason_where_it_cannot_run() {
    let _alone = alone();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(
        &root,
        "kernels/sum.py",
        "def run_benchmark(iterations=1):\n    return sum(range(1000))\n",
    );
    // Without torch (the system's python3 has none): torch is the reason.
    let (code, s, _, stderr) = run(
        &root,
        &t.path().join("plain"),
        &["--timing", "triton", "--duration", "0.2", "--rounds", "1"],
    );
    assert_eq!(code, 0, "a skip is not a failure: {stderr}");
    let e = entry(&s, "kernels/sum");
    assert_eq!(e["status"], "skipped", "{e:#}");
    assert!(e["error"].as_str().unwrap().contains("torch"), "{e:#}");
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: triton with torch (WARPT_TEST_TRANSFORMERS_PYTHON is unset)");
        return;
    };
    if cuda_available(&python) {
        eprintln!("not run here: this host has CUDA, so triton is not skipped");
        return;
    }
    let (_, s, _, stderr) = run(
        &root,
        &t.path().join("torch"),
        &[
            "--python",
            &python,
            "--timing",
            "triton",
            "--duration",
            "0.2",
            "--rounds",
            "1",
        ],
    );
    let e = entry(&s, "kernels/sum");
    assert_eq!(e["status"], "skipped", "{e:#} {stderr}");
    assert!(
        e["error"].as_str().unwrap().contains("CUDA device"),
        "{e:#}"
    );
}

#[test]
fn cuda_timing_uses_events_and_reports_peak_device_memory() {
    let _alone = alone();
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    if !cuda_available(&python) {
        eprintln!("not run here: torch.cuda.is_available() is False on this host");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(
        &root,
        "kernels/mm.py",
        "import torch\nA = None\ndef run_benchmark(iterations=1):\n    global A\n    \
         if A is None:\n        A = torch.randn(512, 512, device='cuda')\n    return (A @ A).sum().item()\n",
    );
    for mode in ["device", "pytorch"] {
        let out = t.path().join(mode);
        let (code, s, _, stderr) = run(
            &root,
            &out,
            &[
                "--python",
                &python,
                "--timing",
                mode,
                "--cold-cache",
                "--duration",
                "0.3",
                "--rounds",
                "1",
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        let e = entry(&s, "kernels/mm");
        assert_eq!(e["timing"], mode, "{e:#}");
        assert!(e["peak_device_memory_bytes"].as_u64().unwrap() >= 512 * 512 * 4);
    }
}

/// A class that sleeps 0.5 ms a call, raises once its first call is
/// `after_s` seconds old, and whose teardown raises.
fn gives_out(after_s: f64) -> String {
    format!(
        "import time\nclass B:\n    def setup(self): self.t0 = None\n    def benchmark_fn(self):\n        \
         if self.t0 is None: self.t0 = time.perf_counter()\n        time.sleep(0.0005)\n        \
         if time.perf_counter() - self.t0 > {after_s}:\n            \
         raise RuntimeError('gave out')\n        return 1\n    \
         def teardown(self): raise OSError('could not unmount')\n"
    )
}

#[test]
fn a_late_failure_keeps_the_samples_and_memory_measured_before_it() {
    let _alone = alone();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(
        &root,
        "ch1/baseline_w.py",
        "class B:\n    def setup(self): pass\n    def benchmark_fn(self): return 1\n    \
         def teardown(self): pass\n",
    );
    put(&root, "ch1/optimized_w.py", &gives_out(0.6));
    // Fails in its first call: nothing to keep, both errors still listed.
    put(&root, "ch1/optimized_w_early.py", &gives_out(-1.0));
    let out = t.path().join("out");
    let (code, s, export, stderr) = run(&root, &out, &["--duration", "1.5", "--rounds", "1"]);
    assert_eq!(code, 1, "failures exit 1: {stderr}");
    let late = entry(&s, "ch1/w/optimized_w");
    assert_eq!(late["status"], "failed", "{late:#}");
    assert!(late["latency_ms"]["n"].as_u64().unwrap() >= 10, "{late:#}");
    assert!(late["peak_rss_bytes"].as_u64().unwrap() > 0, "{late:#}");
    let stages = common::texts(&late["errors"], "stage");
    assert_eq!(stages, ["measure", "teardown"], "{late:#}");
    let first = &late["errors"][0];
    assert_eq!(first["message"], "RuntimeError: gave out");
    let tb = first["traceback"].as_str().unwrap();
    assert!(
        tb.contains("optimized_w.py") && tb.contains("benchmark_fn"),
        "{tb}"
    );
    assert!(
        !tb.contains("<string>"),
        "the adapter's frames are left out: {tb}"
    );
    let early = entry(&s, "ch1/w/optimized_w_early");
    assert!(early["latency_ms"].is_null(), "{early:#}");
    let stages = common::texts(&early["errors"], "stage");
    assert_eq!(stages, ["measure", "teardown"], "{early:#}");
    // The export carries the same list, `{stage, message, traceback}`.
    let r = result(&export, "ch1/w/optimized_w");
    assert_eq!(r["errors"][1]["stage"], "teardown");
    assert_eq!(r["errors"][1]["message"], "OSError: could not unmount");
    assert_eq!(r["stop_reason"], "error", "{r:#}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let errors = md.split("## Errors").nth(1).expect("an Errors section");
    assert!(errors.contains("### ch1/w/optimized_w "), "{md}");
    assert!(errors.contains("samples kept"), "{md}");
    assert!(
        errors.contains("**teardown**: OSError: could not unmount"),
        "{md}"
    );
}

#[test]
fn timing_comes_from_the_flag_then_get_config_then_bench_yaml() {
    let _alone = alone();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    let plain = "def run_benchmark(iterations=1):\n    return sum(range(100))\n";
    put(&root, "kernels/plain.py", plain);
    let own = "class B:\n    def get_config(self): return {'timing': 'device'}\n    \
               def setup(self): pass\n    def benchmark_fn(self): return 1\n    \
               def teardown(self): pass\n";
    put(&root, "own/baseline_own.py", own);
    put(&root, "own/optimized_own.py", own);
    put(
        &root,
        "own/bench.yaml",
        "timing: pytorch\ncold_cache: true\n",
    );
    let class = "class B:\n    def setup(self): pass\n    def benchmark_fn(self): return 1\n    \
                 def teardown(self): pass\n";
    put(&root, "yaml/baseline_y.py", class);
    put(&root, "yaml/optimized_y.py", class);
    put(&root, "yaml/bench.yaml", "timing: device\n");
    let quick = ["--duration", "0.2", "--rounds", "1"];
    let (code, _, export, stderr) = run(&root, &t.path().join("a"), &quick);
    assert_eq!(code, 0, "{stderr}");
    let d = |e: &Value, id: &str, k: &str| result(e, id)["details"][k].clone();
    assert!(d(&export, "kernels/plain", "timing_requested").is_null());
    assert_eq!(d(&export, "kernels/plain", "timing"), "host");
    assert_eq!(
        d(&export, "own/own/optimized_own", "timing_requested"),
        "device (get_config())"
    );
    // bench.yaml's cold_cache still holds where get_config() is silent.
    let cold = d(&export, "own/own/optimized_own", "cold_cache");
    assert!(
        cold.as_str().unwrap().contains("last-level cache"),
        "{cold}"
    );
    assert_eq!(d(&export, "own/own/optimized_own", "calls_per_sample"), 1);
    assert_eq!(
        d(&export, "yaml/y/optimized_y", "timing_requested"),
        "device (bench.yaml)"
    );
    let mut flagged = quick.to_vec();
    flagged.extend(["--timing", "host"]);
    let (code, _, export, stderr) = run(&root, &t.path().join("b"), &flagged);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        d(&export, "own/own/optimized_own", "timing_requested"),
        "host (flag)"
    );
    assert_eq!(d(&export, "own/own/optimized_own", "timing"), "host");
    // A mode that does not exist is the file's error, named.
    put(&root, "yaml/bench.yaml", "timing: gpu\n");
    let (code, _, _, stderr) = run(&root, &t.path().join("c"), &quick);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bench.yaml:1"), "{stderr}");
}

/// A benchmark whose `get_config()` fixes its rounds (pytest-benchmark's
/// `pedantic`) gets exactly those samples, of its iterations each, after
/// its warm-up rounds (warpt's discarded one among them), all sent to the
/// adapter at once: every call is counted, none beyond.
#[test]
fn pedantic_rounds_from_get_config_are_exactly_the_rounds_asked() {
    let _alone = alone();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    let counted = "import os\nclass B:\n    def get_config(self):\n        \
                   return {'pedantic': {'rounds': 6, 'iterations': 3, 'warmup_rounds': 2}}\n    \
                   def setup(self): self.calls = 0\n    def benchmark_fn(self):\n        \
                   self.calls += 1\n        return 1\n    def teardown(self):\n        \
                   with open(os.path.join(os.path.dirname(__file__), 'calls.txt'), 'a') as f:\n\
                   \x20           f.write(f'{self.calls}\\n')\n";
    put(&root, "ped/baseline_ped.py", counted);
    put(&root, "ped/optimized_ped.py", counted);
    let quick = ["--duration", "0.2", "--rounds", "1"];
    let (code, _, export, stderr) = run(&root, &t.path().join("a"), &quick);
    assert_eq!(code, 0, "{stderr}");
    for id in ["ped/ped/baseline_ped", "ped/ped/optimized_ped"] {
        let r = result(&export, id);
        assert_eq!(r["details"]["calls_per_sample"], 3, "{r:#}");
        let latency = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "latency_ms")
            .unwrap();
        assert_eq!(latency["stats"]["n"], 6, "{latency:#}");
    }
    // Two warm-up rounds and six measured ones, of three calls each.
    let calls = std::fs::read_to_string(root.join("ped/calls.txt")).unwrap();
    assert_eq!(calls.lines().collect::<Vec<_>>(), ["24", "24"], "{calls}");
}
