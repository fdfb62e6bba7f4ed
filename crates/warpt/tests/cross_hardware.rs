//! Cross-hardware answers on imported runs of several machines: a real
//! export (crates/warpt-model/tests/data/example_export.json, a micro
//! suite run on the project's VM) rewritten per machine (host name, CPU,
//! every figure and sample scaled, a planted power draw), imported, then
//! `report --by machine` and `fleet outliers` asked about them.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use serde_json::Value;

mod common;
use common::run_on as warpt;

/// The statistics of a metric that scale with its value.
const STATS: &str = "mean median std min max p25 p50 p75 p90 p95 p99 ci95_low ci95_high";

fn example() -> Value {
    serde_json::from_str(include_str!(
        "../../warpt-model/tests/data/example_export.json"
    ))
    .unwrap()
}

/// The example as run `k` of machine `host`: every figure `speed` times
/// better (latencies divided), CPU `cpu`, mean power `watts`.
fn machine_run(host: &str, cpu: &str, k: usize, speed: f64, watts: Option<f64>) -> Value {
    machine_copy(example(), host, cpu, k, speed, watts)
}

/// `run` as run `k` of machine `host` (see [`machine_run`]).
fn machine_copy(
    mut run: Value,
    host: &str,
    cpu: &str,
    k: usize,
    speed: f64,
    watts: Option<f64>,
) -> Value {
    run["id"] = format!("{host}-run-{k}").into();
    run["system"]["os"]["hostname"] = host.into();
    run["system"]["cpu"]["model"] = cpu.into();
    run["manifest"]["hostname"] = host.into();
    for b in run["benchmarks"].as_array_mut().unwrap() {
        if let Some(w) = watts {
            b["telemetry"] =
                serde_json::json!({"samples": 10, "mean_power_w": w, "throttled": false});
        }
        for m in b["metrics"].as_array_mut().unwrap() {
            let f = if m["higher_is_better"] == true {
                speed
            } else {
                1.0 / speed
            };
            let scale = |v: &mut Value| {
                if let Some(x) = v.as_f64() {
                    *v = (x * f).into();
                }
            };
            scale(&mut m["value"]);
            if m["stats"].is_object() {
                for key in STATS.split(' ') {
                    scale(&mut m["stats"][key]);
                }
                for s in m["stats"]["samples"].as_array_mut().unwrap() {
                    scale(s);
                }
            }
        }
    }
    run
}

fn import(store: &Path, dir: &Path, runs: &[Value]) {
    let mut args = vec!["results".to_string(), "import".to_string()];
    for r in runs {
        let file = dir.join(format!("{}.json", r["id"].as_str().unwrap()));
        std::fs::write(&file, serde_json::to_vec(r).unwrap()).unwrap();
        args.push(file.to_str().unwrap().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = warpt(store, &args);
    assert_eq!(code, 0, "{err}");
}

/// Run-to-run jitter: three runs at 0.99, 1.0 and 1.01 of a machine's speed.
const JITTER: [f64; 3] = [0.99, 1.0, 1.01];

/// `warpt report --by machine --format FORMAT -o OUT` on `store`.
fn by_machine(
    store: &std::path::Path,
    format: &str,
    out: &std::path::Path,
) -> (i32, String, String) {
    warpt(
        store,
        &[
            "report",
            "--by",
            "machine",
            "--format",
            format,
            "-o",
            out.to_str().unwrap(),
        ],
    )
}

#[test]
fn the_matrix_picks_the_right_winner_and_says_when_a_margin_is_not_significant() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let mut runs = Vec::new();
    for (k, j) in JITTER.iter().enumerate() {
        // big: 30% faster, 200 W, 4.0/h; small: 100 W, 1.0/h; twin:
        // small's hardware within 0.3%, well inside the runs' ±1%.
        runs.push(machine_run("big", "Big CPU", k, 1.30 * j, Some(200.0)));
        runs.push(machine_run("small", "Small CPU", k, *j, Some(100.0)));
        runs.push(machine_run("twin", "Small CPU", k, 1.003 * j, Some(100.0)));
    }
    import(&store, dir.path(), &runs);
    let prices = dir.path().join("machines.toml");
    std::fs::write(
        &prices,
        "[machines.big]\ncost_per_hour = 4.0\n[machines.small]\ncost_per_hour = 1.0\n\
         [machines.twin]\ncost_per_hour = 1.0\n",
    )
    .unwrap();
    let (code, out, err) = warpt(
        &store,
        &[
            "report",
            "--by",
            "machine",
            "--format",
            "json",
            "--machines-file",
            prices.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["machines"].as_array().unwrap().len(), 3);
    let rec = |workload: &str| -> Value {
        common::find_in(&report["recommendations"], "workload", workload).clone()
    };
    let pick = |r: &Value, criterion: &str| -> Value {
        r["picks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["criterion"] == criterion)
            .unwrap_or_else(|| panic!("no {criterion} in {r}"))
            .clone()
    };
    let triad = rec("micro/mem_bandwidth bandwidth kernel=triad");
    let t = pick(&triad, "throughput");
    assert_eq!(t["winner"], "big");
    assert_eq!(t["basis"], "runs");
    assert_eq!(t["significant"], true, "{t}");
    assert!((t["margin"].as_f64().unwrap() - 0.296).abs() < 0.01, "{t}");
    // Per watt and per unit of price the small machines win; which of the
    // two is within noise, and the report says so.
    for criterion in ["per_watt", "per_cost"] {
        let p = pick(&triad, criterion);
        let winner = p["winner"].as_str().unwrap();
        assert!(winner == "small" || winner == "twin", "{p}");
        assert_eq!(p["significant"], false, "{p}");
    }
    // Lower is better for latency: big (latencies divided by 1.3) wins.
    let lat = rec("micro/mem_latency latency size_kib=16");
    assert_eq!(pick(&lat, "throughput")["winner"], "big");
    assert_eq!(
        lat["picks"].as_array().unwrap().len(),
        1,
        "no per-watt latency"
    );
    // The swept size makes scaling lines, one per machine.
    let scaling = report["scaling"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["axis"] == "size_kib")
        .unwrap();
    assert_eq!(scaling["lines"].as_array().unwrap().len(), 3);

    // Selections: one machine, and the HTML with its charts.
    let (code, out, _) = warpt(
        &store,
        &[
            "report",
            "--by",
            "machine",
            "--machine",
            "big",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0);
    let one: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(one["machines"].as_array().unwrap().len(), 1);
    assert!(one["recommendations"].as_array().unwrap().is_empty());
    let html = dir.path().join("by-machine.html");
    let (code, _, err) = by_machine(&store, "html", &html);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.matches("<svg").count() > 10 && html.contains("big"));
    // Bad input: no runs selected, a price that is not one, an unknown key.
    let (code, _, err) = warpt(&store, &["report", "--by", "machine", "--machine", "nope"]);
    assert_eq!(code, 2, "{err}");
    std::fs::write(&prices, "[machines.big]\ncost_per_hour = -1\n").unwrap();
    let args = [
        "report",
        "--by",
        "machine",
        "--machines-file",
        prices.to_str().unwrap(),
    ];
    assert_eq!(warpt(&store, &args).0, 2);
    std::fs::write(&prices, "[machines.big]\ncost = 1\n").unwrap();
    assert_eq!(warpt(&store, &args).0, 2);
}

#[test]
fn the_best_machine_is_named_per_model_family() {
    // A real pepbench sweep over two families (their tiny presets; a
    // swept `model` would tag the size alike), then as three runs each of
    // two machines, one twice as fast.
    let out = common::stdout_of(
        common::suite_cmd("pepbench", "llm_infer")
            .args(["--param", "family=llama,gpt2", "--param", "model=tiny"])
            .args(["--param", "prompt_tokens=8", "--param", "gen_tokens=3"])
            .args("--duration 0.3 --burnin-seconds 0 --no-store --json".split(' ')),
    );
    let base: Value = serde_json::from_slice(&out).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let mut runs = Vec::new();
    for (k, j) in JITTER.iter().enumerate() {
        runs.push(machine_copy(
            base.clone(),
            "fast",
            "Fast CPU",
            k,
            2.0 * j,
            None,
        ));
        runs.push(machine_copy(base.clone(), "slow", "Slow CPU", k, *j, None));
    }
    import(&store, dir.path(), &runs);
    let (code, out, err) = warpt(&store, &["report", "--by", "machine", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    for family in ["llama", "gpt2"] {
        let workload = format!("pepbench/llm_infer output_tokens_per_s family={family}");
        let rec = common::find_in(&report["recommendations"], "workload", &workload);
        let pick = &rec["picks"][0];
        assert_eq!(pick["criterion"], "throughput", "{rec}");
        assert_eq!(pick["winner"], "fast", "{rec}");
        assert_eq!(pick["significant"], true, "{rec}");
    }
}

#[test]
fn a_planted_slow_node_is_flagged_and_a_healthy_fleet_flags_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    // Eight nodes of one class, each within ±1.5% of the others.
    let speeds = [1.0, 1.012, 0.991, 1.004, 0.986, 1.015, 0.998, 1.007];
    let runs: Vec<Value> = speeds
        .iter()
        .enumerate()
        .map(|(i, s)| machine_run(&format!("node{i:02}"), "EPYC", 0, *s, None))
        .collect();
    import(&store, dir.path(), &runs);
    let (code, out, err) = warpt(&store, &["fleet", "outliers", "--json"]);
    assert_eq!(code, 0, "{err}");
    let scan: Value = serde_json::from_str(&out).unwrap();
    assert!(scan["outliers"].as_array().unwrap().is_empty(), "{scan}");
    assert!(scan["comparisons"].as_u64().unwrap() > 10);

    // A ninth node 12% slower on everything.
    import(
        &store,
        dir.path(),
        &[machine_run("node08", "EPYC", 0, 0.88, None)],
    );
    let (code, out, err) = warpt(&store, &["fleet", "outliers"]);
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(!lines.is_empty());
    assert!(lines.iter().all(|l| l.starts_with("node08: ")), "{out}");
    let triad = lines
        .iter()
        .find(|l| l.contains("micro/mem_bandwidth bandwidth kernel=triad"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        triad.contains("% slower on") && triad.contains("than its 8 peers (z = -"),
        "{triad}"
    );
    // Another class is not this class's peer: a lone machine is named as
    // too few to compare, never flagged.
    import(
        &store,
        dir.path(),
        &[machine_run("odd", "Other CPU", 0, 0.5, None)],
    );
    let (code, out, err) = warpt(&store, &["fleet", "outliers", "--json"]);
    assert_eq!(code, 1, "{err}");
    let scan: Value = serde_json::from_str(&out).unwrap();
    assert!(
        scan["outliers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["hostname"] == "node08")
    );
    assert_eq!(scan["too_small"].as_array().unwrap().len(), 1);
}

#[test]
fn reports_print_to_pdf_through_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    import(
        &store,
        dir.path(),
        &[
            machine_run("a", "X", 0, 1.0, None),
            machine_run("b", "X", 0, 1.1, None),
        ],
    );
    let pdf = dir.path().join("fleet.pdf");
    let (code, _, err) = by_machine(&store, "pdf", &pdf);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF-"), "not a PDF");
    assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
    // Without -o, and without a browser: usage errors naming what to do.
    let (code, _, err) = warpt(&store, &["report", "--by", "machine", "--format", "pdf"]);
    assert_eq!(code, 2, "{err}");
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("warpt"))
        .env("WARPT_STORE", &store)
        .env("PATH", "/nonexistent")
        .env_remove("WARPT_CHROMIUM")
        .args(["report", "--by", "machine", "--format", "pdf", "-o"])
        .arg(dir.path().join("x.pdf"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("apt-get install chromium"));
}
