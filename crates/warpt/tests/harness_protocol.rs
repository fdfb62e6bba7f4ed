//! Benchmarks in another language under `warpt harness run`: the C++
//! example tree (`examples/protocol`, its header and its bench.yaml
//! `command:`) built with g++ and run as pairs like Python's, and a C++
//! benchmark that prints, throws and fails its validation.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use serde_json::Value;

mod common;
use common::{repo_root, warpt};

fn have_gxx() -> bool {
    std::process::Command::new("g++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `warpt harness run DIR` with the compiled binaries cached under `cache`:
/// (exit code, summary.json, stderr).
fn run(dir: &Path, out: &Path, cache: &Path) -> (i32, Value, String) {
    let o = warpt()
        .args(["harness", "run"])
        .arg(dir)
        .arg("--output-dir")
        .arg(out)
        .args("--no-store --duration 0.2 --burnin-seconds 0.05 --rounds 2".split(' '))
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    let summary = std::fs::read_to_string(out.join("summary.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (
        o.status.code().unwrap_or(-1),
        summary,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn entry<'a>(s: &'a Value, id: &str) -> &'a Value {
    common::find_in(&s["benchmarks"], "id", id)
}

#[test]
fn the_cpp_example_tree_runs_as_pairs_through_its_command() {
    if !have_gxx() {
        eprintln!("not run here: no g++ (scripts/test installs it)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let tree = repo_root().join("examples/protocol/tree");
    let discovered = warpt()
        .args(["harness", "discover", "--json"])
        .arg(&tree)
        .output()
        .unwrap();
    let manifest: Value = serde_json::from_slice(&discovered.stdout).unwrap();
    let pair = &manifest["chapters"][0]["pairs"][0];
    assert!(
        pair["baseline"]
            .as_str()
            .unwrap()
            .ends_with("baseline_saxpy.cpp"),
        "{manifest:#}"
    );
    let (code, s, stderr) = run(&tree, &t.path().join("out"), t.path());
    assert_eq!(code, 0, "{stderr}");
    let base = entry(&s, "saxpy/saxpy/baseline_saxpy");
    let opt = entry(&s, "saxpy/saxpy/optimized_saxpy");
    for e in [base, opt] {
        assert_eq!(e["status"], "passed", "{e:#}");
        assert_eq!(e["timing"], "host", "{e:#}");
        assert!(e["latency_ms"]["p50"].as_f64().unwrap() > 0.0, "{e:#}");
    }
    // The outputs were written by the header and compared.
    assert!(
        opt["accuracy"]["relative_error"].as_f64().unwrap() <= 1e-12,
        "{opt:#}"
    );
    assert!(opt["speedup"].as_f64().unwrap() > 0.0, "{opt:#}");
}

/// A C++ pair built on the header: the baseline reads stdin in `setup()`;
/// the variant prints to stdout in `setup()`, then throws from its third
/// call on; a second variant computes a wrong answer that its `validate()`
/// catches.
const BASE: &str = r#"#include <iostream>
#include <stdexcept>
#include <iterator>
#include <string>
#include "warpt_protocol.hpp"
struct B : warpt::Benchmark {
    double v = 0;
    // Reads stdin to its end: were it the protocol's, the requests would
    // be gone (or this would wait for them forever).
    void setup() override {
        std::string all{std::istreambuf_iterator<char>(std::cin), {}};
        if (!all.empty()) throw std::runtime_error("read a request from stdin");
    }
    void call() override { v = 42; }
    std::vector<double> output() override { return {v}; }
};
int main() { B b; return warpt::serve(b); }
"#;

const THROWS: &str = r#"#include <cstdio>
#include <stdexcept>
#include "warpt_protocol.hpp"
struct B : warpt::Benchmark {
    int calls = 0;
    void setup() override { std::printf("chatter on stdout\n"); std::fflush(stdout); }
    void call() override {
        if (++calls > 2) throw std::runtime_error("ran out of buffers");
    }
};
int main() { B b; return warpt::serve(b); }
"#;

const WRONG: &str = r#"#include "warpt_protocol.hpp"
struct B : warpt::Benchmark {
    double v = 0;
    void call() override { v = 41; }
    std::string validate() override { return v == 42 ? "" : "v is " + std::to_string(v); }
    std::vector<double> output() override { return {v}; }
};
int main() { B b; return warpt::serve(b); }
"#;

#[test]
fn a_cpp_benchmark_that_throws_or_is_wrong_fails_with_its_reason() {
    if !have_gxx() {
        eprintln!("not run here: no g++ (scripts/test installs it)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let ch = t.path().join("tree/cpp");
    std::fs::create_dir_all(&ch).unwrap();
    let header = repo_root().join("examples/protocol/cpp");
    std::fs::write(
        ch.join("bench.yaml"),
        format!(
            "command: \"sh '{}/run.sh' {{file}}\"\nextensions: [cpp]\n",
            header.display()
        ),
    )
    .unwrap();
    std::fs::write(ch.join("baseline_k.cpp"), BASE).unwrap();
    std::fs::write(ch.join("optimized_k.cpp"), THROWS).unwrap();
    std::fs::write(ch.join("optimized_k_wrong.cpp"), WRONG).unwrap();
    let (code, s, stderr) = run(&t.path().join("tree"), &t.path().join("out"), t.path());
    assert_eq!(code, 1, "failures exit 1: {stderr}");
    let throws = entry(&s, "cpp/k/optimized_k");
    assert_eq!(throws["status"], "failed", "{throws:#}");
    // Its setup() printed to stdout and the run still reached the calls:
    // the header kept the chatter off the protocol's channel.
    let err = &throws["errors"][0];
    assert_eq!(err["stage"], "measure", "{throws:#}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("ran out of buffers"),
        "{throws:#}"
    );
    let wrong = entry(&s, "cpp/k/optimized_k_wrong");
    assert_eq!(wrong["status"], "failed", "{wrong:#}");
    assert!(
        wrong["error"].as_str().unwrap().contains("v is 41"),
        "{wrong:#}"
    );
    assert_eq!(entry(&s, "cpp/k/baseline_k")["status"], "passed");
}
