//! The result history through the CLI, each test on a real SQLite file and
//! on a real PostgreSQL database (where scripts/test started one): runs are
//! recorded and read back exactly, imports, read-only queries, 32 writer
//! processes at once, and a writer killed with SIGKILL mid-transaction.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{json_of, stderr_of, stdout_of, suite_run_of};

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use warpt_model::{BenchmarkSuiteRun, RunStatus};
use warpt_store::Location;
use warpt_store::testing::{TestStore, admin_client, on_both};

/// `warpt` recording into `store` (a path or a `postgres://` URL).
fn warpt(store: impl Into<OsString>) -> Command {
    let mut cmd = Command::cargo_bin("warpt").unwrap();
    cmd.env("WARPT_NO_PROGRESS", "1")
        .env("WARPT_STORE", store.into())
        .env_remove("XDG_DATA_HOME");
    cmd
}

fn tiny_run(store: &OsString) -> BenchmarkSuiteRun {
    let out = stdout_of(
        warpt(store)
            .args(["benchmark", "run", "--benchmark", "mem_latency", "--json"])
            .args(["--duration", "0.1", "--burnin-seconds", "0"])
            .args(["--param", "max_mb=1"]),
    );
    serde_json::from_slice(&out).unwrap()
}

fn query(store: &OsString, sql: &str) -> serde_json::Value {
    let out = stdout_of(warpt(store).args(["results", "query", sql, "--json"]));
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn a_run_is_recorded_and_shown_back_exactly() {
    on_both(recorded_and_shown_back);
}

fn recorded_and_shown_back(t: &TestStore) {
    let store = t.arg();
    let run = tiny_run(&store);
    assert_eq!(run.benchmarks[0].status, RunStatus::Passed);
    let back = suite_run_of(warpt(&store).args(["results", "show", "latest", "--json"]));
    assert_eq!(back, run, "the stored run is the printed run");

    let listed = stdout_of(warpt(&store).args(["results", "list", "--json", "--suite", "micro"]));
    let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap();
    assert_eq!(listed[0]["id"], run.id.as_str());
    assert_eq!(listed[0]["source"], "run");

    // --no-store leaves the store alone.
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("untouched.db");
    Command::cargo_bin("warpt")
        .unwrap()
        .env("WARPT_NO_PROGRESS", "1")
        .args(["benchmark", "run", "--no-store"])
        .args(common::QUICK_MEM_LATENCY)
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
    on_both(imported_once);
}

fn imported_once(t: &TestStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = t.arg();
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
    let err = stderr_of(warpt(&store).args(["results", "import"]).arg(&garbage), 2);
    // Neither warpt's export nor another tool's: the formats are listed.
    assert!(err.contains("not a format warpt imports"), "{err}");
    assert!(
        err.contains("warpt's own JSON export") && err.contains("hyperfine"),
        "{err}"
    );
}

#[test]
fn query_refuses_writes_and_prints_csv() {
    on_both(query_is_read_only);
}

fn query_is_read_only(t: &TestStore) {
    let store = t.arg();
    tiny_run(&store);
    let own: &[&str] = match t.location {
        Location::Sqlite(_) => &["ATTACH DATABASE 'x.db' AS x", "PRAGMA writable_schema = ON"],
        Location::Postgres(_) => &["CREATE TABLE x (y int)", "TRUNCATE samples"],
    };
    for sql in ["DELETE FROM suite_runs", "UPDATE metrics SET value = 0"]
        .iter()
        .chain(own)
    {
        let err = stderr_of(warpt(&store).args(["results", "query", sql]), 2);
        assert!(err.contains("read-only"), "{sql}: {}", err);
    }
    let csv = stdout_of(warpt(&store).args([
        "results",
        "query",
        "SELECT name, unit FROM metrics",
        "--csv",
    ]));
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
    on_both(killed_writer);
}

/// Whether a writer to `t` is in the middle of its transaction: on SQLite
/// the WAL has grown past 8 MiB; on PostgreSQL a warpt connection holds a
/// transaction id (it has written).
fn writing(t: &TestStore) -> bool {
    match &t.location {
        Location::Sqlite(p) => {
            let mut wal = p.as_os_str().to_owned();
            wal.push("-wal");
            Path::new(&wal).metadata().map_or(0, |m| m.len()) >= 8 << 20
        }
        Location::Postgres(url) => {
            let n: i64 = admin_client(url)
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'warpt' \
                     AND backend_xid IS NOT NULL AND datname = current_database()",
                    &[],
                )
                .unwrap()
                .get(0);
            n > 0
        }
    }
}

fn killed_writer(t: &TestStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = t.arg();
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
    let start = Instant::now();
    // Wait until the transaction has written a good part of the run.
    while !writing(t) {
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
    let back = suite_run_of(warpt(&store).args(["results", "show", &first.id, "--json"]));
    assert_eq!(back, first);
    for orphans in [
        "SELECT count(*) AS n FROM samples WHERE metric_id NOT IN (SELECT id FROM metrics)",
        "SELECT count(*) AS n FROM metrics WHERE result_id NOT IN (SELECT id FROM results)",
        "SELECT count(*) AS n FROM results WHERE run_id NOT IN (SELECT id FROM suite_runs)",
    ] {
        assert_eq!(query(&store, orphans)[0]["n"], 0, "{orphans}");
    }
    // The store still takes new runs, the killed one's id included (a
    // small run under it: nothing of the big one is left to refuse it).
    tiny_run(&store);
    let mut again = first.clone();
    again.id = big.id.clone();
    let small = dir.path().join("again.json");
    std::fs::write(&small, serde_json::to_vec(&again).unwrap()).unwrap();
    warpt(&store)
        .args(["results", "import"])
        .arg(&small)
        .assert()
        .success();
    assert_eq!(
        query(&store, "SELECT count(*) AS n FROM suite_runs")[0]["n"],
        3
    );
}

#[test]
fn thirty_two_writer_processes_at_once_lose_no_run() {
    on_both(many_writers);
}

/// 32 `warpt results import` processes started together, each recording
/// three runs (of one machine: they race for its row too); every run must
/// arrive whole.
fn many_writers(t: &TestStore) {
    const WRITERS: usize = 32;
    const RUNS_EACH: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let store = t.arg();
    let fixture: BenchmarkSuiteRun = serde_json::from_str(include_str!(
        "../../warpt-model/tests/data/example_export.json"
    ))
    .unwrap();
    let mut files = Vec::new();
    for w in 0..WRITERS {
        let mut mine = Vec::new();
        for k in 0..RUNS_EACH {
            let mut run = fixture.clone();
            run.id = format!("writer-{w:02}-run-{k}");
            for r in &mut run.benchmarks {
                for m in &mut r.metrics {
                    m.value += (w * RUNS_EACH + k) as f64;
                }
            }
            let file = dir.path().join(format!("{}.json", run.id));
            std::fs::write(&file, serde_json::to_vec(&run).unwrap()).unwrap();
            mine.push((file, run));
        }
        files.push(mine);
    }
    let bin = assert_cmd::cargo::cargo_bin("warpt");
    let children: Vec<_> = files
        .iter()
        .map(|mine| {
            std::process::Command::new(&bin)
                .args(["results", "import"])
                .args(mine.iter().map(|(f, _)| f))
                .env("WARPT_STORE", &store)
                .env("WARPT_NO_PROGRESS", "1")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        query(&store, "SELECT count(*) AS n FROM suite_runs")[0]["n"],
        WRITERS * RUNS_EACH
    );
    assert_eq!(
        query(&store, "SELECT count(*) AS n FROM machines")[0]["n"],
        1
    );
    let per_run = fixture.sample_count();
    assert_eq!(
        query(&store, "SELECT count(*) AS n FROM samples")[0]["n"],
        WRITERS * RUNS_EACH * per_run
    );
    // Spot checks: runs read back exactly.
    for (w, k) in [(0, 0), (17, 1), (31, 2)] {
        let (_, want) = &files[w][k];
        let back = suite_run_of(warpt(&store).args(["results", "show", &want.id, "--json"]));
        assert_eq!(&back, want);
    }
}

#[test]
fn migrate_copies_a_local_history_into_another_store() {
    let dir = tempfile::tempdir().unwrap();
    let local = TestStore::sqlite();
    let run = tiny_run(&local.arg());
    on_both(|target| {
        let report = json_of(
            warpt(dir.path().join("unused.db"))
                .args(["results", "migrate", "--json", "--from"])
                .arg(local.arg())
                .arg("--to")
                .arg(target.arg()),
        );
        assert_eq!(report["runs"], 1, "{report}");
        let back = suite_run_of(warpt(target.arg()).args(["results", "show", &run.id, "--json"]));
        assert_eq!(back, run);
    });
    // Bad input: the same store twice, a source that is not there.
    warpt(dir.path().join("unused.db"))
        .args(["results", "migrate", "--from"])
        .arg(local.arg())
        .arg("--to")
        .arg(local.arg())
        .assert()
        .code(2);
    let err = stderr_of(
        warpt(dir.path().join("unused.db"))
            .args(["results", "migrate", "--from"])
            .arg(dir.path().join("missing.db"))
            .arg("--to")
            .arg(dir.path().join("t.db")),
        2,
    );
    assert!(err.contains("no such store"));
    assert!(!dir.path().join("t.db").exists());
}
