//! The store on both backends, each test on a real SQLite file and on a
//! real PostgreSQL database (where scripts/test started one): runs read
//! back exactly, machines are kept once, queries cannot write, trials and
//! noise profiles.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::BenchmarkSuiteRun;
use warpt_store::testing::{TestStore, on_both};
use warpt_store::{Recorded, RunFilter, Source, Store, StoreError, query};

fn example() -> BenchmarkSuiteRun {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_run_reads_back_exactly_and_machines_are_kept_once() {
    on_both(run_reads_back);
    // A SQLite store's directory is made on first use.
    let dir = tempfile::tempdir().unwrap();
    Store::open(dir.path().join("sub/dir/results.db")).unwrap();
    assert!(dir.path().join("sub/dir/results.db").exists());
}

fn run_reads_back(t: &TestStore) {
    let path = &t.location;
    let mut store = Store::open(path).unwrap();
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
    let machines = query(path, "SELECT count(*) AS n FROM machines").unwrap();
    assert_eq!(machines.rows, vec![vec![serde_json::json!(1)]]);
    let samples = query(path, "SELECT count(*) FROM samples").unwrap();
    let expected = run.sample_count();
    assert_eq!(samples.rows[0][0], serde_json::json!(2 * expected));

    let store = Store::open(path).unwrap();
    let all = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        all[0].hostname,
        run.system.as_ref().map(|s| s.os.hostname.clone())
    );
    let page = store
        .list_runs(&RunFilter {
            limit: Some(1),
            offset: Some(1),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, all[1].id);
    let machine = &all[0].machine.clone().unwrap()[..8];
    let on_machine = store
        .list_runs(&RunFilter {
            machine: Some(machine.into()),
            suite: Some(run.suite.clone()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(on_machine.len(), 2, "fingerprint prefix and suite");
    assert_eq!(store.list_machines().unwrap()[0].runs, 2);
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
    on_both(|t| {
        let mut store = Store::open(&t.location).unwrap();
        store.record_run(&example(), &Source::Run).unwrap();
    });
    let t = TestStore::sqlite();
    let path = &t.location;
    let mut store = Store::open(path).unwrap();
    store.record_run(&example(), &Source::Run).unwrap();
    drop(store);
    let dir = t.path().unwrap().parent().unwrap();
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
        match query(path, sql) {
            Err(StoreError::ReadOnly(_)) => {}
            other => panic!("{sql}: {other:?}"),
        }
    }
    assert!(!dir.join("other.db").exists());
    let out = query(
        path,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) \
         SELECT (SELECT count(*) FROM suite_runs) AS runs, sum(x) AS s FROM c",
    )
    .unwrap();
    assert_eq!(out.columns, ["runs", "s"]);
    assert_eq!(
        out.rows,
        vec![vec![serde_json::json!(1), serde_json::json!(6)]]
    );
    let info = query(path, "PRAGMA table_info(metrics)").unwrap();
    assert!(info.rows.len() > 10);
    let runs = query(path, "SELECT count(*) FROM suite_runs").unwrap();
    assert_eq!(runs.rows[0][0], serde_json::json!(1), "nothing was deleted");

    // PostgreSQL: a read-only transaction, as a role that may only SELECT.
    let Some(t) = TestStore::postgres() else {
        return;
    };
    let url = &t.location;
    let mut store = Store::open(url).unwrap();
    store.record_run(&example(), &Source::Run).unwrap();
    drop(store);
    for sql in [
        "DELETE FROM suite_runs",
        "UPDATE metrics SET value = 0",
        "INSERT INTO warpt_schema (version) VALUES (99)",
        "DROP TABLE samples",
        "CREATE TABLE t (x int)",
        "CREATE TEMP TABLE t (x int)",
        "TRUNCATE samples",
        "SELECT nextval('machines_id_seq')",
        "COPY suite_runs TO '/tmp/warpt-copy-test'",
        "SELECT pg_read_file('/etc/hostname')",
        "GRANT ALL ON suite_runs TO PUBLIC",
    ] {
        match query(url, sql) {
            Err(StoreError::ReadOnly(_)) => {}
            other => panic!("{sql}: {other:?}"),
        }
    }
    // Two statements are refused whole (one statement per query).
    assert!(query(url, "SELECT 1; DELETE FROM suite_runs").is_err());
    // Changing the transaction or the role back is one statement that
    // ends with the transaction; the next query is as locked as ever.
    let _ = query(url, "SET TRANSACTION READ WRITE");
    let _ = query(url, "RESET ROLE");
    assert!(matches!(
        query(url, "DELETE FROM suite_runs"),
        Err(StoreError::ReadOnly(_))
    ));
    assert!(!std::path::Path::new("/tmp/warpt-copy-test").exists());
    let out = query(
        url,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) \
         SELECT (SELECT count(*) FROM suite_runs) AS runs, sum(x) AS s, avg(x) AS a, \
         current_user AS who FROM c",
    )
    .unwrap();
    assert_eq!(out.columns, ["runs", "s", "a", "who"]);
    assert_eq!(
        out.rows,
        vec![vec![
            serde_json::json!(1),
            serde_json::json!(6),
            serde_json::json!(2.0),
            serde_json::json!("warpt_reader")
        ]]
    );
    let info = query(
        url,
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'metrics'",
    )
    .unwrap();
    assert!(info.rows.len() > 10, "{info:?}");
    let runs = query(url, "SELECT count(*) FROM suite_runs").unwrap();
    assert_eq!(runs.rows[0][0], serde_json::json!(1), "nothing was deleted");
    let capped = warpt_store::query_limited(
        url,
        "SELECT value FROM samples",
        Some(warpt_store::Limits {
            max_rows: 2,
            max_time: std::time::Duration::from_secs(5),
            max_bytes: 1 << 20,
        }),
    )
    .unwrap();
    assert_eq!(capped.rows.len(), 2);
    assert_eq!(capped.truncated, Some(warpt_store::Cap::Rows));
    let slow = warpt_store::query_limited(
        url,
        "SELECT pg_sleep(3)",
        Some(warpt_store::Limits {
            max_rows: 2,
            max_time: std::time::Duration::from_millis(200),
            max_bytes: 1 << 20,
        }),
    );
    assert!(matches!(slow, Err(StoreError::TimedOut(_))), "{slow:?}");
}

/// The example run repeated as `trials` trials (trial k's values scaled by
/// 1 + k/100), with aggregates as `--repeat` makes them.
fn with_trials(trials: usize) -> BenchmarkSuiteRun {
    let mut run = example();
    run.id = format!("repeated-{trials}");
    let mut list = Vec::new();
    for k in 0..trials {
        let mut t = run.benchmarks.clone();
        for r in &mut t {
            for m in &mut r.metrics {
                m.value *= 1.0 + k as f64 / 100.0;
            }
        }
        list.push(warpt_model::Trial {
            index: k as u32 + 1,
            start_time: run.start_time,
            end_time: run.end_time,
            // Reversed on odd trials, as a shuffled plan runs.
            order: if k % 2 == 1 {
                (0..t.len()).rev().collect()
            } else {
                (0..t.len()).collect()
            },
            benchmarks: if k % 2 == 1 {
                t.into_iter().rev().collect()
            } else {
                t
            },
        });
    }
    run.trials = list;
    run
}

#[test]
fn trials_read_back_in_place_and_count_as_runs_of_history() {
    on_both(trials_read_back);
}

fn trials_read_back(t: &TestStore) {
    let path = &t.location;
    let mut store = Store::open(path).unwrap();
    let run = with_trials(3);
    store.record_run(&run, &Source::Run).unwrap();
    assert_eq!(store.load_run(&run.id).unwrap(), run);
    let listed = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(listed[0].trials, 3);
    assert_eq!(listed[0].benchmarks, run.benchmarks.len() as i64);
    drop(store);
    let rows = query(path, "SELECT count(*) FROM results WHERE trial IS NOT NULL").unwrap();
    assert_eq!(rows.rows[0][0], serde_json::json!(3 * run.benchmarks.len()));

    // History: each trial is one run; the aggregate is not.
    let store = Store::open(path).unwrap();
    let r = &run.benchmarks[0];
    let m = &r.metrics[0];
    let fingerprint = run.system.as_ref().unwrap().fingerprint();
    let key = warpt_store::NoiseKey {
        fingerprint: &fingerprint,
        suite: &r.spec.id.suite,
        benchmark: &r.spec.id.name,
        metric: &m.name,
        tags: &m.tags,
        params: &r.params,
    };
    let mut values = store.noise_history(&key, &[], 50).unwrap();
    values.sort_by(f64::total_cmp);
    let want: Vec<f64> = (0..3).map(|k| m.value * (1.0 + k as f64 / 100.0)).collect();
    assert_eq!(values, want);
    assert!(
        store
            .noise_history(&key, &[&run.id], 50)
            .unwrap()
            .is_empty()
    );
    assert!(store.noise_profile(&key).unwrap().is_none());

    // What /metrics reports is what a listing counts, trials or not.
    let mut store = Store::open(path).unwrap();
    store.record_run(&example(), &Source::Run).unwrap();
    assert_eq!(store.count_runs().unwrap(), 2);
    assert_eq!(store.list_runs(&RunFilter::default()).unwrap().len(), 2);
}

#[test]
fn the_latest_noise_profile_is_the_one_in_force() {
    on_both(latest_profile);
}

fn latest_profile(t: &TestStore) {
    let mut store = Store::open(&t.location).unwrap();
    let run = example();
    let system = run.system.clone().unwrap();
    let r = &run.benchmarks[0];
    let m = &r.metrics[0];
    let entry = |cv: f64, at: &str| warpt_model::NoiseEntry {
        cv_sd: Some(cv * 1.1),
        within_ci: Some(0.004),
        duration_s: Some(2.0),
        run_id: Some("aa".into()),
        recorded_at: Some(at.into()),
        ..warpt_model::NoiseEntry::of(r, m, 5, m.value, cv)
    };
    store
        .record_noise(&system, &[entry(0.03, "2026-11-01T00:00:00Z")])
        .unwrap();
    store
        .record_noise(&system, &[entry(0.02, "2026-11-02T00:00:00Z")])
        .unwrap();
    let fingerprint = system.fingerprint();
    let key = warpt_store::NoiseKey {
        fingerprint: &fingerprint,
        suite: &r.spec.id.suite,
        benchmark: &r.spec.id.name,
        metric: &m.name,
        tags: &m.tags,
        params: &r.params,
    };
    assert_eq!(
        store.noise_profile(&key).unwrap(),
        Some(entry(0.02, "2026-11-02T00:00:00Z"))
    );
    // Other parameters: no profile applies.
    let mut other = r.params.clone();
    other.insert("array_mb".into(), warpt_model::ParamValue::Int(1));
    let key = warpt_store::NoiseKey {
        params: &other,
        ..key
    };
    assert!(store.noise_profile(&key).unwrap().is_none());
}

/// The SQL console's caps hold against statements that spend seconds in
/// one step (the deadline is a timer, not a step count), that build one
/// huge value (SQLITE_LIMIT_LENGTH) or that return many large ones (the
/// byte cap, named in `truncated`).
#[test]
fn sqlite_queries_are_bounded_in_time_and_bytes() {
    let t = TestStore::sqlite();
    let mut store = Store::open(&t.location).unwrap();
    store.record_run(&example(), &Source::Run).unwrap();
    drop(store);
    let limits = |ms: u64, bytes: usize| {
        Some(warpt_store::Limits {
            max_rows: 10_000,
            max_time: std::time::Duration::from_millis(ms),
            max_bytes: bytes,
        })
    };
    // One value larger than the byte cap is refused while being built.
    let big = warpt_store::query_limited(
        &t.location,
        "SELECT length(hex(randomblob(100000000)))",
        limits(5_000, 1 << 20),
    );
    assert!(
        matches!(&big, Err(StoreError::Sql(e)) if e.to_string().contains("too big")),
        "{big:?}"
    );
    // Many values under the cap each, over it together: cut at the cap.
    let many = warpt_store::query_limited(
        &t.location,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 40) \
         SELECT hex(randomblob(100000)) FROM c",
        limits(5_000, 1 << 20),
    )
    .unwrap();
    assert_eq!(many.truncated, Some(warpt_store::Cap::Bytes));
    assert_eq!(many.rows.len(), 5, "five rows of 200 kB fit in 1 MiB");
    // A statement whose steps are slow is stopped by the timer: a
    // recursive CTE joining a large table with itself never reaches a
    // step count in time on a single huge sort, but the interrupt ends it.
    let slow = warpt_store::query_limited(
        &t.location,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000) \
         SELECT count(*) FROM c a, c b",
        limits(300, 1 << 20),
    );
    assert!(matches!(slow, Err(StoreError::TimedOut(_))), "{slow:?}");
}

#[test]
fn runs_are_found_by_their_labels_and_carry_their_description() {
    on_both(found_by_labels);
}

fn found_by_labels(t: &TestStore) {
    let mut store = Store::open(&t.location).unwrap();
    let labelled = |id: &str, bios: &str, description: Option<&str>| {
        let mut run = example();
        run.id = id.into();
        let m = run.manifest.get_or_insert_with(Default::default);
        m.labels = [
            ("bios".to_string(), bios.to_string()),
            ("rack".to_string(), "b7".to_string()),
        ]
        .into();
        m.description = description.map(str::to_string);
        run
    };
    store
        .record_run(
            &labelled("before", "1.2", Some("before the BIOS update")),
            &Source::Run,
        )
        .unwrap();
    store
        .record_run(&labelled("after", "1.3", None), &Source::Run)
        .unwrap();
    let with = |labels: &[(&str, &str)]| {
        store
            .list_runs(&RunFilter {
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Default::default()
            })
            .unwrap()
    };
    let before = with(&[("bios", "1.2")]);
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].id, "before");
    assert_eq!(before[0].labels["rack"], "b7");
    assert_eq!(
        before[0].description.as_deref(),
        Some("before the BIOS update")
    );
    assert_eq!(with(&[("rack", "b7")]).len(), 2);
    assert!(
        with(&[("rack", "b7"), ("bios", "1.4")]).is_empty(),
        "all of them"
    );
    // `label:KEY=VALUE` names the latest run carrying it.
    assert_eq!(store.load_run("label:bios=1.2").unwrap().id, "before");
    assert_eq!(
        store.load_run("label:rack=b7").unwrap().id,
        "after",
        "the latest"
    );
    assert!(matches!(
        store.load_run("label:bios=9"),
        Err(StoreError::NotFound(_))
    ));
    // Read back whole, and as rows SQL can join.
    assert_eq!(
        store.load_run("after").unwrap(),
        labelled("after", "1.3", None)
    );
    drop(store);
    let rows = query(
        &t.location,
        "SELECT run_id FROM run_labels WHERE key = 'bios' AND value = '1.3'",
    )
    .unwrap();
    assert_eq!(rows.rows, vec![vec![serde_json::json!("after")]]);
    // A stress run's labels are found the same way.
    let mut store = Store::open(&t.location).unwrap();
    let stress = warpt_model::StressRun {
        id: "burn".into(),
        target: "cpu".into(),
        labels: [("rack".to_string(), "b7".to_string())].into(),
        description: Some("after the fan swap".into()),
        ..warpt_model::StressRun::default()
    };
    store.record_stress(&stress, None).unwrap();
    let found = store
        .list_runs(&RunFilter {
            labels: vec![("rack".into(), "b7".into())],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(found.len(), 3);
    let burn = found.iter().find(|r| r.kind == "stress").unwrap();
    assert_eq!(burn.labels["rack"], "b7");
    assert_eq!(burn.description.as_deref(), Some("after the fan swap"));
    assert_eq!(store.load_stress("burn").unwrap(), stress);
}

#[test]
fn model_results_has_one_row_per_ml_metric_with_the_models_facts() {
    on_both(model_rows);
}

fn model_rows(t: &TestStore) {
    use warpt_model::ParamValue;
    let mut store = Store::open(&t.location).unwrap();
    let mut run = example();
    run.id = "ml".into();
    // The first result as an LLM's: the model's facts in its details and
    // parameters, as pepbench writes them.
    let r = &mut run.benchmarks[0];
    r.params = [
        ("model".to_string(), ParamValue::from("small")),
        ("device".to_string(), ParamValue::from("cpu")),
        ("batch".to_string(), ParamValue::Int(8)),
        ("prompt_tokens".to_string(), ParamValue::Int(128)),
        ("precision".to_string(), ParamValue::from("bf16")),
    ]
    .into();
    r.details = [
        ("model".to_string(), ParamValue::from("small")),
        ("family".to_string(), ParamValue::from("llama")),
        ("precision".to_string(), ParamValue::from("bf16")),
        ("parameters".to_string(), ParamValue::Int(33_554_432)),
    ]
    .into();
    let ml_metrics = r.metrics.len();
    // The other results (not ML) stay out of the view.
    for other in &mut run.benchmarks[1..] {
        other.params.remove("model");
        other.details.remove("model");
        other.details.remove("family");
    }
    store.record_run(&run, &Source::Run).unwrap();
    let out = query(
        &t.location,
        "SELECT model, family, device, batch, sequence_length, precision, parameters, \
         metric, value, unit FROM model_results ORDER BY metric",
    )
    .unwrap();
    assert_eq!(
        out.columns,
        [
            "model",
            "family",
            "device",
            "batch",
            "sequence_length",
            "precision",
            "parameters",
            "metric",
            "value",
            "unit"
        ]
    );
    assert_eq!(out.rows.len(), ml_metrics, "{:?}", out.rows);
    let row = &out.rows[0];
    assert_eq!(row[0], "small");
    assert_eq!(row[1], "llama");
    assert_eq!(row[2], "cpu");
    assert_eq!(row[3], 8);
    assert_eq!(row[4], 128);
    assert_eq!(row[5], "bf16");
    assert_eq!(row[6], 33_554_432);
    let mut names: Vec<&str> = run.benchmarks[0]
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    names.sort_unstable();
    let got: Vec<&str> = out.rows.iter().map(|r| r[7].as_str().unwrap()).collect();
    assert_eq!(got, names);
    // A model whose batch is not a number gets none, not an error.
    let mut odd = example();
    odd.id = "odd".into();
    odd.benchmarks.truncate(1);
    odd.benchmarks[0].params = [
        ("model".to_string(), ParamValue::from("mine")),
        ("batch".to_string(), ParamValue::from("auto")),
    ]
    .into();
    store.record_run(&odd, &Source::Run).unwrap();
    let out = query(
        &t.location,
        "SELECT DISTINCT batch FROM model_results WHERE model = 'mine'",
    )
    .unwrap();
    assert_eq!(out.rows.len(), 1);
    assert!(
        out.rows[0][0].is_null() || out.rows[0][0] == "auto",
        "{:?}",
        out.rows
    );
}
