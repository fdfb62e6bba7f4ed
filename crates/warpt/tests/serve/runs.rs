//! Submitted runs: the WebSocket follows a real run in order, late joiners
//! get the replay, two runs execute one after the other, cancel stops a
//! running one as Ctrl-C does, and a server killed with SIGKILL mid-run
//! comes back with the run marked interrupted and the store consistent
//! (the orphaned run stops and records what it had).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::Message;
use tungstenite::protocol::frame::coding::CloseCode;

use crate::{Server, cancel, get, http, post_run as post, start};

/// A tiny real run: one benchmark, a fraction of a second.
fn tiny() -> Value {
    json!({"suite": "micro", "benchmarks": ["cpu_flops"], "params": {"threads": 1},
           "duration": 0.2, "burnin_seconds": 0, "monitor_interval": 0.1})
}

/// A run long enough to be interrupted (the duration is a minimum).
fn long() -> Value {
    json!({"suite": "micro", "benchmarks": ["cpu_flops"], "params": {"threads": 1},
           "duration": 60, "burnin_seconds": 0})
}

fn submit(server: &Server, body: &Value) -> String {
    let (status, v) = post(server, body);
    assert_eq!(status, 202, "{v}");
    v["id"].as_str().unwrap().to_string()
}

/// Every event of run `id` until the server closes the socket, which it
/// must do with code 1000.
fn follow(server: &Server, id: &str, mut stop: impl FnMut(&Value) -> bool) -> Vec<Value> {
    let url = format!("ws://{}/api/v1/runs/{id}/events", server.addr);
    let (mut ws, _) = tungstenite::connect(url).unwrap();
    let mut events = Vec::new();
    loop {
        match ws.read().unwrap() {
            Message::Text(t) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                let done = stop(&v);
                events.push(v);
                if done {
                    return events;
                }
            }
            Message::Close(frame) => {
                assert_eq!(frame.map(|f| f.code), Some(CloseCode::Normal));
                return events;
            }
            _ => {}
        }
    }
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn first(types: &[&str], t: &str) -> usize {
    types
        .iter()
        .position(|x| *x == t)
        .unwrap_or_else(|| panic!("no {t} in {types:?}"))
}

fn status(server: &Server, id: &str) -> Value {
    let (code, v) = get(server, &format!("/api/v1/runs/{id}/status"));
    assert_eq!(code, 200, "{v}");
    v
}

fn wait_for(server: &Server, id: &str, state: &str) -> Value {
    let start = Instant::now();
    loop {
        let v = status(server, id);
        if v["state"] == state {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "run {id} never reached {state}: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_websocket_follows_a_real_run_in_order_and_late_joiners_get_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let id = submit(&server, &tiny());
    let live = follow(&server, &id, |_| false);
    let t = types(&live);
    // From first stage to result, in order, then the end.
    let order = [
        "run_started",
        "benchmark_started",
        "stage",
        "series_started",
        "sample",
        "series_finished",
        "result",
        "run_finished",
    ];
    for pair in order.windows(2) {
        assert!(
            first(&t, pair[0]) < first(&t, pair[1]),
            "{} before {}: {t:?}",
            pair[0],
            pair[1]
        );
    }
    assert_eq!(*t.last().unwrap(), "run_finished");
    assert!(t.contains(&"telemetry"), "{t:?}");
    let stages: Vec<&str> = live
        .iter()
        .filter(|e| e["type"] == "stage")
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages.first(), Some(&"setup"), "{stages:?}");
    let result = live.iter().find(|e| e["type"] == "result").unwrap();
    assert_eq!(result["benchmark"], "micro/cpu_flops");
    assert_eq!(result["result"]["status"], "passed", "{result}");
    let end = live.last().unwrap();
    assert_eq!(end["state"], "finished", "{end}");
    // The samples streamed are the ones recorded.
    let streamed = t.iter().filter(|x| **x == "sample").count();
    let (_, stored) = get(&server, &format!("/api/v1/runs/{id}/results"));
    let recorded: usize = stored[0]["metrics"]
        .as_array()
        .unwrap_or_else(|| panic!("{stored}"))
        .iter()
        .map(|m| m["stats"]["samples"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(streamed, recorded);

    // A client joining after the end gets the same story, then the close.
    let late = follow(&server, &id, |_| false);
    assert_eq!(types(&late), t);
}

#[test]
fn runs_queue_and_execute_one_at_a_time_and_cancel_stops_a_running_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    // Bad input first: no token, wrong token, unknown key, unknown benchmark.
    let (code, _) = http(
        &server.addr,
        "POST",
        "/api/v1/runs",
        None,
        &tiny().to_string(),
    );
    assert_eq!(code, 401);
    let (code, _) = http(
        &server.addr,
        "POST",
        "/api/v1/runs",
        Some("wrong-token-0123456789"),
        &tiny().to_string(),
    );
    assert_eq!(code, 401);
    let (code, v) = post(
        &server,
        &json!({"suite": "micro", "benchmark": "cpu_flops"}),
    );
    assert_eq!((code, v["field"].as_str()), (400, Some("benchmark")), "{v}");
    let (code, v) = post(&server, &json!({"suite": "micro", "benchmarks": ["nope"]}));
    assert_eq!(code, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("nope"), "{v}");
    let code = cancel(&server, "nope");
    assert_eq!(code, 404);
    let (code, _) = http(&server.addr, "DELETE", "/api/v1/runs/nope", None, "");
    assert_eq!(code, 401);
    let (code, _) = get(&server, "/api/v1/runs/nope/status");
    assert_eq!(code, 404);
    let ws = tungstenite::connect(format!("ws://{}/api/v1/runs/nope/events", server.addr));
    assert!(
        matches!(ws, Err(tungstenite::Error::Http(ref r)) if r.status() == 404),
        "{ws:?}"
    );

    // A long run, then two tiny ones posted at once behind it.
    let blocker = submit(&server, &long());
    let a = submit(&server, &tiny());
    let b = submit(&server, &tiny());
    wait_for(&server, &blocker, "running");
    let (_, queue) = get(&server, "/api/v1/queue");
    let listed: Vec<(&str, i64)> = queue["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["position"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [(blocker.as_str(), 0), (a.as_str(), 1), (b.as_str(), 2)]
    );
    let (_, metrics) = http(&server.addr, "GET", "/metrics", None, "");
    assert!(metrics.contains("\nwarpt_runs_queued 2\n"), "{metrics}");
    assert!(metrics.contains("\nwarpt_runs_running 1\n"), "{metrics}");
    // Cancel b while queued, and the blocker while it measures.
    let code = cancel(&server, &b);
    assert_eq!(code, 200);
    assert_eq!(status(&server, &b)["state"], "cancelled");
    follow(&server, &blocker, |e| e["type"] == "sample");
    let code = cancel(&server, &blocker);
    assert_eq!(code, 202);
    let c = submit(&server, &tiny());
    let blocked = wait_for(&server, &blocker, "cancelled");
    let a_done = wait_for(&server, &a, "finished");
    let c_done = wait_for(&server, &c, "finished");
    // One after the other: each starts after the one before it ended.
    let at = |v: &Value, k: &str| v[k].as_str().unwrap().parse::<jiff::Timestamp>().unwrap();
    assert!(at(&a_done, "started_at") >= at(&blocked, "finished_at"));
    assert!(at(&c_done, "started_at") >= at(&a_done, "finished_at"));
    // The cancelled run kept what it had: recorded, marked interrupted.
    let (code, run) = get(&server, &format!("/api/v1/runs/{blocker}"));
    assert_eq!(code, 200, "{run}");
    assert_eq!(run["interrupted"], true);
    let code = cancel(&server, &a);
    assert_eq!(code, 409);
    // Every submitted run, newest first, with how it ended.
    let (_, jobs) = get(&server, "/api/v1/jobs");
    let states: Vec<(&str, &str)> = jobs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["id"].as_str().unwrap(), j["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            (c.as_str(), "finished"),
            (b.as_str(), "cancelled"),
            (a.as_str(), "finished"),
            (blocker.as_str(), "cancelled")
        ]
    );
}

#[test]
fn a_server_stopped_mid_run_keeps_what_finished_and_a_killed_one_restarts_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path());
    let done = submit(&server, &tiny());
    wait_for(&server, &done, "finished");
    // SIGTERM (a service manager's stop): the run executing stops as on
    // Ctrl-C, and what it measured is recorded, marked interrupted.
    let id = submit(&server, &long());
    let queued = submit(&server, &tiny());
    follow(&server, &id, |e| e["type"] == "sample");
    // SAFETY: kill(2) on the server's own pid.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let stopped = server.child.wait().unwrap();
    assert!(
        stopped.success() || stopped.code() == Some(0),
        "{stopped:?}"
    );
    drop(server);
    let mut server = start(dir.path());
    let v = status(&server, &id);
    assert_eq!(v["state"], "interrupted", "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("server stopped"),
        "{v}"
    );
    let (code, full) = get(&server, &format!("/api/v1/runs/{id}"));
    assert_eq!(code, 200, "{full}");
    assert_eq!(full["interrupted"], true, "{full}");
    // What was queued behind it runs after the restart.
    wait_for(&server, &queued, "finished");

    // SIGKILL: no chance to clean up. The run dies with the server (its
    // workers too, at their next write); the restart marks it interrupted
    // and the store holds no part of it.
    let killed = submit(&server, &long());
    follow(&server, &killed, |e| e["type"] == "sample");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(server);
    let server = start(dir.path());
    let v = status(&server, &killed);
    assert_eq!(v["state"], "interrupted", "{v}");
    assert!(v["message"].as_str().unwrap().contains("server stopped"));
    let (code, _) = get(&server, &format!("/api/v1/runs/{done}"));
    assert_eq!(code, 200);
    let (code, list) = get(&server, "/api/v1/runs");
    assert_eq!(code, 200);
    assert_eq!(list["runs"].as_array().unwrap().len(), 3, "{list}");
    let (code, q) = http(
        &server.addr,
        "POST",
        "/api/v1/query",
        Some(&server.token),
        r#"{"sql": "SELECT count(*) FROM results WHERE run_id NOT IN (SELECT id FROM suite_runs)"}"#,
    );
    assert_eq!(code, 200, "{q}");
    let q: Value = serde_json::from_str(&q).unwrap();
    assert_eq!(q["rows"][0][0], 0, "{q}");
}

#[test]
fn a_benchmark_that_crashes_its_worker_leaves_the_server_answering() {
    let dir = tempfile::tempdir().unwrap();
    let server = crate::start_env(dir.path(), &[("WARPT_SELFTEST", "1")]);
    let id = submit(
        &server,
        &serde_json::json!({"suite": "selftest", "benchmarks": ["segfault", "ok"],
                            "duration": 0.2, "burnin_seconds": 0, "monitor": false}),
    );
    let v = wait_for(&server, &id, "finished");
    assert_eq!(v["message"], "1 of 2 benchmark(s) did not pass", "{v}");
    let (code, full) = get(&server, &format!("/api/v1/runs/{id}"));
    assert_eq!(code, 200, "{full}");
    let statuses = crate::common::texts(&full["benchmarks"], "status");
    assert_eq!(statuses, ["crashed", "passed"], "{full}");
    // The server still answers, and runs the next request.
    let (code, _) = get(&server, "/api/v1/queue");
    assert_eq!(code, 200);
    let next = submit(&server, &tiny());
    wait_for(&server, &next, "finished");
}
