//! The regime probes, read for real while the benchmarks measure: the
//! effective clock around every series of a CPU or memory benchmark, the
//! thread-scaling checks of cpu_flops and mem_bandwidth, mem_bandwidth's
//! memory-bandwidth canary, mem_latency's
//! cache canary, and a trial held to its siblings' clock.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;

use common::{bench_run, one_at_a_time, selftest_run, suite_run_of, warpt};
use warpt_model::{BenchmarkRunResult, REGIME_PREFIX, RegimeProbes};

fn cpus() -> usize {
    warpt_system::allowed_cpus().len()
}

fn probes(r: &BenchmarkRunResult) -> &RegimeProbes {
    r.regime
        .as_ref()
        .unwrap_or_else(|| panic!("{} recorded no probes", r.spec.id))
}

/// Every probe reading is a clock a core can run at, and every regime
/// reason in the quality is one the probes account for.
fn check_readings(r: &BenchmarkRunResult) {
    let p = probes(r);
    assert!(
        p.clock_mhz.iter().all(|m| (200.0..10_000.0).contains(m)),
        "{:?}",
        p.clock_mhz
    );
    let regimes: Vec<&String> = r
        .quality_reasons
        .iter()
        .filter(|q| q.starts_with(REGIME_PREFIX))
        .collect();
    let explained = p.reasons();
    for q in regimes {
        assert!(explained.contains(q), "{q} is not what {p:?} say");
    }
}

#[test]
fn cpu_flops_reads_the_clock_around_each_series_and_checks_its_scaling() {
    let _turn = one_at_a_time();
    let run = bench_run("cpu_flops", &["precision=fp64"], "0.2");
    let r = &run.benchmarks[0];
    check_readings(r);
    let p = probes(r);
    // Two series (one thread, all threads) and the reading after the last.
    assert_eq!(p.clock_mhz.len(), 3, "{p:?}");
    if cpus() >= 2 {
        assert_eq!(p.scaling.len(), 1, "{p:?}");
        let s = &p.scaling[0];
        assert_eq!((s.what.as_str(), s.threads as usize), ("fp64", cpus()));
        assert!(s.cores >= 1 && s.ratio > 0.0, "{s:?}");
        // The check is the ratio of the two series it ran.
        let rate = |t: &str| {
            r.metrics
                .iter()
                .find(|m| m.tags["threads"] == t)
                .unwrap()
                .value
        };
        assert!((s.ratio - rate("all") / rate("1")).abs() < 1e-9, "{s:?}");
    } else {
        assert!(p.scaling.is_empty(), "one CPU: nothing to scale to");
    }
}

#[test]
fn mem_bandwidth_probes_its_threads_before_and_after() {
    if cpus() < 2 {
        eprintln!("not run here: one CPU, no scaling to check");
        return;
    }
    let _turn = one_at_a_time();
    let run = bench_run("mem_bandwidth", &["array_mb=8", "threads=2"], "0.2");
    let r = &run.benchmarks[0];
    check_readings(r);
    let p = probes(r);
    let what: Vec<&str> = p.scaling.iter().map(|s| s.what.as_str()).collect();
    assert_eq!(what, ["fp64 probe before", "fp64 probe after"]);
    assert!(p.scaling.iter().all(|s| s.threads == 2 && s.ratio > 0.0));
    // The bandwidth canary, before the first series and after the last:
    // one array read per reading, at a rate some memory can run at.
    let gbs = &p.bandwidth_canary_gbs;
    assert_eq!(gbs.len(), 2, "{p:?}");
    assert!(gbs.iter().all(|g| (0.1..100_000.0).contains(g)), "{gbs:?}");
}

/// Two threads pinned to one CPU take turns: the probe must see no scaling
/// (it times the whole team, not one thread).
#[test]
fn the_scaling_probe_sees_two_threads_on_one_cpu_share_it() {
    let _turn = one_at_a_time();
    let cpu = warpt_system::allowed_cpus()[0];
    let s = warpt_micro::cpu_flops::scaling_probe(&[cpu, cpu], "shared").unwrap();
    assert_eq!(s.cores, 1);
    // At most one CPU's worth; turn-taking overhead only lowers it.
    assert!(s.ratio > 0.0 && s.ratio < 1.3, "{s:?}");
}

/// With an 8 MiB last-level cache the canary chases 256 KiB, 1 and 2 MiB
/// (and half of this machine's L2, when that lies in the range), read
/// before the first size, before every later one (all from half the
/// smallest canary up) and after the last.
#[test]
fn mem_latency_reads_its_cache_canary_next_to_every_size_it_reaches() {
    let _turn = one_at_a_time();
    let out = warpt()
        .env("WARPT_LAST_LEVEL_CACHE", "8M")
        .args(["benchmark", "run", "--benchmark", "mem_latency"])
        .args(["--param", "min_kb=256", "--param", "max_mb=8"])
        .args(["--duration", "0.3", "--burnin-seconds", "0", "--json"])
        .output()
        .unwrap();
    let run = warpt_model::load_suite_run(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let r = &run.benchmarks[0];
    assert_eq!(r.metrics.len(), 6);
    check_readings(r);
    let p = probes(r);
    let sizes: Vec<u64> = p.llc_canary.iter().map(|c| c.size_kib).collect();
    for want in [256, 1024, 2048] {
        assert!(sizes.contains(&want), "{sizes:?}");
    }
    assert!(sizes.iter().all(|s| (256..=8192).contains(s)), "{sizes:?}");
    for c in &p.llc_canary {
        assert_eq!(c.ns.len(), 7, "{c:?}");
        assert!(c.ns.iter().all(|ns| *ns > 0.1 && *ns < 10_000.0), "{c:?}");
    }
    assert_eq!(
        p.clock_mhz.len(),
        7,
        "six sizes and the reading after the last"
    );
    assert_eq!(p.cache_reach_kib(), Some(128));
}

/// Each trial of a CPU benchmark carries its own probes, so a trial in
/// another clock regime than its siblings can be left out.
#[test]
fn every_trial_carries_its_probes() {
    let _turn = one_at_a_time();
    let run = suite_run_of(
        warpt()
            .env("WARPT_SELFTEST", "1")
            .args(selftest_run("work"))
            .args(["--repeat", "3", "--duration", "0.1", "--json", "--no-store"]),
    );
    assert_eq!(run.trials.len(), 3);
    for t in &run.trials {
        let r = &t.benchmarks[0];
        assert_eq!(probes(r).clock_mhz.len(), 2, "one series: before and after");
        let odd = r
            .quality_reasons
            .iter()
            .any(|q| q.starts_with("regime: the effective clock differs"));
        // A trial called odd was measured at a clock its siblings were not.
        if odd {
            let others: Vec<&RegimeProbes> = run
                .trials
                .iter()
                .map(|o| probes(&o.benchmarks[0]))
                .collect();
            let most = RegimeProbes::consensus(&others);
            assert!(RegimeProbes::speed_apart(&most, probes(r), ("a", "b")).is_some());
        }
    }
}
