//! `warpt demo --store PATH`: this machine's real tiny runs and two
//! made-up machines derived from them land in a new store, the regression
//! step is where the trend finds it, derived runs say what they are, and an
//! existing store is refused untouched.

mod common;

use common::{json_of, outcome, stderr_of, warpt};
use serde_json::Value;

/// `results trend --json` of STREAM triad on two threads on `machine`,
/// which exits 1 when the latest run sits after a regression (else 0).
fn triad_trend(store: &std::path::Path, machine: &str, code: i32) -> Value {
    let (status, out, err) = outcome(
        warpt()
            .args(["results", "trend", "--benchmark", "mem_bandwidth"])
            .args(["--metric", "bandwidth", "--machine", machine])
            .args(["--tags", "kernel=triad", "--tags", "threads=2", "--json"])
            .arg("--store")
            .arg(store),
    );
    assert_eq!(status, code, "{machine}: {err}");
    serde_json::from_str(&out).expect("trend --json prints JSON")
}

#[test]
fn demo_fills_a_new_store_with_machines_a_regression_and_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("sub").join("demo.db");
    let filled = json_of(warpt().args(["demo", "--json", "--store"]).arg(&store));
    // No temporary file left beside it.
    let left: Vec<_> = std::fs::read_dir(store.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("demo.db")]);

    // Four runs measured here (micro with its sweeps, biobench, mlperf, the
    // serving sweep), every result passed.
    assert_eq!(filled["measured"].as_array().unwrap().len(), 4, "{filled}");
    assert_eq!(filled["not_passed"], serde_json::json!([]), "{filled}");
    // Two made-up machines: 11 and 14 days of the three derived seeds.
    assert_eq!(filled["derived"], 75, "{filled}");
    let machines: Vec<&str> = filled["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(machines.len(), 3);
    assert_eq!(&machines[1..], ["demo-big", "demo-small"]);
    assert!(!machines[0].starts_with("demo-"), "{machines:?}");

    // The history lists every run, the measured ones as runs of this
    // machine, the derived ones as imports.
    let runs = json_of(
        warpt()
            .args(["results", "list", "--json", "--limit", "1000", "--store"])
            .arg(&store),
    );
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 79);
    let imported = runs.iter().filter(|r| r["source"] == "import").count();
    assert_eq!(imported, 75);

    // The regression step: the ninth of demo-small's 14 runs, about -22%.
    let small = triad_trend(&store, "demo-small", 1);
    assert_eq!(small["points"].as_array().unwrap().len(), 14);
    let steps = small["change_points"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{small}");
    assert_eq!(steps[0]["index"], 8);
    assert_eq!(steps[0]["direction"], "regressed");
    let pct = steps[0]["change_pct"].as_f64().unwrap();
    assert!((-26.0..-18.0).contains(&pct), "{pct}");
    // demo-big: 11 runs with a gap and no step; 2.6x this machine's
    // bandwidth.
    let big = triad_trend(&store, "demo-big", 0);
    assert_eq!(big["points"].as_array().unwrap().len(), 11);
    assert_eq!(big["change_points"], serde_json::json!([]), "{big}");
    let here = triad_trend(&store, machines[0], 0);
    let value = |t: &Value, i: usize| t["points"][i]["value"].as_f64().unwrap();
    let ratio = value(&big, 0) / value(&here, 0);
    assert!((2.6 * 0.97..2.6 * 1.03).contains(&ratio), "{ratio}");
    let days =
        |t: &Value, i: usize| t["points"][i]["start_time"].as_str().unwrap()[..10].to_string();
    assert_ne!(days(&big, 4), days(&big, 5));

    // A derived run says what it is; the sweeps are in the measured runs.
    let derived_id = small["points"][0]["run_id"].as_str().unwrap();
    let run = json_of(
        warpt()
            .args(["results", "show", derived_id, "--json", "--store"])
            .arg(&store),
    );
    let note = run["metadata"]["demo"].as_str().unwrap();
    assert!(note.starts_with("derived from run "), "{note}");
    assert_eq!(run["system"]["os"]["hostname"], "demo-small");
    let micro = json_of(
        warpt()
            .args(["results", "show", filled["measured"][0].as_str().unwrap()])
            .args(["--json", "--store"])
            .arg(&store),
    );
    let threads: Vec<String> = micro["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["spec"]["id"]["name"] == "cpu_flops")
        .map(|b| b["params"]["threads"].to_string())
        .collect();
    assert_eq!(threads, ["1", "2"]);

    // Each made-up machine has a noise profile (its runs before any step
    // as A/A trials); this machine has none.
    let profiles = json_of(
        warpt()
            .args(["results", "query", "--json"])
            .arg(
                "SELECT m.hostname, count(*) AS n FROM noise_profiles p \
                 JOIN machines m ON m.id = p.machine_id GROUP BY m.hostname ORDER BY m.hostname",
            )
            .arg("--store")
            .arg(&store),
    );
    let hosts = common::texts(&profiles, "hostname");
    assert_eq!(hosts, ["demo-big", "demo-small"], "{profiles}");

    // A store that exists is refused, named, and left as it was.
    let before = std::fs::read(&store).unwrap();
    let err = stderr_of(
        warpt()
            .args(["demo", "--no-serving", "--store"])
            .arg(&store),
        2,
    );
    assert!(err.contains("demo.db") && err.contains("already"), "{err}");
    assert_eq!(std::fs::read(&store).unwrap(), before);
}
