//! `warpt serve` against what a hostile token holder, web page or network
//! peer would try (docs/security.md): each attempt ends as a refusal that
//! names what was refused, and nothing it asked for happens.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Server, cancel, http, post_run, record_runs, start, start_with, warpt};

/// A raw request with the given head lines; the whole answer as text.
fn raw(addr: &str, head: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "{head}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

fn status_of(answer: &str) -> u16 {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"))
}

fn wait_ended(server: &Server, id: &str) -> Value {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, body) = http(
            &server.addr,
            "GET",
            &format!("/api/v1/runs/{id}/status"),
            None,
            "",
        );
        let v: Value = serde_json::from_str(&body).unwrap();
        if !matches!(v["state"].as_str(), Some("queued" | "running")) {
            return v;
        }
        assert!(Instant::now() < until, "run {id} still {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn remote_callers_name_no_command_or_path_the_operator_did_not_allow() {
    let dir = tempfile::tempdir().unwrap();
    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let store = dir.path().join("store.db");
    let server = start_with(
        dir.path(),
        store.as_os_str(),
        &[OsStr::new("--allow-paths"), allowed.as_os_str()],
    );
    let pwned = dir.path().join("pwned");
    let command = format!("touch {}", pwned.display());
    let refused: Vec<(Value, &str)> = vec![
        (
            json!({"suite": "mlperf", "benchmarks": ["mlperf_external"], "params": {"command": command}}),
            "command",
        ),
        (
            json!({"suite": "linpack", "benchmarks": ["linpack_external"], "params": {"binary": "/bin/sh"}}),
            "binary",
        ),
        (
            json!({"suite": "harness", "params": {"file": allowed.join("x.py").to_str().unwrap()}}),
            "file",
        ),
        (
            json!({"benchmarks": ["read_map"], "params": {"sam": dir.path().join("out.sam").to_str().unwrap()}}),
            "sam",
        ),
        (
            json!({"benchmarks": ["read_map"], "params": {"sam": format!("{}/../out.sam", allowed.display())}}),
            "sam",
        ),
        (
            json!({"benchmarks": ["disk_io"], "params": {"path": "/tmp"}}),
            "path",
        ),
        // Any planned benchmark that takes the parameter counts, named or not.
        (
            json!({"suite": "biobench", "params": {"reads": "/etc/passwd"}}),
            "reads",
        ),
    ];
    for (body, parameter) in refused {
        let (status, v) = post_run(&server, &body);
        assert_eq!(status, 403, "{body}: {v}");
        assert_eq!(v["parameter"], parameter, "{v}");
        let message = v["error"].as_str().unwrap();
        assert!(message.contains(&format!("'{parameter}'")), "{message}");
        assert!(
            message.contains("--allow-commands") || message.contains("--allow-paths"),
            "{message}"
        );
    }
    // A path inside the allowed directory is queued (and cancelled here).
    let inside = allowed.join("out.sam");
    let (status, v) = post_run(
        &server,
        &json!({"benchmarks": ["read_map"], "params": {"sam": inside.to_str().unwrap(), "genome_kb": 50}}),
    );
    assert_eq!(status, 202, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    cancel(&server, &id);
    // A NUL byte is a 400 naming the parameter, not a 500.
    let (status, v) = post_run(&server, &json!({"params": {"sam": "a\u{0}b"}}));
    assert_eq!((status, v["field"].as_str()), (400, Some("sam")), "{v}");
    wait_ended(&server, &id);
    assert!(!pwned.exists(), "a refused command ran");
    drop(server);

    // With --allow-commands the operator lets token holders run commands.
    let open_dir = tempfile::tempdir().unwrap();
    let open = start_with(
        open_dir.path(),
        open_dir.path().join("store.db").as_os_str(),
        &[OsStr::new("--allow-commands")],
    );
    let (status, v) = post_run(
        &open,
        &json!({"suite": "mlperf", "benchmarks": ["mlperf_external"], "params": {"command": command},
                "duration": 0.2}),
    );
    assert_eq!(status, 202, "{v}");
    wait_ended(&open, v["id"].as_str().unwrap());
    assert!(pwned.exists(), "the allowed command did not run");
}

#[test]
fn parameter_names_are_checked_exactly_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let pwned = dir.path().join("pwned");
    let command = format!("touch {}", pwned.display());
    // A name that would become `command` once trimmed or split at `=`, a
    // control character, another case, a name nothing declares: each is
    // 400 naming it (the plan compares names exactly), never run.
    for name in [
        " command",
        "command ",
        "command=",
        "command=x;#",
        "command\t",
        "Command",
        "comand",
    ] {
        let body = json!({"suite": "mlperf", "benchmarks": ["mlperf_external"],
                          "params": {name: command}, "duration": 0.1, "monitor": false});
        let (status, v) = post_run(&server, &body);
        assert_eq!(status, 400, "{name:?}: {v}");
        assert_eq!(v["field"], "params", "{name:?}: {v}");
        assert_eq!(v["parameter"], name, "{name:?}: {v}");
    }
    // The same names through another benchmark's secret: refused alike.
    let (status, v) = post_run(
        &server,
        &json!({"suite": "pepbench", "benchmarks": ["llm_serve"], "params": {" api_key_env": "HOME"}}),
    );
    assert_eq!(
        (status, v["parameter"].as_str()),
        (400, Some(" api_key_env")),
        "{v}"
    );
    let (status, v) = post_run(
        &server,
        &json!({"suite": "pepbench", "benchmarks": ["llm_serve"], "params": {"api_key_env": "HOME"}}),
    );
    assert_eq!(
        (status, v["parameter"].as_str()),
        (403, Some("api_key_env")),
        "{v}"
    );
    let (_, queue) = crate::get(&server, "/api/v1/jobs");
    assert_eq!(queue["runs"].as_array().unwrap().len(), 0, "{queue}");
    assert!(!pwned.exists(), "a refused command ran");
}

/// Reads until the server closes `s`; whether it did within `wait`, and
/// what it sent.
fn closed_within(mut s: TcpStream, wait: Duration) -> (bool, String) {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut out = Vec::new();
    let closed = s.read_to_end(&mut out).is_ok();
    (closed, String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn the_operators_key_goes_only_to_the_operators_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = "http://127.0.0.1:9";
    let server = crate::start_env(
        dir.path(),
        &[(
            "WARPT_PARAMS",
            &format!("api_key_env=WARPT_TEST_OPERATOR_KEY,endpoint={theirs}"),
        )],
    );
    let body = |endpoint: &str| {
        json!({"suite": "pepbench", "benchmarks": ["llm_serve"], "params": {"endpoint": endpoint},
               "duration": 0.1, "monitor": false})
    };
    let (status, v) = post_run(&server, &body("http://127.0.0.1:1/v1"));
    assert_eq!(
        (status, v["parameter"].as_str()),
        (403, Some("endpoint")),
        "{v}"
    );
    let message = v["error"].as_str().unwrap();
    assert!(
        message.contains("'api_key_env'") && message.contains(theirs),
        "{message}"
    );
    // The operator's own endpoint, named or not, is the caller's to use.
    for body in [
        body(theirs),
        json!({"suite": "pepbench", "benchmarks": ["llm_serve"]}),
    ] {
        let (status, v) = post_run(&server, &body);
        assert_eq!(status, 202, "{v}");
        cancel(&server, v["id"].as_str().unwrap());
    }
    // And an endpoint that would turn warpt's paths into a query, or carry
    // credentials, is refused by the benchmark itself.
    let open = tempfile::tempdir().unwrap();
    let plain = start(open.path());
    for bad in [
        "http://127.0.0.1:8080/internal?",
        "http://u:p@127.0.0.1:8080",
    ] {
        let (status, v) = post_run(&plain, &body(bad));
        assert_eq!(status, 400, "{bad}: {v}");
        assert!(v["error"].as_str().unwrap().contains("endpoint"), "{v}");
    }
}

#[test]
fn slow_and_many_clients_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // The operator's bounds, short here (the defaults are 30 s, 60 s and
    // 512 connections); a bound of 0 is refused before the server starts.
    let bounds = [
        "--header-timeout",
        "4",
        "--request-timeout",
        "6",
        "--max-connections",
        "16",
    ];
    for bad in bounds.iter().step_by(2) {
        let out = warpt().args(["serve", bad, "0"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad} 0");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(bad), "{bad} 0: {stderr}");
    }
    let bounds = bounds.map(OsStr::new);
    let server = start_with(dir.path(), dir.path().join("store.db").as_os_str(), &bounds);
    let addr = server.addr.clone();
    // Half a request head, then silence: dropped after the 4 s
    // header-read limit.
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(s, "GET /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
    // (Within 20 s: the default 30 would not pass.)
    let half = std::thread::spawn(move || closed_within(s, Duration::from_secs(20)));
    // A whole head promising a body that never comes: answered 503 after
    // the 6 s request limit.
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Length: 100\r\nConnection: close\r\n\r\n{{",
        server.token
    )
    .unwrap();
    let stalled = std::thread::spawn(move || closed_within(s, Duration::from_secs(30)));
    // More connections than the cap: the extra ones are closed unanswered
    // while the server keeps answering once they go.
    std::thread::sleep(Duration::from_millis(500)); // both accepted first
    let held: Vec<TcpStream> = (0..14)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    let extra = TcpStream::connect(&addr).unwrap();
    let (closed, sent) = closed_within(extra, Duration::from_secs(30));
    assert!(closed && sent.is_empty(), "over the cap: {sent:?}");
    drop(held);
    let (closed, answer) = half.join().unwrap();
    assert!(closed && answer.is_empty(), "half a head: {answer:?}");
    let (closed, answer) = stalled.join().unwrap();
    assert!(
        closed && status_of(&answer) == 503,
        "a stalled body: {answer:?}"
    );
    assert!(answer.contains("not answered within 6 s"), "{answer}");
    let (code, _) = crate::get(&server, "/api/v1/runs");
    assert_eq!(code, 200);
}

#[test]
fn browsers_cannot_rebind_frame_or_cross_site() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    record_runs(&store, 1);
    let server = start(dir.path());
    let addr = &server.addr;
    let port = addr.rsplit(':').next().unwrap();

    // DNS rebinding: the page's own name is refused, addresses and
    // localhost are answered.
    let answer = raw(addr, "GET /api/v1/runs HTTP/1.1\r\nHost: evil.example:8321");
    assert_eq!(status_of(&answer), 421, "{answer}");
    assert!(answer.contains("--allow-host"), "{answer}");
    for host in [format!("localhost:{port}"), addr.clone()] {
        let answer = raw(addr, &format!("GET /api/v1/runs HTTP/1.1\r\nHost: {host}"));
        assert_eq!(status_of(&answer), 200, "{host}: {answer}");
    }
    // Another site's page: refused, WebSocket upgrades included.
    let answer = raw(
        addr,
        &format!("GET /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\nOrigin: https://evil.example"),
    );
    assert_eq!(status_of(&answer), 403, "{answer}");
    let upgrade = format!(
        "GET /api/v1/runs/x/events HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Origin: https://evil.example"
    );
    assert_eq!(status_of(&raw(addr, &upgrade)), 403);
    // The server's own origin is fine.
    let answer = raw(
        addr,
        &format!("GET /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}"),
    );
    assert_eq!(status_of(&answer), 200, "{answer}");

    // The HTML report cannot be framed or run script; nothing is sniffed.
    let (_, runs) = crate::get(&server, "/api/v1/runs");
    let id = runs["runs"][0]["id"].as_str().unwrap();
    let answer = raw(
        addr,
        &format!("GET /api/v1/report/{id} HTTP/1.1\r\nHost: {addr}"),
    )
    .to_ascii_lowercase();
    assert_eq!(status_of(&answer), 200);
    assert!(
        answer.contains("x-content-type-options: nosniff"),
        "{answer:.600}"
    );
    assert!(answer.contains("frame-ancestors 'none'"), "{answer:.600}");
    assert!(answer.contains("default-src 'none'"), "{answer:.600}");
    let answer = raw(addr, &format!("GET /api/v1/runs HTTP/1.1\r\nHost: {addr}"));
    assert!(answer.to_ascii_lowercase().contains("nosniff"));

    // WebSocket messages past 64 KiB end the connection.
    let (status, v) = post_run(
        &server,
        &json!({"suite": "micro", "benchmarks": ["cpu_flops"], "params": {"threads": 1},
                "duration": 60, "burnin_seconds": 0}),
    );
    assert_eq!(status, 202, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let (mut ws, _) = tungstenite::connect(format!("ws://{addr}/api/v1/runs/{id}/events")).unwrap();
    let _ = ws.send(tungstenite::Message::Text("x".repeat(100 << 10).into()));
    let until = Instant::now() + Duration::from_secs(30);
    let closed = loop {
        match ws.read() {
            Ok(tungstenite::Message::Close(_)) | Err(_) => break true,
            Ok(_) if Instant::now() < until => continue,
            Ok(_) => break false,
        }
    };
    assert!(closed, "a 100 KiB message was read");
    http(
        addr,
        "DELETE",
        &format!("/api/v1/runs/{id}"),
        Some(&server.token),
        "",
    );
    wait_ended(&server, &id);
}

#[test]
fn network_mode_needs_a_private_long_token_and_can_guard_reads() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    let serve = |mode: u32, text: &str| {
        std::fs::write(&token, text).unwrap();
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(mode)).unwrap();
        warpt()
            .args(["serve", "--bind", "0.0.0.0:0", "--token-file"])
            .arg(&token)
            .arg("--store")
            .arg(dir.path().join("store.db"))
            .output()
            .unwrap()
    };
    let long = "0123456789abcdef".repeat(4);
    let out = serve(0o644, &long);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("chmod 600") && err.contains(token.to_str().unwrap()),
        "{err}"
    );
    let out = serve(0o600, "0123456789abcdef");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("at least 32"), "{err}");

    // --token-for-reads: every route but the dashboard's files needs it.
    let guarded = start_with(
        dir.path(),
        dir.path().join("store.db").as_os_str(),
        &[OsStr::new("--token-for-reads")],
    );
    for path in ["/api/v1/runs", "/api/v1/health", "/metrics"] {
        let (status, _) = http(&guarded.addr, "GET", path, None, "");
        assert_eq!(status, 401, "{path}");
        let (status, _) = http(&guarded.addr, "GET", path, Some(&guarded.token), "");
        assert_eq!(status, 200, "{path}");
    }
    let (status, _) = http(&guarded.addr, "GET", "/", None, "");
    assert_eq!(status, 200);
}

#[test]
fn the_sql_console_is_bounded_in_time_bytes_and_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    record_runs(&store, 1);
    let server = start(dir.path());
    let query = |sql: &str| {
        let (status, body) = http(
            &server.addr,
            "POST",
            "/api/v1/query",
            Some(&server.token),
            &json!({ "sql": sql }).to_string(),
        );
        (status, serde_json::from_str::<Value>(&body).unwrap())
    };
    // One value of 200 MB is refused while it is built.
    let (status, v) = query("SELECT length(hex(randomblob(100000000)))");
    assert_eq!(status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("too big"), "{v}");
    // 40 rows of 5 MB: cut at the byte cap, said to be.
    let (status, v) = query(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 40) \
         SELECT hex(randomblob(2500000)) FROM c",
    );
    assert_eq!(status, 200);
    assert_eq!(v["truncated"], "bytes");
    let rows = v["rows"].as_array().unwrap().len();
    assert!((1..40).contains(&rows), "{rows} rows");
    let peak_kb = peak_rss_kb(server.child.id());
    assert!(peak_kb < 300 * 1024, "the server peaked at {peak_kb} kB");

    // Two statements at once at most: a third waits for neither.
    let endless =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let (addr, token) = (server.addr.clone(), server.token.clone());
            std::thread::spawn(move || {
                http(
                    &addr,
                    "POST",
                    "/api/v1/query",
                    Some(&token),
                    &json!({ "sql": endless }).to_string(),
                )
                .0
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let (status, v) = query("SELECT 1");
    assert_eq!(status, 429, "{v}");
    for t in slow {
        assert_eq!(t.join().unwrap(), 408);
    }
    assert_eq!(query("SELECT 1").0, 200);
}

/// The peak resident set of process `pid` (VmHWM), in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn store_passwords_reach_no_export_store_or_answer() {
    let Some(pg) = warpt_store::testing::TestStore::postgres() else {
        return;
    };
    // The test server trusts every password: this one is only carried.
    let url = pg.arg().into_string().unwrap();
    let secret = "Zq9pa/ss%3Fw";
    let with_password = url.replacen("://warpt@", &format!("://warpt:{secret}@"), 1);
    assert_ne!(url, with_password, "{url}");
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("run.json");
    let out = warpt()
        .args(crate::TINY_RUN)
        .args(["--param", "threads=1"])
        .arg(format!("--store={with_password}"))
        .arg("--export-file")
        .arg(&export)
        .env("WARPT_STORE", &with_password)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let leaked = |text: &str| text.contains("Zq9") || text.contains("pa/ss");
    assert!(!leaked(&stderr), "{stderr}");
    let exported = std::fs::read_to_string(&export).unwrap();
    assert!(!leaked(&exported), "the export holds the password");
    assert!(
        exported.contains("warpt:***@"),
        "the masked URL is recorded"
    );

    let server = start_with(dir.path(), OsStr::new(&with_password), &[]);
    let (_, runs) = crate::get(&server, "/api/v1/runs");
    let id = runs["runs"][0]["id"].as_str().unwrap().to_string();
    for path in [format!("/api/v1/runs/{id}"), "/api/v1/health".to_string()] {
        let (status, body) = http(&server.addr, "GET", &path, None, "");
        assert_eq!(status, 200, "{path}");
        assert!(!leaked(&body), "{path} serves the password");
    }
}
