//! Benchmarks declared as `[[benchmarks]]` (warpt-bench.toml and
//! warpt.toml), run as the `user` suite by real workers: a parameter
//! matrix, a regex and a JSON pointer turning output into metrics,
//! tolerances against a reference file, skip conditions, set-up and
//! tear-down, stage timeouts; and every bad declaration named by benchmark
//! and key before anything runs.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{dir_with, metric_of as metric};

fn warpt(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .current_dir(dir)
        .env("WARPT_NO_PROGRESS", "1")
        .env("WARPT_STORE", dir.join("store.db"))
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `benchmark run --suite user --json` with short stages.
fn run_user(dir: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "benchmark",
        "run",
        "--suite",
        "user",
        "--json",
        "--burnin-seconds",
        "0.05",
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = warpt(dir, &args);
    let run = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (code, run, stderr)
}

fn result<'a>(run: &'a Value, name: &str, nth: usize) -> &'a Value {
    run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["spec"]["id"]["name"] == name)
        .nth(nth)
        .unwrap_or_else(|| panic!("no result {nth} of {name} in {run}"))
}

#[test]
fn declared_benchmarks_sweep_their_matrix_parse_output_and_check_tolerances() {
    let dir = dir_with(
        "warpt-bench.toml",
        r#"
[[benchmarks]]
name = "lines"
setup = "seq {n} > input-{n}.txt"
command = "wc -l < input-{n}.txt"
teardown = "rm input-{n}.txt"
params = { n = [200, 3000] }
parse = { regex = '^\s*(?P<count>\d+)$' }
metrics.count = { unit = "lines", direction = "higher" }
duration = 0.3

[[benchmarks]]
name = "stats"
command = "printf '{\"sum\": %s, \"n\": \"4\"}\n' $((1+2+3+4)); echo 'total 10.00001' > out.txt"
parse = { json = { sum = "/sum", n = "/n" } }
metrics.sum = { unit = "count", direction = "higher" }
metrics.n = { unit = "count", direction = "higher" }
tolerances = { reference = "expected.txt", output = "out.txt", rel = 1e-4 }
duration = 0.3

[[benchmarks]]
name = "not-here"
command = "true"
skip_if = { missing = "no-such-tool-anywhere" }
"#,
    );
    let d = dir.path();
    std::fs::write(d.join("expected.txt"), "total 10.0\n").unwrap();
    // A second declaration, in warpt.toml beside ordinary configuration.
    std::fs::write(
        d.join("warpt.toml"),
        "seed = 9\n\n[[benchmarks]]\nname = \"from-config\"\ncommand = \"sleep 0.002\"\nduration = 0.3\n",
    )
    .unwrap();

    let (code, run, stderr) = run_user(d, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(run["suite"], "user");
    // The matrix: one result per value of n, tagged with it, each parsing
    // its own count from the command's output.
    for (i, n) in [200.0, 3000.0].into_iter().enumerate() {
        let r = result(&run, "lines", i);
        assert_eq!(r["status"], "passed", "{r}");
        let count = metric(r, "count");
        assert_eq!(count["value"], n, "{count}");
        assert_eq!(count["tags"]["n"], n.to_string(), "{count}");
        assert_eq!(count["unit"], "lines");
        let wall = metric(r, "wall_time_s");
        assert!(wall["value"].as_f64().unwrap() > 0.0);
        assert!(wall["stats"]["n"].as_u64().unwrap() >= 10, "{wall}");
        assert!(metric(r, "peak_rss_bytes")["value"].as_f64().unwrap() > 1e5);
        assert!(
            r["validation"]["message"]
                .as_str()
                .unwrap()
                .contains("exited 0")
        );
    }
    // Set-up ran before and tear-down after each point of the matrix.
    assert!(!d.join("input-200.txt").exists() && !d.join("input-3000.txt").exists());

    let stats = result(&run, "stats", 0);
    assert_eq!(stats["status"], "passed", "{stats}");
    assert_eq!(metric(stats, "sum")["value"], 10.0);
    assert_eq!(metric(stats, "n")["value"], 4.0);
    assert_eq!(stats["validation"]["passed"], true, "{stats}");
    assert!(
        stats["validation"]["message"]
            .as_str()
            .unwrap()
            .contains("1 numbers")
    );

    let skipped = result(&run, "not-here", 0);
    assert_eq!(skipped["status"], "skipped");
    assert!(
        skipped["error_message"]
            .as_str()
            .unwrap()
            .contains("no-such-tool-anywhere")
    );

    let from_config = result(&run, "from-config", 0);
    assert_eq!(from_config["status"], "passed");
    let wall = metric(from_config, "wall_time_s")["value"]
        .as_f64()
        .unwrap();
    assert!(wall >= 0.002, "sleep 0.002 measured as {wall} s");

    // --benchmark picks one declared benchmark; the run is in the store.
    let (code, run, stderr) = run_user(d, &["--benchmark", "stats"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(run["benchmarks"].as_array().unwrap().len(), 1);
    let (code, listed, _) = warpt(d, &["results", "list", "--suite", "user", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<Value>(&listed)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2,
        "{listed}"
    );

    // A tolerance the output misses fails validation, naming the line.
    std::fs::write(d.join("expected.txt"), "total 11.0\n").unwrap();
    let (code, run, _) = run_user(d, &["--benchmark", "stats"]);
    assert_ne!(code, 0);
    let v = &result(&run, "stats", 0)["validation"];
    assert_eq!(v["passed"], false);
    assert!(v["message"].as_str().unwrap().contains("line 1"), "{v}");
}

#[test]
fn failures_at_run_time_name_the_key_and_tear_down_still_runs() {
    let dir = dir_with(
        "warpt-bench.toml",
        r#"
[[benchmarks]]
name = "no-number"
command = "echo hello"
teardown = "touch torn-down"
parse = { regex = 'rate (?P<rate>\d+)' }
metrics.rate = { unit = "op/s", direction = "higher" }
duration = 0.2

[[benchmarks]]
name = "exits-3"
command = "echo oops >&2; exit 3"
duration = 0.2

[[benchmarks]]
name = "bad-setup"
setup = "exit 4"
command = "true"

[[benchmarks]]
name = "hangs"
command = "sleep 41.7"
"#,
    );
    let d = dir.path();
    let (code, run, stderr) = run_user(d, &["--timeout-multiplier", "0.02"]);
    assert_ne!(code, 0, "{stderr}");
    let r = result(&run, "no-number", 0);
    assert_eq!(r["status"], "failed");
    let msg = r["error_message"].as_str().unwrap();
    assert!(
        msg.contains("parse.regex") && msg.contains("hello"),
        "{msg}"
    );
    assert!(
        d.join("torn-down").exists(),
        "teardown after a failed measurement"
    );

    let r = result(&run, "exits-3", 0);
    assert_eq!(r["status"], "failed");
    let msg = r["error_message"].as_str().unwrap();
    assert!(
        msg.contains("exit status 3") && msg.contains("oops"),
        "{msg}"
    );

    let r = result(&run, "bad-setup", 0);
    assert_eq!(r["status"], "failed");
    assert!(
        r["error_message"].as_str().unwrap().contains("key 'setup'"),
        "{r}"
    );

    // The stage limit stops the hung command with its worker.
    let r = result(&run, "hangs", 0);
    assert_eq!(r["status"], "timeout", "{r}");
    let left = Command::new("pgrep")
        .args(["-f", "sleep 41.7"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "the hung command outlived its worker"
    );
}

#[test]
fn bad_declarations_are_usage_errors_naming_the_benchmark_and_the_key() {
    let cases: [(&str, &[&str]); 7] = [
        (
            "name = \"a\"\ncomand = \"true\"",
            &["benchmark 'a'", "comand"],
        ),
        (
            "name = \"b\"\ncommand = \"true\"\nparse = { regex = 'x(?P<v>[0-9' }",
            &["benchmark 'b'", "parse.regex", "does not compile"],
        ),
        (
            "name = \"c\"\ncommand = \"true\"\nparse = { regex = '(?P<v>\\d+)' }",
            &["benchmark 'c'", "metrics.v"],
        ),
        (
            "name = \"d\"\ncommand = \"true\"\nparse = { regex = '(?P<v>\\d+)' }\nmetrics.v = { unit = \"x\", direction = \"up\" }",
            &["benchmark 'd'", "metrics.v.direction"],
        ),
        (
            "name = \"e\"\ncommand = \"true\"\nparse = { json = { v = \"v\" } }\nmetrics.v = { unit = \"x\", direction = \"lower\" }",
            &["benchmark 'e'", "parse.json.v", "JSON pointer"],
        ),
        (
            "name = \"f\"\ncommand = \"true\"\nparams = { n = [1, \"two\"] }",
            &["benchmark 'f'", "params.n"],
        ),
        (
            "name = \"g\"\ncommand = \"true\"\nskip_if = { when = \"x\" }",
            &["benchmark 'g'", "skip_if.when"],
        ),
    ];
    for (table, wanted) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("warpt-bench.toml"),
            format!("[[benchmarks]]\n{table}\n"),
        )
        .unwrap();
        let (code, _, stderr) = warpt(dir.path(), &["benchmark", "run", "--suite", "user"]);
        assert_eq!(code, 2, "{table}: {stderr}");
        for w in wanted {
            assert!(stderr.contains(w), "{table}: '{w}' not in {stderr}");
        }
    }
    // The same name in warpt.toml and warpt-bench.toml.
    let dir = tempfile::tempdir().unwrap();
    let twice = "[[benchmarks]]\nname = \"same\"\ncommand = \"true\"\n";
    std::fs::write(dir.path().join("warpt-bench.toml"), twice).unwrap();
    std::fs::write(dir.path().join("warpt.toml"), twice).unwrap();
    let (code, _, stderr) = warpt(dir.path(), &["benchmark", "list", "--suite", "user"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("'same' is also declared"), "{stderr}");
}
