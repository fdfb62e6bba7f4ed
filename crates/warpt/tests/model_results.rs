//! The `model_results` view on a real ML run: a tiny BERT embedding run
//! recorded, then the dashboard SQL console's first query (taken from its
//! source) through `results query`.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{outcome, warpt};

/// The console's example query, as sql.js holds it.
fn console_example() -> String {
    let js = include_str!("../../warpt-server/assets/views/sql.js");
    let start = js.find("const EXAMPLE = `").unwrap() + "const EXAMPLE = `".len();
    let end = start + js[start..].find('`').unwrap();
    js[start..end].to_string()
}

#[test]
fn an_ml_run_reads_as_model_rows_through_the_consoles_example() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let s = store.to_str().unwrap();
    let (code, _, err) = outcome(
        common::suite_cmd("pepbench", "embed")
            .args("--param model=tiny --param batch=2 --param seq_len=16".split(' '))
            .args(["--duration", "0.2", "--burnin-seconds", "0", "--store", s]),
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = outcome(
        warpt()
            .args(["results", "query", "--json", "--store", s])
            .arg(console_example()),
    );
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert!(!rows.is_empty(), "{out}");
    for r in &rows {
        assert_eq!(r["model"], "tiny", "{r}");
        assert_eq!(r["family"], "bert", "{r}");
        assert_eq!(r["batch"], 2, "{r}");
        assert_eq!(r["sequence_length"], 16, "{r}");
        assert_eq!(r["precision"], "f32", "{r}");
        assert_eq!(r["runs"], 1, "{r}");
    }
    // Every metric of the result is a row, each with its figure.
    let (_, out, _) = outcome(warpt().args([
        "results",
        "query",
        "--json",
        "--store",
        s,
        "SELECT metric, value, parameters FROM model_results",
    ]));
    let all: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert!(
        all.iter().any(|r| r["metric"] == "sentences_per_s"),
        "{out}"
    );
    assert!(
        all.iter()
            .all(|r| r["parameters"].as_i64().unwrap() > 1_000_000),
        "{out}"
    );
}
