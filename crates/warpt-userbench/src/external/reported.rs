//! What the adapter reported beside the samples, as a result's metrics
//! and details: per-request LLM latencies, memory, the timer used, and
//! the work one call does.

use warpt_harness::{Convert, SeriesDef, SeriesMetrics};
use warpt_model::{BenchmarkMetric, ParamValue};

use super::KEEP_EVENTS;
use crate::driver::Output;

/// `ttft_ms` / `tpot_ms` from what the calls returned.
pub(super) fn latency_metrics(out: &Output) -> Vec<BenchmarkMetric> {
    [
        ("ttft_ms", &out.ttft_times_ms),
        ("tpot_ms", &out.tpot_times_ms),
    ]
    .into_iter()
    .filter_map(|(name, values)| {
        SeriesDef::new(name, "ms", false, &[], Convert::Time(1e3)).metric_of_events(
            values,
            KEEP_EVENTS,
            None,
        )
    })
    .collect()
}

/// Units of work per call: `ops_per_call` from the benchmark's
/// `get_config()`, else from bench.yaml (`defaults`), else 1 (a call is an
/// op). Anything but a positive number is refused, naming the key.
pub(super) fn ops_per_call(
    config: &serde_json::Value,
    defaults: &serde_json::Map<String, serde_json::Value>,
) -> Result<f64, String> {
    match config
        .get("ops_per_call")
        .or_else(|| defaults.get("ops_per_call"))
    {
        None | Some(serde_json::Value::Null) => Ok(1.0),
        Some(v) => v
            .as_f64()
            .filter(|x| x.is_finite() && *x > 0.0)
            .ok_or_else(|| format!("'ops_per_call' must be a number above 0, not {v}")),
    }
}

/// What the adapter reported after the timed calls, as details.
pub(super) fn output_details(out: &Output) -> Vec<(String, ParamValue)> {
    let mut d = Vec::new();
    let mut int = |k: &str, v: Option<u64>| {
        if let Some(v) = v {
            d.push((k.to_string(), ParamValue::Int(v as i64)));
        }
    };
    int("peak_rss_bytes", out.peak_rss_bytes);
    int("cuda_peak_allocated_bytes", out.cuda_peak_allocated_bytes);
    int("cuda_allocated_bytes", out.cuda_allocated_bytes);
    int("cuda_reserved_bytes", out.cuda_reserved_bytes);
    int("output_count", out.output_count.map(|n| n as u64));
    int("timer_resolution_ns", out.timer_resolution_ns);
    int("peak_device_memory_bytes", out.peak_device_memory_bytes);
    for (k, v) in &out.details {
        d.push((k.clone(), ParamValue::from_json(v)));
    }
    for (k, v) in [
        ("timing", &out.timing),
        ("timing_requested", &out.timing_requested),
        ("timing_note", &out.timing_note),
        ("device_hygiene", &out.device_hygiene),
        ("cold_cache", &out.cold_cache),
        ("sync", &out.sync),
        ("output_note", &out.output_note),
    ] {
        if let Some(v) = v {
            d.push((k.to_string(), ParamValue::Str(v.clone())));
        }
    }
    d
}

/// What timed the samples, in words, for the `timer` detail.
pub(super) fn timer_text(timing: Option<&str>) -> &'static str {
    match timing {
        Some("device") => "CUDA events around the batch, in the adapter",
        Some("pytorch") => {
            "torch.utils.benchmark.Timer.blocked_autorange in the adapter, one block per sample"
        }
        Some("triton") => "triton.testing.do_bench in the adapter, one call per sample",
        _ => "time.perf_counter_ns around the batch, in the adapter",
    }
}
