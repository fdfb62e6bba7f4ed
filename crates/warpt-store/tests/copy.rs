//! `warpt results migrate`'s copy: a SQLite history into another store of
//! each backend, everything read back as it was, with its recording times,
//! and a second copy adding nothing.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::{BenchmarkSuiteRun, StressRun};
use warpt_store::testing::{TestStore, on_both};
use warpt_store::{CopyReport, RunFilter, Source, Store, query};

fn example() -> BenchmarkSuiteRun {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    serde_json::from_str(text).unwrap()
}

/// A store with two suite runs (one imported), one on a second machine, a
/// stress run and a noise profile.
fn source() -> TestStore {
    let t = TestStore::sqlite();
    let mut store = Store::open(&t.location).unwrap();
    let first = example();
    store.record_run(&first, &Source::Run).unwrap();
    let mut second = example();
    second.id = "second".into();
    if let Some(s) = second.system.as_mut() {
        s.os.hostname = "node-b".into();
        s.cpu.model = "Other CPU".into();
    }
    store
        .record_run(&second, &Source::Import("from/b.json".into()))
        .unwrap();
    let stress = StressRun {
        id: "stress-1".into(),
        target: "cpu".into(),
        unit: "GFLOP/s".into(),
        checks: 10,
        passed: true,
        system: first.system.clone(),
        labels: [("burn-in".to_string(), "rack7".to_string())].into(),
        description: Some("after the fan swap".into()),
        ..StressRun::default()
    };
    store
        .record_stress(&stress, stress.system.as_ref())
        .unwrap();
    let r = &first.benchmarks[0];
    let m = &r.metrics[0];
    store
        .record_noise(
            first.system.as_ref().unwrap(),
            &[warpt_model::NoiseEntry {
                recorded_at: Some("2026-11-01T00:00:00Z".into()),
                ..warpt_model::NoiseEntry::of(r, m, 5, m.value, 0.02)
            }],
        )
        .unwrap();
    t
}

fn column(store: &TestStore, sql: &str) -> Vec<serde_json::Value> {
    query(&store.location, sql)
        .unwrap()
        .rows
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
}

#[test]
fn a_history_is_copied_whole_and_a_second_copy_adds_nothing() {
    let src = source();
    on_both(|dst| {
        let from = Store::open(&src.location).unwrap();
        let to = Store::open(&dst.location).unwrap();
        let mut seen = Vec::new();
        let report =
            warpt_store::copy::copy(&from, &to, &mut |done, all| seen.push((done, all))).unwrap();
        assert_eq!(
            report,
            CopyReport {
                machines: 2,
                runs: 2,
                stress_runs: 1,
                noise_profiles: 1,
                ..CopyReport::default()
            }
        );
        assert_eq!(seen, [(1, 2), (2, 2)]);
        for id in [example().id.as_str(), "second"] {
            assert_eq!(to.load_run(id).unwrap(), from.load_run(id).unwrap());
        }
        assert_eq!(
            to.load_stress("stress-1").unwrap(),
            from.load_stress("stress-1").unwrap()
        );
        let sql = "SELECT id || ' ' || recorded_at || ' ' || source || ' ' || coalesce(imported_from, '-') \
                   FROM suite_runs ORDER BY id";
        assert_eq!(column(dst, sql), column(&src, sql));
        // A stress run's labels and description travel with it.
        let sql = "SELECT s.id || ' ' || s.description || ' ' || l.key || '=' || l.value \
                   FROM stress_runs s JOIN stress_labels l ON l.run_id = s.id";
        assert_eq!(
            column(dst, sql),
            [serde_json::json!(
                "stress-1 after the fan swap burn-in=rack7"
            )]
        );
        let sql = "SELECT fingerprint || ' ' || first_seen FROM machines ORDER BY fingerprint";
        assert_eq!(column(dst, sql), column(&src, sql));
        let sql = "SELECT suite || benchmark || metric || recorded_at FROM noise_profiles";
        assert_eq!(column(dst, sql), column(&src, sql));
        assert_eq!(
            to.list_runs(&RunFilter::default()).unwrap(),
            from.list_runs(&RunFilter::default()).unwrap()
        );

        let again = warpt_store::copy::copy(&from, &to, &mut |_, _| {}).unwrap();
        assert_eq!(
            again,
            CopyReport {
                runs_present: 2,
                stress_present: 1,
                noise_present: 1,
                ..CopyReport::default()
            }
        );
    });
}
