//! The `harness` suite: how a user's file reaches warpt's worker process.
//!
//! The supervisor starts a worker per benchmark and the worker creates it
//! by id from the registry, so user files need a registered suite. Its one
//! spec, `harness/file`, takes the file and its settings as parameters;
//! `warpt harness run` plans it under ids of its own
//! (`harness/CHAPTER/EXAMPLE/FILE`), which this suite creates the same way.

use warpt_harness::{Benchmark, Suite};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkSpec, ParamValue, Params,
};

use crate::external::ExternalBenchmark;

/// The suite's name, in the store and in ids.
pub const SUITE: &str = "harness";

/// The user's own benchmark files.
pub struct HarnessSuite;

/// The parameters of a user benchmark, with their defaults.
pub fn default_params() -> Params {
    [
        ("file", ParamValue::from("")),
        ("python", ParamValue::from("python3")),
        ("kwargs", ParamValue::from("")),
        ("output_file", ParamValue::from("")),
        ("reproducible", ParamValue::Bool(false)),
        ("cold_start", ParamValue::Bool(false)),
        ("timing", ParamValue::from("")),
        ("cold_cache", ParamValue::from("")),
        ("device_hygiene", ParamValue::from("")),
        ("defaults", ParamValue::from("")),
        ("command", ParamValue::from("")),
        ("measure", ParamValue::from("time")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Measurement seconds of a user benchmark when neither a flag, the config
/// file nor its `get_config()` says.
pub const DEFAULT_DURATION_S: f64 = 2.0;

/// Warm-up seconds of a `harness run` trial when nothing says, cut to the
/// trial's measurement time: a tree run at `--duration 0.05` is a quick
/// look, and a second of warm-up per trial would be most of its time.
pub const DEFAULT_BURNIN_S: f64 = 1.0;

/// The spec of the user benchmark `name` (a file, an example's variant).
pub fn spec(name: &str) -> BenchmarkSpec {
    BenchmarkSpec {
        id: BenchmarkId::new(SUITE, name),
        components: vec![BenchmarkComponent::Cpu],
        kind: BenchmarkKind::Application,
        description: Some(
            "A benchmark of your own: a Python file with setup(), benchmark_fn() and teardown() \
             (docs/harness.md), timed per call by warpt's stopping rule."
                .into(),
        ),
        default_duration_seconds: Some(DEFAULT_DURATION_S),
        external_tool: Some("python3".into()),
        params: default_params(),
        param_help: [
            ("file", "the benchmark file"),
            ("python", "the Python interpreter"),
            (
                "kwargs",
                "a JSON object of keyword arguments for get_benchmark(), the class or run_benchmark()",
            ),
            (
                "output_file",
                "where the last call's returned numbers are written (JSON)",
            ),
            (
                "reproducible",
                "seed random/NumPy/torch, PYTHONHASHSEED, deterministic algorithms",
            ),
            (
                "cold_start",
                "a fresh interpreter per sample, the page cache dropped where permitted",
            ),
            (
                "timing",
                "host, device, pytorch or triton (empty: get_config()'s, else host)",
            ),
            (
                "cold_cache",
                "true: flush the cache before every call, each call timed alone (empty: get_config()'s)",
            ),
            (
                "device_hygiene",
                "false: no gc.collect / CUDA synchronize, empty_cache, reset_peak_memory_stats before the first timed call",
            ),
            (
                "defaults",
                "a JSON object of bench.yaml's run settings (timing, cold_cache, ...), below get_config()'s",
            ),
            (
                "command",
                "a command (sh -c, in the file's directory) that starts an adapter for a file in another language (docs/protocol.md); empty: Python's",
            ),
            (
                "measure",
                "time; or instructions: also one call's executed instructions (the CPU's counters, else cachegrind), from counted sessions of N and 2N calls",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        param_kinds: warpt_model::ParamKind::table(&[("file", warpt_model::ParamKind::Command), ("python", warpt_model::ParamKind::Command), ("output_file", warpt_model::ParamKind::OutputPath), ("command", warpt_model::ParamKind::Command)]),
        param_ranges: Default::default(),
        param_choices: [
            ("timing", &["", "host", "device", "pytorch", "triton"][..]),
            ("cold_cache", &["", "true", "false"][..]),
            ("device_hygiene", &["", "true", "false"][..]),
            ("measure", &["time", "instructions"][..]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|c| c.to_string()).collect()))
        .collect(),
        timeouts: Default::default(),
        metrics: vec!["latency_ms".into(), "ttft_ms".into(), "tpot_ms".into()],
    }
}

impl Suite for HarnessSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "your own Python benchmarks (warpt harness run DIR, or --param file=PATH here)"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        vec![spec("file")]
    }

    fn create(&self, _name: &str) -> Option<Box<dyn Benchmark>> {
        Some(Box::new(ExternalBenchmark::from_params()))
    }

    fn check_params(&self, _name: &str, params: &Params) -> Result<(), String> {
        match params.get("file").and_then(ParamValue::as_str) {
            Some("") | None => Err(
                "parameter 'file': give the benchmark file (--param file=PATH), or run a tree with \
                 `warpt harness run DIR`"
                    .into(),
            ),
            Some(f) if !std::path::Path::new(f).is_file() => {
                Err(format!("parameter 'file': {f} is not a file"))
            }
            Some(_) => Ok(()),
        }
    }
}
