//! warpt-run as a library: a typed request through plan → run → export →
//! outcome, in process, on the selftest suite (no warpt binary involved).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use warpt_harness::{NoProgress, ParamArg, Registry};
use warpt_run::config::Flags;
use warpt_run::request::{ExportChoice, PlanSource, Select};
use warpt_run::run::Fixed;
use warpt_run::{RunOutcome, RunRequest, StoreChoice};

/// The selftest suite alone.
fn selftest() -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(warpt_selftest::SelftestSuite));
    r
}

/// What plans are resolved against and workers run.
const SELFTEST: Fixed = Fixed(selftest);

fn request(benchmarks: &[&str], params: &[(&str, &str)], export: &Path) -> RunRequest {
    RunRequest {
        plan: PlanSource::Select(Select {
            suite: Some("selftest".into()),
            benchmarks: benchmarks.iter().map(|b| b.to_string()).collect(),
            components: Vec::new(),
            params: params.iter().map(|(k, v)| ParamArg::new(*k, *v)).collect(),
        }),
        settings: Flags {
            duration: Some(0.1),
            burnin_seconds: Some(0.0),
            in_process: true,
            ..Flags::default()
        },
        store: StoreChoice::Off,
        export: ExportChoice::File(export.to_path_buf()),
        ..RunRequest::default()
    }
}

#[test]
fn a_request_is_planned_run_exported_and_judged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let req = request(&["ok", "work"], &[("iterations", "1000")], &path);
    let (plan, options) = warpt_run::plan(&req, &SELFTEST).unwrap();
    assert_eq!(plan.entries.len(), 2);
    let ran = warpt_run::run(&req, &plan, options, &SELFTEST, &NoProgress).unwrap();
    assert_eq!(ran.outcome, RunOutcome::Success);
    assert_eq!(ran.outcome.exit_code(), 0);
    let text = std::fs::read_to_string(&path).unwrap();
    let back = warpt_model::load_suite_run(&text).unwrap();
    assert_eq!(back.id, ran.run.id);
    assert_eq!(back.benchmarks.len(), 2);
    let work = &back.benchmarks[1];
    assert!(work.success, "{:?}", work.error_message);
    assert_eq!(
        work.params["iterations"],
        warpt_model::ParamValue::Int(1000)
    );
    assert!(
        work.metrics
            .iter()
            .all(|m| m.value.is_finite() && m.value > 0.0)
    );
}

#[test]
fn a_bad_request_is_the_users_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    for (benchmarks, params, names) in [
        (&["nope"][..], &[][..], "nope"),
        (&["work"][..], &[("slowdown_pct", "-1")][..], "slowdown_pct"),
        (&["work"][..], &[("no_such", "1")][..], "no_such"),
    ] {
        let req = request(benchmarks, params, &path);
        let e = warpt_run::plan(&req, &SELFTEST).unwrap_err();
        assert!(warpt_run::is_usage_error(&e), "{e:#}");
        assert!(format!("{e:#}").contains(names), "{e:#}");
    }
    assert!(!path.exists());
}
