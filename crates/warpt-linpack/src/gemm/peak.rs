//! Each fp64 and fp32 rate as a share of the FMA peak of the same
//! precision on the same threads (`cpu_flops`' kernel, measured right
//! after the products): how close the engine comes to what the cores can
//! do, beside how it compares with another library.

use warpt_micro::cpu_flops::{FmaPrecision, fma_peak};
use warpt_model::{BenchmarkMetric, ParamValue};

use super::Precision;

/// How `peak_share` is worked out, for details.
pub const METHOD: &str = "the median GEMM rate over cpu_flops' FMA peak of the same precision on \
     the same number of threads (the fastest of 20 rounds of about 1 ms, measured after the \
     products), in percent";

/// The `peak_share` metric of every fp64 and fp32 `gflops` metric in
/// `rates` (tags `precision` and `n`, as theirs), and the peaks as details
/// (`fma_peak_gflops_fp64`, `fma_peak_gflops_fp32`). Each precision's
/// peak is measured once, on `threads` threads.
pub fn shares(
    rates: &[BenchmarkMetric],
    threads: usize,
) -> (Vec<BenchmarkMetric>, Vec<(String, ParamValue)>) {
    let mut metrics = Vec::new();
    let mut details = Vec::new();
    for (p, fma) in [
        (Precision::Fp64, FmaPrecision::Fp64),
        (Precision::Fp32, FmaPrecision::Fp32),
    ] {
        let mine: Vec<&BenchmarkMetric> = rates
            .iter()
            .filter(|m| {
                m.name == "gflops" && m.tags.get("precision").map(String::as_str) == Some(p.tag())
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let peak = fma_peak(fma, threads);
        if !(peak.is_finite() && peak > 0.0) {
            continue;
        }
        details.push((
            format!("fma_peak_gflops_{}", p.tag()),
            ParamValue::Float(peak),
        ));
        for rate in mine {
            let mut share =
                BenchmarkMetric::single("peak_share", 100.0 * rate.value / peak, "%", true);
            share.tags = rate.tags.clone();
            metrics.push(share);
        }
    }
    if !metrics.is_empty() {
        details.push(("method_peak_share".to_string(), ParamValue::from(METHOD)));
    }
    (metrics, details)
}
