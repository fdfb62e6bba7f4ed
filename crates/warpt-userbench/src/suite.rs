//! The `harness` suite: how a user's file reaches warpt's worker process.
//!
//! The supervisor starts a worker per benchmark and the worker creates it
//! by id from the registry, so user files need a registered suite. Its one
//! spec, `harness/file`, takes the file and its settings as parameters;
//! `warpt harness run` plans it under ids of its own
//! (`harness/CHAPTER/EXAMPLE/FILE`), which this suite creates the same way.

use warpt_harness::{Benchmark, Suite};
use warpt_model::{BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params};

use crate::external::ExternalBenchmark;

/// The suite's name, in the store and in ids.
pub const SUITE: &str = "harness";

/// The user's own benchmark files.
pub struct HarnessSuite;

/// The parameters of a user benchmark.
fn params() -> Vec<Param> {
    vec![
        Param::command("file", "").help("the benchmark file"),
        Param::command("python", "python3").help("the Python interpreter"),
        Param::command("python_executable", "").help(
            "the file `python` runs (its sys.executable), asked once per run and started by every trial, so a launcher such as pyenv's shim runs once; empty: `python` itself",
        ),
        Param::text("kwargs", "").help(
            "a JSON object of keyword arguments for get_benchmark(), the class or run_benchmark()",
        ),
        Param::output_path("output_file", "")
            .help("where the last call's returned numbers are written (JSON)"),
        Param::flag("reproducible", false)
            .help("seed random/NumPy/torch, PYTHONHASHSEED, deterministic algorithms"),
        Param::flag("cold_start", false)
            .help("a fresh interpreter per sample, the page cache dropped where permitted"),
        Param::choice("timing", "", &["", "host", "device", "pytorch", "triton"])
            .help("host, device, pytorch or triton (empty: get_config()'s, else host)"),
        Param::choice("cold_cache", "", &["", "true", "false"]).help(
            "true: flush the cache before every call, each call timed alone (empty: get_config()'s)",
        ),
        Param::choice("device_hygiene", "", &["", "true", "false"]).help(
            "false: no gc.collect / CUDA synchronize, empty_cache, reset_peak_memory_stats before the first timed call",
        ),
        Param::text("defaults", "").help(
            "a JSON object of bench.yaml's run settings (timing, cold_cache, ...), below get_config()'s",
        ),
        Param::command("command", "").help(
            "a command (sh -c, in the file's directory) that starts an adapter for a file in another language (docs/protocol.md); empty: Python's",
        ),
        Param::choice("measure", "time", &["time", "instructions"]).help(
            "time; or instructions: also one call's executed instructions (the CPU's counters, else cachegrind), from counted sessions of N and 2N calls",
        ),
    ]
}

/// The parameters' defaults.
pub fn default_params() -> Params {
    spec("file").params
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
    BenchmarkSpec::builder(SUITE, name)
        .component(BenchmarkComponent::Cpu)
        .kind(BenchmarkKind::Application)
        .description(
            "A benchmark of your own: a Python file with setup(), benchmark_fn() and teardown() \
             (docs/harness.md), timed per call by warpt's stopping rule.",
        )
        .duration(DEFAULT_DURATION_S)
        .external_tool("python3")
        .params(params())
        .check(check_file)
        .metric("latency_ms")
        .metric("ttft_ms")
        .metric("tpot_ms")
        .build()
}

/// The benchmark file is given and exists.
fn check_file(params: &Params) -> Result<(), String> {
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
}
