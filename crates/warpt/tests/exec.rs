//! `warpt exec` with real processes: failures and --ignore-failure, a
//! hanging command stopped at --timeout, the shell's spawn time measured
//! and subtracted, parameter scans, the interleaving order, and hyperfine's
//! JSON shape checked against hyperfine's own export, and `--measure
//! instructions` (cachegrind here: the CPU's counters are hidden in most VMs).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::metric_of as metric;

fn exec(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .current_dir(dir)
        .env("WARPT_NO_PROGRESS", "1")
        .args(["exec", "--json", "--store"])
        .arg(dir.join("store.db"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let run = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), run, stderr)
}

#[test]
fn failures_stop_a_command_unless_ignored_and_a_hung_one_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, stderr) = exec(dir.path(), &["--runs", "3", "exit 3", "true"]);
    assert_eq!(code, 1, "{stderr}");
    let failed = &run["benchmarks"][0];
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["error_message"]
            .as_str()
            .unwrap()
            .contains("exit status 3"),
        "{failed}"
    );
    // The other command is measured all the same.
    assert_eq!(run["benchmarks"][1]["status"], "passed");
    assert_eq!(
        metric(&run["benchmarks"][1], "wall_time_s")["stats"]["n"],
        3
    );

    let hf = dir.path().join("hf.json");
    let (code, run, stderr) = exec(
        dir.path(),
        &[
            "--runs",
            "4",
            "--ignore-failure",
            "--export-json",
            hf.to_str().unwrap(),
            "exit 3",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let r = &run["benchmarks"][0];
    assert_eq!(r["status"], "passed");
    assert_eq!(r["details"]["failed_runs"], 4);
    let h: Value = serde_json::from_str(&std::fs::read_to_string(&hf).unwrap()).unwrap();
    assert_eq!(
        h["results"][0]["exit_codes"],
        serde_json::json!([3, 3, 3, 3])
    );

    let (code, run, stderr) = exec(dir.path(), &["--timeout", "0.5", "--runs", "2", "sleep 30"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(run["benchmarks"][0]["status"], "timeout", "{run}");
}

#[test]
fn the_shells_spawn_time_is_measured_and_subtracted() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, stderr) = exec(dir.path(), &["--runs", "20", "true"]);
    assert_eq!(code, 0, "{stderr}");
    let r = &run["benchmarks"][0];
    let spawn = r["details"]["shell_spawn_wall_s"].as_f64().unwrap();
    assert!(spawn > 0.0, "{r}");
    assert!(stderr.contains("shell spawn time"), "{stderr}");
    // `sh -c true` costs what `sh -c ''` costs: after the subtraction the
    // median is a small fraction of the shell's own time.
    let wall = metric(r, "wall_time_s")["value"].as_f64().unwrap();
    assert!(wall < spawn * 0.5, "corrected {wall} s vs spawn {spawn} s");
    // Without a shell nothing is measured or subtracted.
    let (code, run, _) = exec(dir.path(), &["--runs", "5", "-N", "true"]);
    assert_eq!(code, 0);
    assert!(run["benchmarks"][0]["details"]["shell_spawn_wall_s"].is_null());
    assert!(
        metric(&run["benchmarks"][0], "wall_time_s")["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn parameter_scans_and_lists_make_one_benchmark_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, stderr) = exec(
        dir.path(),
        &[
            "--runs",
            "3",
            "-P",
            "n",
            "1",
            "3",
            "-n",
            "spin {n}",
            "i=0; while [ $i -lt {n}000 ]; do i=$((i+1)); done",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let names: Vec<&str> = run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["spec"]["id"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["spin 1", "spin 2", "spin 3"]);
    for (i, b) in run["benchmarks"].as_array().unwrap().iter().enumerate() {
        assert_eq!(b["params"]["n"], (i + 1).to_string());
        assert_eq!(metric(b, "wall_time_s")["tags"]["n"], (i + 1).to_string());
    }
    let (code, run, _) = exec(
        dir.path(),
        &[
            "--runs",
            "2",
            "-L",
            "x",
            "a,b",
            "test {x} = a || test {x} = b",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(run["benchmarks"].as_array().unwrap().len(), 2);
    // Bad input: exit 2 with the flag named.
    let out = Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .args(["exec", "--no-store", "-P", "n", "5", "1", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--parameter-scan n"));
}

#[test]
fn commands_run_interleaved_round_by_round_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let cmd = |c: &str| format!("echo {c} >> {}", log.display());
    let (a, b) = (cmd("A"), cmd("B"));
    let (code, _, stderr) = exec(dir.path(), &["--runs", "6", &a, &b]);
    assert_eq!(code, 0, "{stderr}");
    let order = std::fs::read_to_string(&log)
        .unwrap()
        .split_whitespace()
        .collect::<String>();
    assert_eq!(order.len(), 12);
    // Each round runs both, in a random order: both orders occur.
    let rounds: Vec<&str> = (0..6).map(|i| &order[2 * i..2 * i + 2]).collect();
    assert!(rounds.iter().all(|r| *r == "AB" || *r == "BA"), "{order}");
    assert!(rounds.contains(&"AB") && rounds.contains(&"BA"), "{order}");
    std::fs::remove_file(&log).unwrap();
    let (code, _, _) = exec(dir.path(), &["--runs", "3", "--no-interleave", &a, &b]);
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read_to_string(&log)
            .unwrap()
            .split_whitespace()
            .collect::<String>(),
        "AAABBB"
    );
}

#[test]
fn the_json_export_has_hyperfines_fields_and_the_run_is_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("hyperfine.json");
    let ours = dir.path().join("warpt.json");
    let status = Command::new("hyperfine")
        .args(["--runs", "3", "-N", "--export-json"])
        .arg(&theirs)
        .args(["-P", "n", "1", "2", "sleep 0.00{n}"])
        .output()
        .expect("hyperfine is needed for this test; scripts/test installs Debian's");
    assert!(status.status.success());
    let (code, run, stderr) = exec(
        dir.path(),
        &[
            "--runs",
            "3",
            "-N",
            "--export-json",
            ours.to_str().unwrap(),
            "-P",
            "n",
            "1",
            "2",
            "sleep 0.00{n}",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let read =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (theirs, ours) = (read(&theirs), read(&ours));
    let (t, o) = (&theirs["results"][0], &ours["results"][0]);
    for (key, value) in t.as_object().unwrap() {
        let mine = &o[key];
        assert!(!mine.is_null(), "hyperfine's '{key}' is missing: {o}");
        let kind = |v: &Value| std::mem::discriminant(v);
        assert_eq!(
            kind(value),
            kind(mine),
            "'{key}': hyperfine {value}, warpt {mine}"
        );
    }
    assert_eq!(o["command"], "sleep 0.001");
    assert_eq!(o["parameters"]["n"], "1");
    assert_eq!(o["times"].as_array().unwrap().len(), 3);
    // The run is in the store under the exec suite.
    let out = Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .args(["results", "list", "--json", "--store"])
        .arg(dir.path().join("store.db"))
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = list.as_array().or(list["runs"].as_array()).unwrap();
    assert!(
        runs.iter()
            .any(|r| r["id"] == run["id"] && r["suite"] == "exec"),
        "{list}"
    );
}

/// A shell loop of `n` iterations: work that grows with `n`.
fn shell_loop(n: u32) -> String {
    format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done")
}

#[test]
fn instructions_are_counted_the_same_every_time_and_follow_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("hyperfine.json");
    let (short, long) = (shell_loop(300), shell_loop(600));
    let (code, run, stderr) = exec(
        dir.path(),
        &[
            "--measure",
            "instructions",
            "--runs",
            "2",
            "--export-json",
            export.to_str().unwrap(),
            &short,
            &long,
        ],
    );
    let results = run["benchmarks"].as_array().unwrap();
    if results[0]["status"] == "skipped" {
        // Neither the CPU's counters nor valgrind here: it says so.
        let why = results[0]["error_message"].as_str().unwrap();
        assert!(
            why.contains("--measure instructions") && why.contains("valgrind"),
            "{why}"
        );
        assert_eq!(code, 0, "{stderr}");
        return;
    }
    assert_eq!(code, 0, "{stderr}");
    let count = |r: &Value| {
        let m = metric(r, "instructions");
        assert_eq!(m["unit"], "instructions");
        let samples = m["stats"]["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 3, "{m}");
        m["value"].as_f64().unwrap()
    };
    let (a, b) = (count(&results[0]), count(&results[1]));
    // Twice the loop, more instructions: the shell's start is subtracted,
    // so nearly twice as many.
    assert!(b > 1.5 * a && b < 2.5 * a, "{a} then {b}");
    let source = results[0]["details"]["count_source"].as_str().unwrap();
    assert!(["perf_event", "cachegrind"].contains(&source), "{source}");
    if source == "cachegrind" {
        // Exact: every counted run the same.
        let m = metric(&results[0], "instructions");
        assert_eq!(m["stats"]["std"].as_f64().unwrap(), 0.0, "{m}");
        assert!(
            metric(&results[0], "estimated_cycles")["value"]
                .as_f64()
                .unwrap()
                > a
        );
    }
    assert!(stderr.contains("Instructions:"), "{stderr}");
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let counted = exported["results"][1]["instructions"].as_array().unwrap();
    assert_eq!(counted.len(), 3, "{exported}");
    assert_eq!(exported["results"][1]["count_source"], source);
}

#[test]
fn compare_calls_identical_counts_unchanged_and_half_a_percent_more_work_regressed() {
    let dir = tempfile::tempdir().unwrap();
    let run = |n: u32, file: &str| {
        let path = dir.path().join(file);
        let (code, run, stderr) = exec(
            dir.path(),
            &[
                "--measure",
                "instructions",
                "--runs",
                "2",
                "--command-name",
                "loop",
                "--export-file",
                path.to_str().unwrap(),
                &shell_loop(n),
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        (run, path)
    };
    let (first, a) = run(2000, "a.json");
    if first["benchmarks"][0]["status"] == "skipped" {
        return; // no source of counts here: the test above checks the reason
    }
    let (_, again) = run(2000, "again.json");
    let (_, more) = run(2010, "more.json");
    let compare = |b: &Path, c: &Path| {
        let out = Command::new(assert_cmd::cargo::cargo_bin("warpt"))
            .args(["benchmark", "compare", "--format", "json", "--no-store"])
            .args([b, c])
            .output()
            .unwrap();
        let c: Value = serde_json::from_slice(&out.stdout).unwrap();
        let m = c["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == "instructions")
            .unwrap()
            .clone();
        (out.status.code().unwrap(), m)
    };
    let (_, same) = compare(&a, &again);
    assert_eq!(same["verdict"], "~", "{same}");
    assert_eq!(same["method"], "counts");
    assert_eq!(same["noise_source"], "counts");
    let (code, slower) = compare(&a, &more);
    assert_eq!(slower["verdict"], "regressed", "{slower}");
    let change = slower["change_pct"].as_f64().unwrap();
    assert!(change > 0.3 && change < 0.7, "{slower}");
    assert_eq!(code, 1, "a regression exits 1");
}

#[test]
fn a_duet_runs_two_commands_at_once_and_judges_their_pairs() {
    let dir = tempfile::tempdir().unwrap();
    // Three commands (or a --timeout) are not a duet: a usage error.
    let three = Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .args(["exec", "--no-store", "--duet", "true", "true", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&three.stderr);
    assert_eq!(three.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("two commands"), "{stderr}");
    let (code, run, stderr) = exec(
        dir.path(),
        &[
            "--duet",
            "--runs",
            "8",
            &shell_loop(2000),
            &shell_loop(20000),
        ],
    );
    if stderr.contains("give it at least 2") {
        assert_eq!(code, 2, "one CPU: --duet says why it cannot run");
        return;
    }
    assert_eq!(code, 0, "{stderr}");
    let second = &run["benchmarks"][1]["details"];
    // Eight pairs, the CPUs swapped every pair: four couples.
    assert_eq!(second["duet_pairs"], 4, "{second}");
    // Ten times the loop: the ratio's direction and rough size, not its value, so a noisy
    // host (CI's ran this at 1.27 for a twofold loop) cannot flip it.
    let ratio = second["duet_wall_ratio"].as_f64().unwrap();
    assert!(ratio > 3.0, "ten times the loop: {ratio}");
    assert_ne!(second["duet_verdict"], "~", "{second}");
    assert!(stderr.contains("run at the same time"), "{stderr}");
}

#[test]
fn an_exec_run_records_its_labels_and_description() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, stderr) = exec(
        dir.path(),
        &[
            "--runs",
            "2",
            "--label",
            "compiler=gcc-13",
            "--description",
            "the -O3 build",
            "true",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(run["manifest"]["labels"]["compiler"], "gcc-13");
    assert_eq!(run["manifest"]["description"], "the -O3 build");
    let listed = Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .args([
            "results",
            "list",
            "--json",
            "--label",
            "compiler=gcc-13",
            "--store",
        ])
        .arg(dir.path().join("store.db"))
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed:#}");
    assert_eq!(listed[0]["description"], "the -O3 build");
}
