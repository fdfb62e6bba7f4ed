//! Interference detection against a real busy process: the CPU time a
//! helper burns during a benchmark's measurement window is accounted as
//! foreign, from /proc/stat deltas, and grades the result.
//!
//! One test in its own binary: nothing else of the test suite runs beside
//! it to blur the accounting.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{selftest_run, stdout_of, warpt};

use std::process::{Child, Command as Std};

use warpt_harness::interference::{FOREIGN_NOISY, FOREIGN_UNRELIABLE};
use warpt_model::{BenchmarkRunResult, Quality, load_suite_run};

/// A shell spinning on one CPU until killed.
struct Spinner(Child);

impl Spinner {
    fn start() -> Self {
        Spinner(
            Std::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_ok(extra: &[&str]) -> BenchmarkRunResult {
    let out = stdout_of(
        warpt()
            .env("WARPT_SELFTEST", "1")
            .env("WARPT_NO_PROGRESS", "1")
            .args(selftest_run("ok"))
            .args("--duration 2 --burnin-seconds 0 --json --no-store".split(' '))
            .args(extra),
    );
    let mut run = load_suite_run(&String::from_utf8(out).unwrap()).unwrap();
    run.benchmarks.remove(0)
}

fn check_against_the_spinner(r: &BenchmarkRunResult) {
    let i = r.interference.as_ref().expect("the window was accounted");
    let foreign = i.foreign_cpu_s.unwrap();
    // The spinner had a CPU to itself for the whole window (the benchmark
    // spins on one thread): about one CPU-second per second.
    assert!(
        (foreign - i.window_s).abs() <= 0.25 * i.window_s + 0.05,
        "foreign {foreign:.2} CPU-s over a {:.2} s window: {i:?}",
        i.window_s
    );
    let share = i.foreign_cpu_share.unwrap();
    assert!((share - 1.0 / i.cpus as f64).abs() < 0.15, "{i:?}");
    let benchmark = i.benchmark_cpu_s.unwrap();
    assert!(
        benchmark > 0.5 * i.window_s,
        "the benchmark's own spin: {i:?}"
    );
    let steal = i.steal_share.unwrap();
    assert!((0.0..=1.0).contains(&steal), "{i:?}");
    assert!(i.run_queue_max.unwrap() >= 2, "{i:?}");
    // Graded by the share of the machine it took.
    let named = r
        .quality_reasons
        .iter()
        .any(|w| w.starts_with("foreign_cpu: "));
    if share > FOREIGN_UNRELIABLE {
        assert_eq!(r.measurement_quality, Some(Quality::Unreliable), "{r:?}");
        assert!(named, "{:?}", r.quality_reasons);
    } else if share > FOREIGN_NOISY {
        assert!(named, "{:?}", r.quality_reasons);
    }
}

#[test]
fn a_busy_helper_is_accounted_as_foreign_cpu_time() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert!(
        cpus >= 2,
        "the spinner needs a CPU of its own beside the benchmark"
    );
    let spinner = Spinner::start();
    check_against_the_spinner(&run_ok(&[]));
    // In-process the benchmark is warpt itself; the spinner is still foreign.
    check_against_the_spinner(&run_ok(&["--in-process"]));
    drop(spinner);
}
