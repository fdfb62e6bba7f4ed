//! hyperfine's three formats of a real `warpt exec` session: the fields
//! scripts written for hyperfine read.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use warpt_exec::engine::Quiet;
use warpt_exec::plan::ExecPlan;
use warpt_exec::session::Session;
use warpt_export::{Document, EXEC};

/// `true` and `sleep 0.02` through `sh`, one warm-up and five runs each.
fn session() -> Session {
    let p = ExecPlan {
        warmup: 1,
        runs: Some(5),
        min_runs: 2,
        min_time: Duration::ZERO,
        max_time: Duration::from_secs(30),
        ..ExecPlan::new(vec!["true".into(), "sleep 0.02".into()])
    };
    let jobs = p.jobs().unwrap();
    Session::run(&p, jobs, &Quiet, None, vec!["warpt".into(), "exec".into()]).unwrap()
}

fn text(name: &str, s: &Session) -> String {
    match EXEC.get(name).unwrap().render(&s.results).unwrap() {
        Document::Text(t) => t,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn a_sessions_results_in_hyperfines_json_markdown_and_csv() {
    let s = session();
    let json: serde_json::Value = serde_json::from_str(&text("json", &s)).unwrap();
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1]["command"], "sleep 0.02");
    assert_eq!(results[1]["times"].as_array().unwrap().len(), 5);
    assert!(results[1]["mean"].as_f64().unwrap() >= 0.015, "{json}");

    let md = text("markdown", &s);
    let rows: Vec<&str> = md.lines().collect();
    assert!(rows[0].starts_with("| Command | Mean [ms] |"), "{md}");
    assert_eq!(
        rows.len(),
        4,
        "a header, its rule and a row a command: {md}"
    );
    assert!(rows[3].starts_with("| `sleep 0.02` |"), "{md}");

    let csv = text("csv", &s);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "command,mean,stddev,median,user,system,min,max");
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[2].starts_with("sleep 0.02,"), "{csv}");
}
