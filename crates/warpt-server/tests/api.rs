//! warpt-server as a library: its router answered in process (no socket,
//! no warpt binary) over a real SQLite store. The read routes and their
//! bad input named by field, the guard's host and origin checks, and
//! submissions refused before anything is queued.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, header};
use serde_json::Value;
use tower::ServiceExt;
use warpt_harness::Registry;
use warpt_model::BenchmarkSuiteRun;
use warpt_run::PlanBase;
use warpt_run::config::Config;
use warpt_run::run::Fixed;
use warpt_server::queue::Queue;
use warpt_server::{Access, AppState};
use warpt_store::{Location, Source, Store};

/// The selftest suite alone.
fn selftest() -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(warpt_selftest::SelftestSuite));
    r
}

/// What plans are resolved against and workers run.
const SELFTEST: Fixed = Fixed(selftest);

/// The shipped example export, and the same run an hour later with every
/// figure 1.5 times as large.
fn two_runs() -> (BenchmarkSuiteRun, BenchmarkSuiteRun) {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    let base = warpt_model::load_suite_run(text).unwrap();
    let mut later = base.clone();
    later.id = "20261122T023054Z-d1e2f3".into();
    let hour = jiff::SignedDuration::from_hours(1);
    later.start_time = base.start_time.map(|t| t + hour);
    later.end_time = base.end_time.map(|t| t + hour);
    for m in later
        .benchmarks
        .iter_mut()
        .flat_map(|b| b.metrics.iter_mut())
    {
        m.value *= 1.5;
        if let Some(s) = m.stats.as_mut() {
            s.scale(1.5);
        }
    }
    (base, later)
}

/// The router over a store holding [`two_runs`], and the token.
struct Server {
    router: axum::Router,
    token: String,
    queue: Arc<Queue>,
    runs: (BenchmarkSuiteRun, BenchmarkSuiteRun),
}

fn server(dir: &Path) -> Server {
    let location = Location::Sqlite(dir.join("store.db"));
    let mut store = Store::open(&location).unwrap();
    let runs = two_runs();
    store.record_run(&runs.0, &Source::Run).unwrap();
    store.record_run(&runs.1, &Source::Run).unwrap();
    let token_file = dir.join("token");
    let token = warpt_server::auth::load_or_create(&token_file, false).unwrap();
    let registry = selftest();
    let specs = registry.all_specs();
    let base = Arc::new(PlanBase::new(Config::defaults(), registry).unwrap());
    let queue = Queue::start(Arc::clone(&base), Arc::new(SELFTEST), location.clone()).unwrap();
    let access = Access::new(false, &[], &[], false).unwrap();
    let state = AppState::new(location, specs, token, base, Arc::clone(&queue), 16, access);
    Server {
        router: warpt_server::api::router(Arc::new(state)),
        token: std::fs::read_to_string(token_file)
            .unwrap()
            .trim()
            .to_string(),
        queue,
        runs,
    }
}

/// One request: its status, headers and body.
fn call(
    s: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, axum::http::HeaderMap, String) {
    let mut request = Request::builder().method(method).uri(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request = request.header(header::HOST, "127.0.0.1:8080");
    }
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let response = s.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 24)
            .await
            .unwrap();
        (
            status,
            headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    })
}

fn get(s: &Server, path: &str) -> (u16, Value) {
    let (status, _, body) = call(s, "GET", path, &[], "");
    let json = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (status, json)
}

#[test]
fn the_read_routes_answer_from_the_store_and_name_the_field_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let (old, new) = (&s.runs.0.id, &s.runs.1.id);

    let (status, health) = get(&s, "/api/v1/health");
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    let (_, specs) = get(&s, "/api/v1/benchmarks");
    let names: Vec<&str> = specs
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"ok") && names.contains(&"work"),
        "{names:?}"
    );

    // Newest first, paged; bad paging named.
    let (_, all) = get(&s, "/api/v1/runs");
    let ids: Vec<&str> = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [new.as_str(), old.as_str()]);
    let (_, page) = get(&s, "/api/v1/runs?limit=1&offset=1");
    assert_eq!(page["runs"][0]["id"], old.as_str());
    for (query, field) in [("limit=0", "limit"), ("offset=-1", "offset"), ("x=1", "x")] {
        let (status, err) = get(&s, &format!("/api/v1/runs?{query}"));
        assert_eq!(
            (status, err["field"].as_str()),
            (400, Some(field)),
            "{query}"
        );
    }
    let (status, run) = get(&s, &format!("/api/v1/runs/{new}"));
    assert_eq!((status, run["id"].as_str()), (200, Some(new.as_str())));
    let (status, _) = get(&s, "/api/v1/runs/19700101T000000Z-nothing");
    assert_eq!(status, 404);

    // The comparison is warpt-report's, with the store's noise.
    let (status, cmp) = get(&s, &format!("/api/v1/compare?base={old}&current={new}"));
    assert_eq!(status, 200, "{cmp}");
    let noise = warpt_run::StoreNoise::new(
        Store::open(Location::Sqlite(dir.path().join("store.db"))).unwrap(),
        vec![old.clone(), new.clone()],
    );
    let direct = warpt_report::compare(
        &s.runs.0,
        &format!("run {old}"),
        &s.runs.1,
        &format!("run {new}"),
        &warpt_report::Options::default(),
        &noise,
    );
    let direct: Value =
        serde_json::from_str(&warpt_report::render::json(&direct).unwrap()).unwrap();
    assert_eq!(cmp["metrics"], direct["metrics"]);
    // Every figure half as large again; with no noise profile in the
    // store, no verdict is claimed.
    let metrics = cmp["metrics"].as_array().unwrap();
    assert!(!metrics.is_empty());
    assert_eq!(cmp["counts"]["inconclusive"], metrics.len(), "{cmp}");
    for m in metrics {
        let change = m["change_pct"].as_f64().unwrap();
        assert!((change - 50.0).abs() < 1e-6, "{m}");
    }

    let (status, err) = get(&s, &format!("/api/v1/compare?base={old}"));
    assert_eq!((status, err["field"].as_str()), (400, Some("current")));

    // The HTML report under its own policy; the counters on /metrics.
    let (status, headers, html) = call(&s, "GET", &format!("/api/v1/report/{new}"), &[], "");
    assert_eq!(status, 200);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("cpu_flops"));
    let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    let (_, _, metrics) = call(&s, "GET", "/metrics", &[], "");
    assert!(metrics.contains("warpt_runs_stored 2"), "{metrics}");
    assert!(
        metrics.contains("warpt_http_requests_total{route=\"/api/v1/runs\",status=\"400\"} 3"),
        "{metrics}"
    );
    s.queue.stop(std::time::Duration::from_secs(5));
}

#[test]
fn the_guard_refuses_other_hosts_and_sites_and_submissions_need_the_token_and_a_plan() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let (status, _, body) = call(&s, "GET", "/api/v1/health", &[("host", "evil.example")], "");
    assert_eq!(status, 421, "{body}");
    assert!(body.contains("--allow-host evil.example"), "{body}");
    let origin = [("origin", "http://evil.example")];
    let (status, _, body) = call(&s, "GET", "/api/v1/runs", &origin, "");
    assert_eq!(status, 403, "{body}");

    let submit = |token: Option<&str>, body: &str| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("content-type", "application/json")];
        if let Some(a) = &auth {
            headers.push(("authorization", a));
        }
        let (status, _, text) = call(&s, "POST", "/api/v1/runs", &headers, body);
        (status, serde_json::from_str::<Value>(&text).unwrap())
    };
    let ok = r#"{"suite": "selftest", "benchmarks": ["ok"]}"#;
    assert_eq!(submit(None, ok).0, 401);
    assert_eq!(submit(Some("not-the-token"), ok).0, 401);
    let token = Some(s.token.as_str());
    let (status, err) = submit(token, r#"{"suite": "selftest", "colour": "red"}"#);
    assert_eq!(
        (status, err["field"].as_str()),
        (400, Some("colour")),
        "{err}"
    );
    let (status, err) = submit(
        token,
        r#"{"suite": "selftest", "benchmarks": ["work"], "params": {"iterations": 0}}"#,
    );
    assert_eq!(
        (status, err["field"].as_str()),
        (400, Some("params")),
        "{err}"
    );
    assert_eq!(err["parameter"], "iterations", "{err}");
    let (status, err) = submit(token, r#"{"suite": "selftest", "benchmarks": ["nope"]}"#);
    assert_eq!(status, 400, "{err}");
    // Nothing refused was queued.
    let (_, queue) = get(&s, "/api/v1/queue");
    assert_eq!(queue["runs"].as_array().map(Vec::len), Some(0), "{queue}");
    s.queue.stop(std::time::Duration::from_secs(5));
}
