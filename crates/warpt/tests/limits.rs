//! Stage limits that follow the work: a benchmark whose work grows with the
//! machine (the last-level cache) or a parameter announces its limits from
//! that work, so a big-cache server does not time out where a laptop
//! passes, and `--duration` stays the budget the sizes share.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;

use common::{metric_of, stderr_of, warpt};

/// `mem_latency` on a machine with a 1 GiB last-level cache (AMD's X3D and
/// Genoa-X parts have up to 1.1 GiB): chains up to 4 GiB, 16 sizes from
/// 128 KiB, in `--duration 0.3`. The default measure limit (3 x 0.3 s +
/// 30 s) is far below building 4 GiB of chains on a slow VM; the announced
/// one follows the lines built, in the warm-up (where the canary is
/// chained) as in the measurement.
#[test]
fn mem_latency_on_a_gigabyte_cache_passes_in_a_short_duration() {
    // The 4 GiB chain fits when twice its size is available (the machines
    // this runs on have 24 GiB); with less, the benchmark caps the size.
    let available = warpt_system::memory_quick().available_bytes;
    if available < 9 << 30 {
        eprintln!(
            "not run here: {} MiB available, 9 GiB needed",
            available >> 20
        );
        return;
    }
    let out = warpt()
        .env("WARPT_LAST_LEVEL_CACHE", "1G")
        .args(["benchmark", "run", "--benchmark", "mem_latency"])
        .args(["--duration", "0.3", "--param", "min_kb=128"])
        .args(["--no-store", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let r = &run["benchmarks"][0];
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{r:#}");
    assert_eq!(r["status"], "passed", "{r:#}");
    let details = &r["details"];
    assert_eq!(details["sizes"], 16, "{details}");
    assert_eq!(details["max_kib"], 4 << 20, "{details}");
    assert_eq!(r["metrics"].as_array().unwrap().len(), 16);
    let latency = metric_of(r, "latency");
    assert!(latency["value"].as_f64().unwrap() > 0.0);
    // The limit was reckoned from the 128 Mi lines built, not left at the
    // default for the duration.
    let measure = &r["watchdog"]["measure"];
    let limit = measure["limit_s"].as_f64().unwrap();
    assert!(limit > 3.0 * 0.3 + 30.0 + 60.0, "{measure}");
    assert!(measure["duration_s"].as_f64().unwrap() < limit, "{measure}");
    // So was the warm-up's, where the canary is chained.
    let warmup = &r["watchdog"]["warmup"];
    let limit = warmup["limit_s"].as_f64().unwrap();
    assert!(limit > 15.0 + 60.0, "{warmup}");
}

/// A last-level cache override that is not a size is refused before
/// anything runs, naming the variable.
#[test]
fn a_bad_cache_override_is_a_usage_error() {
    let err = stderr_of(
        warpt()
            .env("WARPT_LAST_LEVEL_CACHE", "lots")
            .args("benchmark run --benchmark mem_latency --no-store".split(' ')),
        2,
    );
    assert!(err.contains("WARPT_LAST_LEVEL_CACHE=lots"), "{err}");
}
