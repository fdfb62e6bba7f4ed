//! `warpt harness`: the user's own benchmarks.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `warpt harness` actions.
#[derive(Debug, Subcommand)]
pub enum HarnessCommand {
    /// List the benchmarks a tree holds: chapters of baseline_*/optimized_* pairs
    /// (baseline_moe.py pairs with optimized_moe.py and optimized_moe_sparse.py) and
    /// standalone kernels (a run_benchmark() function under kernels/ or src/kernels/).
    Discover(HarnessDiscoverArgs),
    /// Run every pair and kernel of a tree: each file in a worker process under stage
    /// limits, baseline and optimized interleaved in rounds, speedups with CIs, accuracy
    /// against the baseline, and summary.json / summary.md (and regressions.md with
    /// --compare-to) in the output directory. Exit 1 when anything failed or regressed.
    Run(Box<HarnessRunArgs>),
}

/// `--profile` tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfilerChoice {
    /// `perf stat` (task-clock, context switches, page faults).
    Perf,
    /// py-spy's sampling profile (a flame graph SVG).
    PySpy,
    /// Nsight Systems.
    Nsys,
    /// Nsight Compute.
    Ncu,
    /// torch.profiler (a Chrome trace).
    Torch,
}

/// `--timing` modes (docs/harness.md, "Timing modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimingChoice {
    /// perf_counter_ns around each batch of calls (after a CUDA synchronize).
    Host,
    /// CUDA events around each batch where the benchmark uses CUDA, else the host timer.
    Device,
    /// torch.utils.benchmark.Timer (blocked_autorange), each block a sample.
    Pytorch,
    /// triton.testing.do_bench, each timed call a sample (skipped without a GPU).
    Triton,
}

/// `warpt harness run`
#[derive(Debug, Args)]
pub struct HarnessRunArgs {
    /// The tree: its directories are chapters.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Only these chapters (comma-separated; `ch3` matches `ch3_numpy`), `kernels`, or
    /// single examples as CHAPTER/EXAMPLE.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub targets: Vec<String>,
    /// Another directory to search for kernels (repeatable).
    #[arg(long = "path", value_name = "DIR")]
    pub paths: Vec<PathBuf>,
    /// Where the reports go [default: warpt-harness-<timestamp>].
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// An earlier run to write regressions.md against: a summary.json (or its directory),
    /// a stored run id, or a git ref holding one (REF:PATH, or REF with the same --output-dir).
    #[arg(long, value_name = "RUN")]
    pub compare_to: Option<String>,
    /// An optimized variant significantly slower than its baseline by more than this
    /// many percent is a regression.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub regression_threshold: f64,
    /// regressions.md: a p50 latency increase beyond this many percent is a regression.
    #[arg(long, default_value_t = 10.0, value_name = "PCT")]
    pub latency_threshold: f64,
    /// regressions.md: an accuracy figure that moved by more than this has drifted.
    #[arg(long, default_value_t = 1e-3, value_name = "ABS")]
    pub accuracy_drift: f64,
    /// Interleaved rounds per pair (trials per kernel).
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Measurement time of each trial, seconds [default: get_config()'s, else 2].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Warm-up before each trial's samples, seconds [default: get_config()'s, else 1, at most the duration].
    #[arg(long = "burnin-seconds", value_name = "SECS")]
    pub burnin: Option<f64>,
    /// Scale every stage limit (setup 30 s, warm-up 15 s beyond the warm-up time, ...).
    #[arg(long, value_name = "X")]
    pub timeout_multiplier: Option<f64>,
    /// Seconds the whole run may take: past them the file running is stopped and the rest
    /// are not started, each a `timeout` result; 0 for no limit [default: 14400 (4 h)].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::cli::parse_seconds)]
    pub suite_timeout: Option<f64>,
    /// Percentiles to add to every metric's stats, summary.json's figures and summary.md's
    /// leaderboard, comma-separated (`50,90,99.9`: keys p50, p90, p99.9).
    #[arg(long, value_name = "LIST", value_parser = crate::cli::parse_percentiles)]
    pub percentiles: Option<warpt_model::Percentiles>,
    /// A label recorded with the run (repeatable); `results list --label KEY=VALUE` finds it.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::cli::parse_label)]
    pub labels: Vec<(String, String)>,
    /// A sentence recorded with the run.
    #[arg(long, value_name = "TEXT", value_parser = crate::cli::parse_description)]
    pub description: Option<String>,
    /// Seed of the round order (and, with --reproducible, of the benchmarks' generators).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The Python interpreter.
    #[arg(long, default_value = "python3", value_name = "PROGRAM")]
    pub python: String,
    /// Seed random, NumPy and torch where the files import them, set PYTHONHASHSEED,
    /// and turn on deterministic algorithms.
    #[arg(long)]
    pub reproducible: bool,
    /// A fresh interpreter per sample (load and setup not timed, empty compiled-graph
    /// caches), the page cache dropped where permitted, and --cold-cache.
    #[arg(long)]
    pub cold_start: bool,
    /// Run only these of bench.yaml's `precisions` (comma-separated); a file without
    /// that axis runs as it is.
    #[arg(long = "precision", value_delimiter = ',', value_name = "PRECISION")]
    pub precisions: Vec<String>,
    /// Run only these of bench.yaml's `backends` (comma-separated); a file without
    /// that axis runs as it is.
    #[arg(long = "backends", value_delimiter = ',', value_name = "BACKEND")]
    pub backends: Vec<String>,
    /// The timer, for every file (beats get_config() and bench.yaml `timing`) [default: host].
    #[arg(long, value_enum, value_name = "MODE")]
    pub timing: Option<TimingChoice>,
    /// Flush the cache (the GPU's L2, else the CPU's last level) before every call, each
    /// call timed on its own (bench.yaml / get_config() `cold_cache`).
    #[arg(long)]
    pub cold_cache: bool,
    /// No clean-up before the first timed call (gc.collect; CUDA synchronize, empty_cache,
    /// reset_peak_memory_stats), which is on by default.
    #[arg(long)]
    pub no_device_hygiene: bool,
    /// `instructions`: also count one call's executed instructions (the CPU's counters,
    /// else valgrind's cachegrind; counted sessions of N and 2N calls after the timed
    /// ones), as metrics beside the times; skipped, saying why, where neither exists.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "time")]
    pub measure: crate::cli::exec::MeasureArg,
    /// One extra run of each file under a profiler (never the timed one); its artifact
    /// is kept in the output directory.
    #[arg(long, value_enum, value_name = "TOOL")]
    pub profile: Option<ProfilerChoice>,
    /// Seconds `--profile`'s run of one file may take before it is stopped (a profiler
    /// slows what it watches; Nsight Compute by orders of magnitude).
    #[arg(long, value_name = "SECONDS", default_value_t = 180.0, value_parser = super::positive_seconds)]
    pub profile_timeout: f64,
    /// Print summary.json on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also write the run as a warpt export (the suite run `benchmark compare`,
    /// `results import` and `ci pr` read) to this file.
    #[arg(long, value_name = "PATH")]
    pub export_file: Option<PathBuf>,
    #[command(flatten)]
    pub store: crate::cli::StoreFlags,
    #[command(flatten)]
    pub monitor: crate::cli::MonitorFlags,
}

/// `warpt harness discover`
#[derive(Debug, Args)]
pub struct HarnessDiscoverArgs {
    /// The tree: its directories are chapters.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Another directory to search for kernels (repeatable), beside kernels/ and src/kernels/.
    #[arg(long = "path", value_name = "DIR")]
    pub paths: Vec<PathBuf>,
    /// Print the manifest as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also list every Python file that is not a benchmark, and why.
    #[arg(long, short)]
    pub verbose: bool,
}
