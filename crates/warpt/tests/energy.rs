//! Energy in results and harness summaries (`--monitor`), from a powercap
//! tree this test writes (`WARPT_POWERCAP`): a RAPL package counter a
//! thread advances at a known rate, wrapping around its range, as the
//! kernel's does. The real counters are root-only or absent on most hosts.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{put, warpt};

/// The counter's range: small, so a run of a few seconds wraps it.
const RANGE_UJ: u64 = 120_000_000;

/// A package domain whose counter a thread advances at `WATTS`.
struct FakeRapl {
    dir: tempfile::TempDir,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const WATTS: f64 = 50.0;

impl FakeRapl {
    fn start() -> FakeRapl {
        let dir = tempfile::tempdir().unwrap();
        let domain = dir.path().join("intel-rapl:0");
        std::fs::create_dir_all(&domain).unwrap();
        std::fs::write(domain.join("name"), "package-0\n").unwrap();
        std::fs::write(domain.join("max_energy_range_uj"), format!("{RANGE_UJ}\n")).unwrap();
        let write = move |uj: u64| {
            // Written aside and renamed in: a reader sees one value or the other.
            let tmp = domain.join(".energy_uj");
            std::fs::write(&tmp, format!("{uj}\n")).unwrap();
            std::fs::rename(&tmp, domain.join("energy_uj")).unwrap();
        };
        write(RANGE_UJ - 10_000_000);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let t0 = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                let uj = (t0.elapsed().as_secs_f64() * WATTS * 1e6) as u64;
                write((RANGE_UJ - 10_000_000 + uj) % RANGE_UJ);
            }
        });
        FakeRapl {
            dir,
            stop,
            thread: Some(thread),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for FakeRapl {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn metric<'a>(r: &'a Value, name: &str, source: Option<&str>) -> Option<&'a Value> {
    r["metrics"].as_array().unwrap().iter().find(|m| {
        m["name"] == name
            && m["tags"].get("source").and_then(Value::as_str) == source
            && (source.is_some() || m["tags"].get("source").is_none())
    })
}

#[test]
fn a_monitored_result_carries_its_energy_by_source_and_per_unit_of_work() {
    let _one = common::one_at_a_time();
    let rapl = FakeRapl::start();
    let out = warpt()
        .env("WARPT_POWERCAP", rapl.path())
        .args("benchmark run --component cpu --duration 1 --burnin-seconds 0".split(' '))
        .args([
            "--monitor",
            "--monitor-interval",
            "0.1",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &run["benchmarks"][0];
    let t = &r["telemetry"];
    let total = metric(r, "energy_j", None).unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(total["unit"], "J");
    assert_eq!(total["higher_is_better"], false);
    assert_eq!(total["value"], t["energy_j"]);
    let package = metric(r, "energy_j", Some("cpu_package")).unwrap();
    assert_eq!(
        package["value"],
        t["energy_sources"]["cpu_package"]["energy_j"]
    );
    // The only source here: the sum is the package's.
    assert_eq!(package["value"], total["value"]);
    assert!(metric(r, "energy_j", Some("gpu")).is_none(), "{r:#}");
    // The counter ran at 50 W (and wrapped past its range mid-run); the
    // monitor's samples see that rate, give or take the writer's pace on
    // a loaded host.
    let watts = metric(r, "mean_power_w", None).unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!((20.0..=75.0).contains(&watts), "{watts} W: {t:#}");
    // Joules per GFLOP for every GFLOP/s series: the watts over the rate.
    let rates: Vec<&Value> = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["unit"] == "GFLOP/s")
        .collect();
    assert!(!rates.is_empty(), "{r:#}");
    for rate in rates {
        let per = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "energy_per_gflop" && m["tags"] == rate["tags"])
            .unwrap_or_else(|| panic!("no J/GFLOP for {rate}"));
        assert_eq!(per["unit"], "J/GFLOP");
        let want = watts / rate["value"].as_f64().unwrap();
        let got = per["value"].as_f64().unwrap();
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    }
    // The worker's whole-lifetime counter reading read the same tree.
    assert!(r["resources"]["energy_j"].as_f64().unwrap() > 0.0, "{r:#}");
}

/// A kernel whose call does a fixed amount of work.
const KERNEL: &str =
    "def run_benchmark(problem_size=20000):\n    return sum(range(problem_size))\n";

fn harness(tree: &Path, out: &Path, rapl: &Path) -> (Value, String, String) {
    let o = warpt()
        .env("WARPT_POWERCAP", rapl)
        .args(["harness", "run"])
        .arg(tree)
        .arg("--output-dir")
        .arg(out)
        .args(["--no-store", "--rounds", "1", "--duration", "0.6"])
        .args([
            "--burnin-seconds",
            "0.05",
            "--monitor",
            "--monitor-interval",
            "0.05",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    let summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    (summary, md, stderr)
}

#[test]
fn harness_summaries_carry_each_benchmarks_energy_or_why_there_is_none() {
    let _one = common::one_at_a_time();
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("tree");
    put(&tree, "kernels/sum/summer.py", KERNEL);
    put(&tree, "kernels/sum/bench.yaml", "ops_per_call: 1000\n");
    let rapl = FakeRapl::start();
    let (s, md, stderr) = harness(&tree, &t.path().join("out"), &rapl.path());
    let e = &s["benchmarks"][0];
    let energy = &e["energy"];
    let watts = energy["mean_power_w"]
        .as_f64()
        .unwrap_or_else(|| panic!("{e:#}\n{stderr}"));
    assert!((20.0..=75.0).contains(&watts), "{e:#}");
    assert!(energy["energy_j"].as_f64().unwrap() > 0.0);
    assert_eq!(energy["sources"]["cpu_package"], energy["energy_j"]);
    // Joules per op: the watts over the ops per second.
    let ops = e["throughput_ops_per_sec"].as_f64().unwrap();
    let per_op = energy["energy_per_op"].as_f64().unwrap();
    assert!((per_op - watts / ops).abs() <= 1e-6 * per_op, "{e:#}");
    assert!(
        md.contains("## Energy") && md.contains("| cpu_package J |"),
        "{md}"
    );
    drop(rapl);

    // A counter that cannot be read: the summary says why and how to fix it.
    let broken = tempfile::tempdir().unwrap();
    let d = broken.path().join("intel-rapl:0");
    std::fs::create_dir_all(d.join("energy_uj")).unwrap();
    std::fs::write(d.join("max_energy_range_uj"), "100\n").unwrap();
    let (s, md, _) = harness(&tree, &t.path().join("out2"), broken.path());
    let e = &s["benchmarks"][0];
    assert!(e.get("energy").is_none(), "{e:#}");
    let note = s["energy_note"].as_str().unwrap();
    assert!(
        note.contains("not readable") && note.contains("cap_dac_read_search"),
        "{note}"
    );
    assert!(md.contains("## Energy\n\nNot measured: "), "{md}");
}
