//! warpt-exec as a library: real commands measured by a session, and the
//! `exec` suite run it records (hyperfine's exports of a session are
//! warpt-export's tests).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use warpt_exec::ExecError;
use warpt_exec::engine::Quiet;
use warpt_exec::plan::ExecPlan;
use warpt_exec::session::Session;
use warpt_model::RunStatus;

/// `commands` through `sh`, one warm-up and five measured runs each.
fn plan(commands: &[&str]) -> ExecPlan {
    ExecPlan {
        warmup: 1,
        runs: Some(5),
        min_runs: 2,
        max_runs: 1000,
        min_time: Duration::ZERO,
        max_time: Duration::from_secs(30),
        seed: 1,
        ..ExecPlan::new(commands.iter().map(|c| c.to_string()).collect())
    }
}

fn session(p: &ExecPlan) -> Session {
    let jobs = p.jobs().unwrap();
    Session::run(p, jobs, &Quiet, None, vec!["warpt".into(), "exec".into()]).unwrap()
}

#[test]
fn a_session_measures_each_command_and_records_an_exec_run() {
    let p = plan(&["true", "sleep 0.02"]);
    let s = session(&p);
    // Through a shell its spawn time is measured: 50 runs before the jobs
    // and one in each of the five rounds among them.
    assert_eq!(s.cost.map(|c| c.runs), Some(55));
    assert_eq!(s.results.len(), 2);
    for r in &s.results {
        assert_eq!(r.status, RunStatus::Passed, "{:?}", r.message);
        assert_eq!(r.samples.len(), 5);
    }
    // The shell's cost is subtracted, never the command's own time.
    assert!(s.results[1].samples.iter().all(|x| x.wall_s >= 0.015));
    assert_eq!(s.suite_run.suite, "exec");
    assert_eq!(s.suite_run.benchmarks.len(), 2);
    let wall = |i: usize| {
        s.suite_run.benchmarks[i]
            .metrics
            .iter()
            .find(|m| m.name == "wall_time_s")
            .unwrap()
            .value
    };
    assert!(wall(1) > wall(0));
}

#[test]
fn a_failing_command_fails_its_own_job_alone() {
    let s = session(&plan(&["exit 3", "true"]));
    assert_eq!(s.results[0].status, RunStatus::Failed);
    let why = s.results[0].message.as_deref().unwrap();
    assert!(why.contains("exit 3"), "{why}");
    assert_eq!(s.results[1].status, RunStatus::Passed);
    assert!(!s.suite_run.benchmarks[0].success);
    assert!(s.suite_run.benchmarks[1].success);
}

#[test]
fn a_plan_that_cannot_run_is_refused_before_anything_runs() {
    let usage = |p: &ExecPlan| match p.jobs() {
        Err(ExecError::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(usage(&plan(&[])).contains("at least one command"));
    let mut p = plan(&["true"]);
    p.min_runs = 5;
    p.max_runs = 2;
    assert!(usage(&p).contains("--min-runs 5 is above --max-runs 2"));
    let mut p = plan(&["true", "true"]);
    p.duet = true;
    p.timeout = Some(Duration::from_secs(1));
    assert!(usage(&p).contains("--duet and --timeout"));
}
