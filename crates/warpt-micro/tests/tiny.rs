//! Every micro benchmark, run for real on a tiny configuration, must pass
//! its own validation.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use warpt_harness::InProcess;
use warpt_micro::MICRO;
use warpt_model::{ParamValue, RunStatus};

fn run(benchmark: &str, params: &[&str]) -> warpt_model::BenchmarkRunResult {
    // In-process: the test binary is not warpt and cannot be a worker.
    let mut micro = InProcess::new(MICRO, Duration::from_millis(40));
    micro.options.seed = 3;
    micro.options.target_rel_ci = 0.05;
    let result = micro.run(benchmark, params).expect("valid selection");
    assert_eq!(
        result.status,
        RunStatus::Passed,
        "{benchmark}: {:?}",
        result.error_message
    );
    assert!(result.validation.as_ref().is_some_and(|v| v.passed));
    assert!(
        result
            .metrics
            .iter()
            .all(|m| m.stats.is_some() && m.value > 0.0)
    );
    result
}

#[test]
fn cpu_flops_on_one_thread() {
    let r = run("cpu_flops", &["threads=1"]);
    // fp64 and fp32, and each low precision this CPU has, on one thread and all.
    let low = warpt_micro::cpu_flops::LowPrecision::ALL
        .iter()
        .filter(|p| p.kernel().is_ok())
        .count();
    assert_eq!(r.metrics.len(), 2 * (2 + low));
    assert_eq!(r.details["threads_all"], ParamValue::Int(1));
    // Each low precision names its kernel, or why it did not run here (AMX
    // on every CPU before Sapphire Rapids): never a figure it did not measure.
    for p in warpt_micro::cpu_flops::LowPrecision::ALL {
        let detail = &r.details[&format!("kernel_{}", p.tag())];
        match p.kernel() {
            Ok(k) => assert_eq!(detail, &ParamValue::from(k.name())),
            Err(why) => {
                assert!(why.starts_with("not available: "), "{why}");
                assert_eq!(detail, &ParamValue::from(why));
            }
        }
    }
    // The peak's clock is named, and measured where cpufreq is absent (as
    // under most hypervisors) rather than taken from the nominal MHz.
    let ParamValue::Str(source) = &r.details["clock_source"] else {
        panic!("{:?}", r.details)
    };
    let cpufreq = std::path::Path::new("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    let want = if cpufreq.exists() {
        "cpufreq"
    } else {
        "measured"
    };
    assert_eq!(source, want);
    assert!(matches!(r.details["effective_mhz"], ParamValue::Float(m) if m > 100.0));
    // A share above 1 is never printed without its reason beside it.
    for (key, value) in &r.details {
        if let (true, ParamValue::Float(share)) = (key.starts_with("peak_share_"), value) {
            assert!(
                *share <= 1.0 || r.warnings.iter().any(|w| w.starts_with(key.as_str())),
                "{key} = {share} without a reason: {:?}",
                r.warnings
            );
        }
    }
}

#[test]
fn mem_bandwidth_with_and_without_streaming_stores() {
    for nt in ["true", "false"] {
        let r = run(
            "mem_bandwidth",
            &["array_mb=2", "threads=2", &format!("nt_stores={nt}")],
        );
        assert_eq!(r.metrics.len(), 8);
        assert_eq!(
            r.details["array_elements"],
            ParamValue::Int(2 * 1024 * 1024 / 8)
        );
        assert!(
            r.warnings.iter().any(|w| w.contains("smaller than 4x")),
            "tiny arrays are flagged"
        );
    }
}

#[test]
fn mem_latency_over_a_few_sizes() {
    let r = run("mem_latency", &["min_kb=16", "max_mb=1"]);
    assert_eq!(r.metrics.len(), 7);
}
