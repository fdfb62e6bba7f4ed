//! `warpt serve` against a real server on an ephemeral port and a real
//! SQLite store filled by real (tiny) runs (one test on PostgreSQL).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod dashboard;
mod hardening;
mod read;
mod runs;
mod tour;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub(crate) use common::succeeded;

pub(crate) fn warpt() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("warpt"));
    cmd.env("WARPT_NO_PROGRESS", "1");
    cmd
}

/// A running `warpt serve`, killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: String,
    pub(crate) token: String,
    /// What it printed on stderr after its first line, once it exited.
    pub(crate) stderr: std::sync::mpsc::Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start(dir: &Path) -> Server {
    start_on(dir, dir.join("store.db").as_os_str())
}

/// `warpt serve` over `store` (a path or a `postgres://` URL), its token
/// file in `dir`.
pub(crate) fn start_on(dir: &Path, store: &std::ffi::OsStr) -> Server {
    start_with(dir, store, &[])
}

/// [`start_on`] with more `warpt serve` flags.
pub(crate) fn start_with(
    dir: &Path,
    store: &std::ffi::OsStr,
    extra: &[&std::ffi::OsStr],
) -> Server {
    start_full(dir, store, extra, &[])
}

/// [`start`] with more environment variables.
pub(crate) fn start_env(dir: &Path, env: &[(&str, &str)]) -> Server {
    start_full(dir, dir.join("store.db").as_os_str(), &[], env)
}

fn start_full(
    dir: &Path,
    store: &std::ffi::OsStr,
    extra: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
) -> Server {
    let token_file = dir.join("token");
    let token = "test-token-0123456789abcdef";
    std::fs::write(&token_file, token).unwrap();
    let mut child = warpt()
        .args(["serve", "--bind", "127.0.0.1:0", "--store"])
        .arg(store)
        .arg("--token-file")
        .arg(&token_file)
        .args(extra)
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first line names the address; the rest is drained so the
    // server never writes into a closed pipe.
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let (tx, stderr) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        let _ = tx.send(rest);
    });
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Server {
        child,
        addr,
        token: token.into(),
        stderr,
    }
}

/// `DELETE /api/v1/runs/{id}` with the token: the status code.
pub(crate) fn cancel(server: &Server, id: &str) -> u16 {
    http(
        &server.addr,
        "DELETE",
        &format!("/api/v1/runs/{id}"),
        Some(&server.token),
        "",
    )
    .0
}

/// One HTTP/1.1 request; the status and the body.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    // Bodies may come chunked: join the chunks.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = rest;
        loop {
            let (size, after) = rest.split_once("\r\n").unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        rest.to_string()
    };
    (status, body)
}

/// `POST /api/v1/runs` with the server's token: the status and the JSON.
pub(crate) fn post_run(server: &Server, body: &Value) -> (u16, Value) {
    let (status, text) = http(
        &server.addr,
        "POST",
        "/api/v1/runs",
        Some(&server.token),
        &body.to_string(),
    );
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")),
    )
}

pub(crate) fn get(server: &Server, path: &str) -> (u16, Value) {
    let (status, body) = http(&server.addr, "GET", path, None, "");
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}")),
    )
}

/// A real run of a fraction of a second: `benchmark run` of cpu_flops.
pub(crate) const TINY_RUN: [&str; 10] = [
    "benchmark",
    "run",
    "--suite",
    "micro",
    "--benchmark",
    "cpu_flops",
    "--duration",
    "0.1",
    "--burnin-seconds",
    "0",
];

pub(crate) fn record_runs(store: &Path, n: usize) {
    for _ in 0..n {
        succeeded(warpt().args(TINY_RUN).arg("--store").arg(store));
    }
}
