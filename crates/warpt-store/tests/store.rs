//! The store on real SQLite files: runs read back exactly, machines are
//! kept once, migrations apply from empty and from version 1, queries
//! cannot write.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::BenchmarkSuiteRun;
use warpt_store::{Recorded, RunFilter, Source, Store, StoreError, query};

fn example() -> BenchmarkSuiteRun {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_run_reads_back_exactly_and_machines_are_kept_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/results.db");
    let mut store = Store::open(&path).unwrap();
    let run = example();
    assert!(
        run.benchmarks.iter().any(|b| b
            .metrics
            .iter()
            .any(|m| m.stats.as_ref().is_some_and(|s| !s.samples.is_empty()))),
        "the fixture has raw samples to round-trip"
    );
    assert_eq!(
        store.record_run(&run, &Source::Run).unwrap(),
        Recorded::Added
    );
    assert_eq!(
        store.record_run(&run, &Source::Run).unwrap(),
        Recorded::AlreadyStored
    );
    assert_eq!(store.load_run(&run.id).unwrap(), run);

    // The same machine with less free memory: one machine row, and the
    // second run still reads back with its own snapshot.
    let mut second = example();
    second.id = "second-run".into();
    if let Some(s) = second.system.as_mut() {
        s.memory.available_bytes /= 2;
    }
    store
        .record_run(&second, &Source::Import("x.json".into()))
        .unwrap();
    assert_eq!(store.load_run("second").unwrap(), second, "prefix lookup");
    drop(store);
    let machines = query(&path, "SELECT count(*) AS n FROM machines").unwrap();
    assert_eq!(machines.rows, vec![vec![serde_json::json!(1)]]);
    let samples = query(&path, "SELECT count(*) FROM samples").unwrap();
    let expected: usize = run
        .benchmarks
        .iter()
        .flat_map(|b| &b.metrics)
        .filter_map(|m| m.stats.as_ref())
        .map(|s| s.samples.len())
        .sum();
    assert_eq!(samples.rows[0][0], serde_json::json!(2 * expected));

    let store = Store::open(&path).unwrap();
    let all = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(all.len(), 2);
    let filtered = store
        .list_runs(&RunFilter {
            suite: Some("nope".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(filtered.is_empty());
    assert!(matches!(
        store.load_run("zzz"),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn queries_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    store.record_run(&example(), &Source::Run).unwrap();
    drop(store);
    for sql in [
        "DELETE FROM suite_runs",
        "UPDATE metrics SET value = 0",
        "INSERT INTO machines (fingerprint) VALUES ('x')",
        "DROP TABLE samples",
        "ATTACH DATABASE 'other.db' AS other",
        "PRAGMA writable_schema = ON",
        "PRAGMA journal_mode = DELETE",
        "CREATE TABLE t (x)",
    ] {
        match query(&path, sql) {
            Err(StoreError::ReadOnly(_)) => {}
            other => panic!("{sql}: {other:?}"),
        }
    }
    assert!(!dir.path().join("other.db").exists());
    let out = query(
        &path,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) \
         SELECT (SELECT count(*) FROM suite_runs) AS runs, sum(x) AS s FROM c",
    )
    .unwrap();
    assert_eq!(out.columns, ["runs", "s"]);
    assert_eq!(
        out.rows,
        vec![vec![serde_json::json!(1), serde_json::json!(6)]]
    );
    let info = query(&path, "PRAGMA table_info(metrics)").unwrap();
    assert!(info.rows.len() > 10);
    let runs = query(&path, "SELECT count(*) FROM suite_runs").unwrap();
    assert_eq!(runs.rows[0][0], serde_json::json!(1), "nothing was deleted");
}
