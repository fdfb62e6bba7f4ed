//! Every read endpoint, bad input on each, the token, and the read-only
//! SQL console.

use serde_json::Value;

use crate::{get, http, record_runs, start, start_on, succeeded, warpt};

#[test]
fn the_read_api_serves_the_store_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    record_runs(&dir.path().join("store.db"), 2);
    let server = start(dir.path());

    let (status, health) = get(&server, "/api/v1/health");
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    let (_, doc) = get(&server, "/api/v1/openapi.json");
    assert_eq!(doc["openapi"], "3.0.3");
    assert!(doc["paths"]["/api/v1/compare"]["get"].is_object());
    for (path, method) in [
        ("/api/v1/runs", "post"),
        ("/api/v1/runs/{id}", "delete"),
        ("/api/v1/runs/{id}/events", "get"),
        ("/api/v1/runs/{id}/status", "get"),
        ("/api/v1/queue", "get"),
        ("/api/v1/matrix", "get"),
        ("/api/v1/query", "post"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{path} {method}");
    }

    // The matrix: one machine, every workload's best is it.
    let (status, matrix) = get(&server, "/api/v1/matrix?suite=micro");
    assert_eq!(status, 200);
    assert_eq!(matrix["machines"].as_array().unwrap().len(), 1);
    let workloads = matrix["workloads"].as_array().unwrap();
    assert!(!workloads.is_empty());
    assert!(
        workloads
            .iter()
            .all(|w| w["best"] == 0 && w["cells"][0]["runs"] == 2)
    );
    let (status, err) = get(&server, "/api/v1/matrix?suit=micro");
    assert_eq!((status, err["field"].as_str()), (400, Some("suit")));

    let (_, specs) = get(&server, "/api/v1/benchmarks?suite=biobench");
    assert_eq!(specs.as_array().unwrap().len(), 5);
    let (status, err) = get(&server, "/api/v1/benchmarks?suite=nope");
    assert_eq!((status, err["field"].as_str()), (400, Some("suite")));

    // Runs: newest first, paged.
    let (_, all) = get(&server, "/api/v1/runs");
    let runs = all["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let (newest, oldest) = (
        runs[0]["id"].as_str().unwrap().to_string(),
        runs[1]["id"].as_str().unwrap().to_string(),
    );
    let (_, page) = get(&server, "/api/v1/runs?limit=1&offset=1&suite=micro");
    assert_eq!(page["runs"][0]["id"], oldest.as_str());
    let (_, none) = get(&server, "/api/v1/runs?suite=biobench");
    assert!(none["runs"].as_array().unwrap().is_empty());
    // Answers are kept only until the store changes: a run recorded by
    // another process shows up at once.
    let (_, again) = get(&server, "/api/v1/runs");
    assert_eq!(again, all);
    record_runs(&dir.path().join("store.db"), 1);
    let (_, after) = get(&server, "/api/v1/runs");
    assert_eq!(after["runs"].as_array().unwrap().len(), 3);
    assert_eq!(after["runs"][1]["id"], newest.as_str());
    let (_, matrix) = get(&server, "/api/v1/matrix?suite=micro");
    assert!(
        matrix["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["cells"][0]["runs"] == 3)
    );
    for (query, field) in [
        ("limit=x", "limit"),
        ("limit=0", "limit"),
        ("offset=-1", "offset"),
        ("since=yesterday", "since"),
        ("colour=red", "colour"),
    ] {
        let (status, err) = get(&server, &format!("/api/v1/runs?{query}"));
        assert_eq!(status, 400, "{query}");
        assert_eq!(err["field"], field, "{query}: {err}");
    }

    let (status, run) = get(&server, &format!("/api/v1/runs/{newest}"));
    assert_eq!(status, 200);
    assert_eq!(run["id"], newest.as_str());
    let (_, results) = get(&server, &format!("/api/v1/runs/{newest}/results"));
    assert_eq!(results[0]["spec"]["id"]["name"], "cpu_flops");
    let (status, err) = get(&server, "/api/v1/runs/19700101T000000Z-nothing");
    assert_eq!(status, 404, "{err}");
    let (status, _) = get(&server, "/api/v1/runs/x/results");
    assert_eq!(status, 404);
    let (status, _) = get(&server, "/api/v1/no/such/endpoint");
    assert_eq!(status, 404);

    let (_, machines) = get(&server, "/api/v1/machines");
    assert_eq!(machines[0]["runs"], 3);

    // The same verdicts as `benchmark compare --format json`.
    let (status, cmp) = get(
        &server,
        &format!("/api/v1/compare?base={oldest}&current={newest}&threshold=5"),
    );
    assert_eq!(status, 200, "{cmp}");
    let cli = warpt()
        .args(["benchmark", "compare", &oldest, &newest, "--threshold", "5"])
        .args(["--format", "json", "--store"])
        .arg(dir.path().join("store.db"))
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(cmp["counts"], cli["counts"]);
    assert_eq!(cmp["metrics"], cli["metrics"]);
    let (status, err) = get(&server, &format!("/api/v1/compare?base={oldest}"));
    assert_eq!((status, err["field"].as_str()), (400, Some("current")));
    let (status, _) = get(
        &server,
        &format!("/api/v1/compare?base={oldest}&current=nope"),
    );
    assert_eq!(status, 404);
    let (status, err) = get(
        &server,
        &format!("/api/v1/compare?base={oldest}&current={newest}&threshold=-1"),
    );
    assert_eq!((status, err["field"].as_str()), (400, Some("threshold")));

    let (_, series) = get(
        &server,
        "/api/v1/series?benchmark=cpu_flops&metric=gflops&tags=precision=fp64,threads=1",
    );
    let points = series["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "{series}");
    // One line (one machine, one tag set) over the three points; three
    // runs are too few for a change point.
    let lines = series["series"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{series}");
    assert_eq!(lines[0]["points"], serde_json::json!([0, 1, 2]));
    assert_eq!(lines[0]["change_points"], serde_json::json!([]));
    assert_eq!(points[0]["run_id"], oldest.as_str());
    let (status, err) = get(
        &server,
        "/api/v1/series?benchmark=cpu_flops&metric=gflops&tags=oops",
    );
    assert_eq!((status, err["field"].as_str()), (400, Some("tags")));
    let (status, err) = get(&server, "/api/v1/series?metric=gflops");
    assert_eq!((status, err["field"].as_str()), (400, Some("benchmark")));

    let (status, html) = http(
        &server.addr,
        "GET",
        &format!("/api/v1/report/{newest}"),
        None,
        "",
    );
    assert_eq!(status, 200);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("cpu_flops"));

    let (status, text) = http(&server.addr, "GET", "/metrics", None, "");
    assert_eq!(status, 200);
    assert!(text.contains("warpt_runs_stored 3"), "{text}");
    assert!(text.contains("\nwarpt_runs_queued 0\n"), "{text}");
    assert!(text.contains("\nwarpt_runs_running 0\n"), "{text}");
    assert!(
        text.contains("warpt_http_requests_total{route=\"/api/v1/runs\",status=\"400\"} 5"),
        "{text}"
    );
}

#[test]
fn the_sql_console_needs_the_token_reads_only_and_stops_long_queries() {
    let dir = tempfile::tempdir().unwrap();
    record_runs(&dir.path().join("store.db"), 1);
    let server = start(dir.path());
    let post = |token: Option<&str>, body: &str| {
        let (status, body) = http(&server.addr, "POST", "/api/v1/query", token, body);
        (status, serde_json::from_str::<Value>(&body).unwrap())
    };
    let count = r#"{"sql": "SELECT count(*) AS n FROM suite_runs"}"#;
    assert_eq!(post(None, count).0, 401);
    assert_eq!(post(Some("wrong-token-0123456789"), count).0, 401);
    let (status, out) = post(Some(&server.token), count);
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["columns"][0], "n");
    assert_eq!(out["rows"][0][0], 1);

    // Writing is refused, and nothing changed.
    let (status, err) = post(Some(&server.token), r#"{"sql": "DELETE FROM suite_runs"}"#);
    assert_eq!(status, 403, "{err}");
    assert_eq!(post(Some(&server.token), count).1["rows"][0][0], 1);

    let (status, err) = post(Some(&server.token), r#"{"query": "SELECT 1"}"#);
    assert_eq!((status, err["field"].as_str()), (400, Some("sql")));
    let (status, _) = post(Some(&server.token), r#"{"sql": "SELEC 1"}"#);
    assert_eq!(status, 400);

    // Rows past the cap are cut and said to be.
    let many = r#"{"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) SELECT x FROM c"}"#;
    let (status, out) = post(Some(&server.token), many);
    assert_eq!(status, 200);
    assert_eq!(out["rows"].as_array().unwrap().len(), 10_000);
    assert_eq!(out["truncated"], "rows");

    // A query that would never end is stopped at the time cap.
    let endless = r#"{"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}"#;
    let (status, err) = post(Some(&server.token), endless);
    assert_eq!(status, 408, "{err}");
    assert!(err["error"].as_str().unwrap().contains("stopped"));
}

#[test]
fn serving_beyond_loopback_needs_a_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = warpt()
        .args(["serve", "--bind", "0.0.0.0:0", "--store"])
        .arg(dir.path().join("s.db"))
        .env("XDG_CONFIG_HOME", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a loopback address") && err.contains("--token-file"),
        "{err}"
    );

    let out = warpt()
        .args(["serve", "--bind", "nowhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bind 'nowhere'"));
    let out = warpt()
        .args(["serve", "--bind", "127.0.0.1:0", "--token-file"])
        .arg(dir.path().join("missing"))
        .arg("--store")
        .arg(dir.path().join("s.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
}

#[test]
fn a_postgresql_store_is_served_and_the_server_stops_cleanly() {
    let Some(pg) = warpt_store::testing::TestStore::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = pg.arg();
    succeeded(
        warpt()
            .args(["results", "import"])
            .arg(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../warpt-model/tests/data/example_export.json"),
            )
            .env("WARPT_STORE", &url),
    );
    let mut server = start_on(dir.path(), &url);
    let (status, runs) = get(&server, "/api/v1/runs");
    assert_eq!(status, 200, "{runs}");
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    let id = runs["runs"][0]["id"].as_str().unwrap().to_string();
    let (status, run) = get(&server, &format!("/api/v1/runs/{id}"));
    assert_eq!((status, run["id"].as_str()), (200, Some(id.as_str())));
    let (status, _) = get(&server, "/api/v1/matrix");
    assert_eq!(status, 200);
    let token = Some(server.token.as_str());
    let (status, body) = http(
        &server.addr,
        "POST",
        "/api/v1/query",
        token,
        r#"{"sql": "SELECT count(*) AS n FROM suite_runs"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["rows"][0][0], 1);
    let (status, body) = http(
        &server.addr,
        "POST",
        "/api/v1/query",
        token,
        r#"{"sql": "DELETE FROM suite_runs"}"#,
    );
    assert_eq!(status, 403, "{body}");
    // SIGTERM: a clean exit, the pooled PostgreSQL connections closed
    // after the runtime (closing one inside it panicked).
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let exit = server.child.wait().unwrap();
    let stderr = server.stderr.recv().unwrap();
    assert!(exit.success(), "{exit:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
