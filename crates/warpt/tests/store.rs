//! The result history through the CLI, on real SQLite files: runs are
//! recorded and read back exactly, imports, read-only queries, and a writer
//! killed with SIGKILL mid-transaction.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use warpt_model::{BenchmarkSuiteRun, RunStatus};

fn warpt(store: &Path) -> Command {
    let mut cmd = Command::cargo_bin("warpt").unwrap();
    cmd.env("WARPT_NO_PROGRESS", "1")
        .env("WARPT_STORE", store)
        .env_remove("XDG_DATA_HOME");
    cmd
}

fn tiny_run(store: &Path) -> BenchmarkSuiteRun {
    let out = warpt(store)
        .args(["benchmark", "run", "--benchmark", "mem_latency", "--json"])
        .args(["--duration", "0.1", "--burnin-seconds", "0"])
        .args(["--param", "max_mb=1"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

fn query(store: &Path, sql: &str) -> serde_json::Value {
    let out = warpt(store)
        .args(["results", "query", sql, "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn a_run_is_recorded_and_shown_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h/results.db");
    let run = tiny_run(&store);
    assert_eq!(run.benchmarks[0].status, RunStatus::Passed);
    let shown = warpt(&store)
        .args(["results", "show", "latest", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let back: BenchmarkSuiteRun = serde_json::from_slice(&shown).unwrap();
    assert_eq!(back, run, "the stored run is the printed run");

    let listed = warpt(&store)
        .args(["results", "list", "--json", "--suite", "micro"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap();
    assert_eq!(listed[0]["id"], run.id.as_str());
    assert_eq!(listed[0]["source"], "run");

    // --no-store leaves the store alone.
    let other = dir.path().join("untouched.db");
    Command::cargo_bin("warpt")
        .unwrap()
        .env("WARPT_NO_PROGRESS", "1")
        .args([
            "benchmark",
            "run",
            "--benchmark",
            "mem_latency",
            "--no-store",
        ])
        .args([
            "--duration",
            "0.1",
            "--burnin-seconds",
            "0",
            "--param",
            "max_mb=1",
        ])
        .env("WARPT_STORE", &other)
        .assert()
        .success();
    assert!(!other.exists());

    let samples = query(&store, "SELECT count(*) AS n FROM samples");
    let expected: usize = run.benchmarks[0]
        .metrics
        .iter()
        .filter_map(|m| m.stats.as_ref())
        .map(|s| s.samples.len())
        .sum();
    assert_eq!(samples[0]["n"], expected);
}

#[test]
fn imports_are_recorded_once_and_bad_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../warpt-model/tests/data/example_export.json");
    for _ in 0..2 {
        warpt(&store)
            .args(["results", "import"])
            .arg(&fixture)
            .assert()
            .success();
    }
    let runs = query(&store, "SELECT source, imported_from FROM suite_runs");
    assert_eq!(runs.as_array().unwrap().len(), 1, "imported once");
    assert_eq!(runs[0]["source"], "import");
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"not\": \"an export\"}").unwrap();
    let err = warpt(&store)
        .args(["results", "import"])
        .arg(&garbage)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    // Neither warpt's export nor another tool's: the formats are listed.
    let err = String::from_utf8_lossy(&err);
    assert!(err.contains("not a format warpt imports"), "{err}");
    assert!(
        err.contains("warpt's own JSON export") && err.contains("hyperfine"),
        "{err}"
    );
}

#[test]
fn query_refuses_writes_and_prints_csv() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    tiny_run(&store);
    for sql in [
        "DELETE FROM suite_runs",
        "UPDATE metrics SET value = 0",
        "ATTACH DATABASE 'x.db' AS x",
        "PRAGMA writable_schema = ON",
    ] {
        let err = warpt(&store)
            .args(["results", "query", sql])
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        assert!(
            String::from_utf8_lossy(&err).contains("read-only"),
            "{sql}: {}",
            String::from_utf8_lossy(&err)
        );
    }
    let csv = warpt(&store)
        .args([
            "results",
            "query",
            "SELECT name, unit FROM metrics",
            "--csv",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let csv = String::from_utf8(csv).unwrap();
    let metrics = query(&store, "SELECT count(*) AS n FROM metrics");
    assert_eq!(csv.lines().next(), Some("name,unit"));
    assert_eq!(
        csv.lines().count() as u64,
        metrics[0]["n"].as_u64().unwrap() + 1
    );
    assert_eq!(
        query(&store, "SELECT count(*) AS n FROM suite_runs")[0]["n"],
        1
    );
}

#[test]
fn a_writer_killed_mid_transaction_leaves_the_earlier_runs_intact() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let first = tiny_run(&store);

    // An export big enough that writing it takes a while: three million samples.
    let mut big = first.clone();
    big.id = "big-run".into();
    let stats = big.benchmarks[0].metrics[0].stats.as_mut().unwrap();
    stats.samples = (0..3_000_000).map(|i| i as f64).collect();
    let file = dir.path().join("big.json");
    std::fs::write(&file, serde_json::to_vec(&big).unwrap()).unwrap();

    let bin = assert_cmd::cargo::cargo_bin("warpt");
    let mut child = std::process::Command::new(bin)
        .args(["results", "import"])
        .arg(&file)
        .env("WARPT_STORE", &store)
        .spawn()
        .unwrap();
    let wal = dir.path().join("results.db-wal");
    let start = Instant::now();
    // Wait until the transaction has written a good part of the run.
    while wal.metadata().map_or(0, |m| m.len()) < 8 << 20 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import finished before it could be interrupted"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the import never wrote"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Child::kill is SIGKILL on Unix.
    child.kill().unwrap();
    child.wait().unwrap();

    let runs = query(&store, "SELECT id FROM suite_runs");
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["id"], first.id.as_str());
    let shown = warpt(&store)
        .args(["results", "show", &first.id, "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let back: BenchmarkSuiteRun = serde_json::from_slice(&shown).unwrap();
    assert_eq!(back, first);
    let orphans = query(
        &store,
        "SELECT count(*) AS n FROM samples WHERE metric_id NOT IN (SELECT id FROM metrics)",
    );
    assert_eq!(orphans[0]["n"], 0);
    // The store still takes new runs.
    tiny_run(&store);
    assert_eq!(
        query(&store, "SELECT count(*) AS n FROM suite_runs")[0]["n"],
        2
    );
}
