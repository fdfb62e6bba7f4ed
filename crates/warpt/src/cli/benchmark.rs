//! `warpt benchmark ...` and `warpt noise`: what to run and how to compare it.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use warpt_model::BenchmarkComponent;

use super::{
    MonitorFlags, StoreFlags, StorePath, formats, parse_description, parse_label, parse_label_key,
    parse_multiplier, parse_param, parse_percent, parse_percentiles, parse_seconds,
    parse_threshold,
};

/// `warpt benchmark ...`
#[derive(Debug, Subcommand)]
pub enum BenchmarkCommand {
    /// List available benchmarks.
    List(ListArgs),
    /// Show everything about one benchmark: what it measures, its parameters.
    Describe(DescribeArgs),
    /// Run benchmarks and report (and optionally export) the results.
    Run(Box<RunArgs>),
    /// Compare two runs metric by metric; exit 1 when any metric regressed.
    Compare(CompareArgs),
}

/// `warpt benchmark compare`
#[derive(Debug, Args)]
#[command(
    after_help = "Verdicts: improved, regressed, ~ (no change beyond the band), inconclusive \
(too noisy to tell: which side, and why). Exit status 1 only for a regression, or with \
--fail-on-inconclusive for an inconclusive metric too."
)]
pub struct CompareArgs {
    /// The baseline: an export file or a run in the store (id, prefix, `latest`,
    /// `label:KEY=VALUE`); with --label KEY, a value of that label; with --rerun, a
    /// warpt executable or a configuration file (.toml).
    pub base: String,
    /// The run compared with it: an export file or a run in the store; with
    /// --label KEY, a value of that label; with --rerun, a warpt executable or a
    /// configuration file.
    pub current: String,
    /// BASE and CURRENT are values of this label: the latest stored run carrying
    /// each (`--label bios 1.2 1.3`: before and after the BIOS update).
    #[arg(long = "label", value_name = "KEY", conflicts_with = "rerun", value_parser = parse_label_key)]
    pub label: Option<String>,
    /// Run BASE and CURRENT (two warpt binaries, or two configuration files for
    /// this warpt) again now, in randomized interleaved trials (A B, B A, ...),
    /// and judge the paired per-round differences. The `benchmark run`
    /// arguments for both go after `--`.
    #[arg(long)]
    pub rerun: bool,
    /// With --rerun: rounds, i.e. trials per side. Without it, 5 (10 with
    /// --duet), then as many again while a verdict is inconclusive or `~`
    /// only within a band wider than 1.5 times --threshold, up to three times
    /// that.
    #[arg(long, value_name = "N", requires = "rerun", value_parser = clap::value_parser!(u32).range(2..=200))]
    pub trials: Option<u32>,
    /// With --rerun: seed of the order of each round (which side runs first).
    #[arg(long, value_name = "N", default_value_t = 42, requires = "rerun")]
    pub seed: u64,
    /// With --rerun: run both sides at the same time, each on its own half of the CPUs
    /// (swapped every round), instead of one after the other; the verdict from the mean
    /// ratio of each two rounds (Duet benchmarking).
    #[arg(long, requires = "rerun")]
    pub duet: bool,
    /// Changes within this many percent are `~` however significant.
    #[arg(long, value_name = "PCT", default_value_t = warpt_report::compare::DEFAULT_THRESHOLD_PCT, value_parser = parse_threshold)]
    pub threshold: f64,
    /// Changes of a counted metric (instructions, cache misses: `exec --measure
    /// instructions`) within this many percent are `~`; counts need no noise band.
    #[arg(long, value_name = "PCT", default_value_t = warpt_report::compare::DEFAULT_COUNT_THRESHOLD_PCT, value_parser = parse_threshold)]
    pub count_threshold: f64,
    /// Take this run-to-run spread (coefficient of variation, percent) for
    /// every metric instead of the machine's noise profile or history; 0
    /// trusts a single run's own statistics.
    #[arg(long, value_name = "PCT", value_parser = parse_threshold)]
    pub assume_noise: Option<f64>,
    /// Exit 1 when any metric is inconclusive, as well as on a regression.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// Output format.
    #[arg(long, default_value = "table", value_parser = formats(&warpt_export::COMPARISON))]
    pub format: String,
    /// The store that run ids, noise profiles and history are read from, and
    /// --rerun's runs recorded in; --no-store uses none.
    #[command(flatten)]
    pub store: StoreFlags,
    /// With --rerun: the `benchmark run` arguments both sides run with
    /// (selection, --duration, --param, ...).
    #[arg(last = true, value_name = "RUN_ARGS", requires = "rerun")]
    pub run_args: Vec<String>,
}

/// `warpt noise`
#[derive(Debug, Args)]
pub struct NoiseArgs {
    /// What to profile (as `benchmark run`; by default every component's defaults).
    #[command(flatten)]
    pub plan: PlanArgs,
    /// A/A repetitions of the plan: the spread is measured over this many runs.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(3..=1000))]
    pub repeat: u32,
    /// Print the profile as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The store the run and the profile are recorded in.
    #[command(flatten)]
    pub store: StorePath,
}

/// Parses a component name, listing the valid ones when it is not one.
fn component_parser() -> impl TypedValueParser<Value = BenchmarkComponent> {
    PossibleValuesParser::new(BenchmarkComponent::ALL.map(BenchmarkComponent::as_str))
        .try_map(|s| s.parse::<BenchmarkComponent>())
}

/// `warpt benchmark list`
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this suite's benchmarks.
    #[arg(long)]
    pub suite: Option<String>,
    /// Only benchmarks exercising these components (repeatable, comma-separated).
    #[arg(long = "component", value_delimiter = ',', value_name = "COMPONENT", value_parser = component_parser())]
    pub components: Vec<BenchmarkComponent>,
    /// Print the specs as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `warpt benchmark describe`
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The suite, e.g. `micro`.
    #[arg(long)]
    pub suite: String,
    /// The benchmark, e.g. `cpu_flops`.
    #[arg(long)]
    pub benchmark: String,
    /// Print the spec as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What to run and how to measure it: shared by `benchmark run` and `noise`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Run this suite (all its benchmarks unless --benchmark narrows it).
    #[arg(long)]
    pub suite: Option<String>,
    /// Run only this benchmark (repeatable).
    #[arg(long = "benchmark", value_name = "NAME")]
    pub benchmarks: Vec<String>,
    /// Run these components' default benchmarks, or filter the suite by them
    /// (repeatable, comma-separated).
    #[arg(long = "component", value_delimiter = ',', value_name = "COMPONENT", value_parser = component_parser())]
    pub components: Vec<BenchmarkComponent>,
    /// Measurement time per benchmark in seconds (default: each benchmark's own).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Warm-up per benchmark before measuring, in seconds [default: 1].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub burnin_seconds: Option<f64>,
    /// Override a benchmark parameter (repeatable); see `benchmark describe`.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_param)]
    pub params: Vec<warpt_harness::ParamArg>,
    /// Seed for every random generator the benchmarks use [default: 42].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Target half-width of the median's 95% confidence interval, in percent
    /// of the median: sampling stops once every series is this precise (and
    /// the minimum time has passed) [default: 1].
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub precision: Option<f64>,
    /// Multiply every stage time limit (setup 30 s, warm-up 15 s + burn-in,
    /// measurement 3 x duration + 30 s, validation 30 s) by this [default: 1].
    #[arg(long, value_name = "FACTOR", value_parser = parse_multiplier)]
    pub timeout_multiplier: Option<f64>,
    /// Seconds the whole run may take: past them the benchmark running is
    /// stopped and the rest are not started, each a `timeout` result, and
    /// every finished result is kept; 0 for no limit [default: 14400 (4 h)].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub suite_timeout: Option<f64>,
    /// Percentiles to add to every metric's stats, exports and tables, comma-separated
    /// (`50,90,99.9` gives stats keys p50, p90, p99.9) [default: p25 p50 p75 p90 p95 p99].
    #[arg(long, value_name = "LIST", value_parser = parse_percentiles)]
    pub percentiles: Option<warpt_model::Percentiles>,
    /// A label recorded with the run (repeatable): `results list --label KEY=VALUE` finds it;
    /// shown by `results list/show`, exports and reports.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// A sentence recorded with the run ("before the BIOS update").
    #[arg(long, value_name = "TEXT", value_parser = parse_description)]
    pub description: Option<String>,
    /// Run benchmarks inside this process instead of a worker process each
    /// (for debugging: no time limits, and a crash ends the whole run).
    #[arg(long)]
    pub in_process: bool,
    /// Read this configuration file instead of looking for warpt.toml
    /// (./warpt.toml, then $XDG_CONFIG_HOME/warpt/warpt.toml).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// `warpt benchmark run`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to run and how.
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Run the whole plan N times, each repetition a trial with its own
    /// statistics (benchmarks in a new random order each time); the table
    /// and `benchmarks` then show the median of the trial medians.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Background telemetry.
    #[command(flatten)]
    pub monitor: MonitorFlags,
    /// Where the run is recorded.
    #[command(flatten)]
    pub store: StoreFlags,
    /// Re-run a previous export's exact plan, parameters, seed and settings.
    #[arg(
        long,
        value_name = "FILE.json",
        conflicts_with_all = ["suite", "benchmarks", "components", "params", "seed", "duration", "burnin_seconds", "precision", "config", "repeat"]
    )]
    pub replay: Option<PathBuf>,
    /// Read what to run from this JSON file (`-`: stdin) instead of the
    /// flags above: the run request of `POST /api/v1/runs` (`suite`,
    /// `benchmarks`, `components`, `params`, `duration`, ..., docs/serve.md),
    /// how a program (the Python package) asks for a run.
    #[arg(
        long,
        value_name = "FILE.json",
        conflicts_with_all = ["replay", "suite", "benchmarks", "components", "params", "seed", "duration", "burnin_seconds", "precision", "timeout_multiplier", "suite_timeout", "percentiles", "labels", "description", "in_process", "repeat"]
    )]
    pub request: Option<PathBuf>,
    /// Print the plan (benchmarks and effective parameters) and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// Write the results to warpt_benchmark_<SUITE_OR_COMPONENT>_<TIMESTAMP>_<RANDOM>.json
    /// in the current directory.
    #[arg(long, conflicts_with = "export_file")]
    pub export: bool,
    /// Write the results to this file.
    #[arg(long, value_name = "PATH")]
    pub export_file: Option<PathBuf>,
    /// Print the suite run as JSON on stdout (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Write progress as JSON lines on stdout instead of the progress bar
    /// (the results table goes to stderr): how `warpt serve` follows a run.
    #[arg(long, hide = true, conflicts_with = "json")]
    pub events: bool,
    /// Give the suite run this id instead of one made from the start time
    /// (`warpt serve` names a run before it starts).
    #[arg(long, hide = true, value_name = "ID", value_parser = parse_run_id)]
    pub run_id: Option<String>,
}

/// A run id chosen by the caller: 1 to 64 of `[A-Za-z0-9_.-]`.
fn parse_run_id(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(s.to_string())
    } else {
        Err("a run id is 1 to 64 letters, digits, '-', '_' or '.'".into())
    }
}
