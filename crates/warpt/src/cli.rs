//! The command line: every command, flag and its help text.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use warpt_model::BenchmarkComponent;

/// Measure how fast this machine, and your workloads on it, really run.
#[derive(Debug, Parser)]
#[command(name = "warpt", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what this machine is: CPU, caches, memory, GPUs, disks, network, OS, tools.
    List(ListMachineArgs),
    /// List, describe and run benchmarks.
    Benchmark {
        /// The benchmark action.
        #[command(subcommand)]
        action: BenchmarkCommand,
    },
    /// Print the JSON Schema of an export (a `BenchmarkSuiteRun`) or of `warpt list --json`.
    Schema(SchemaArgs),
    /// Sustained load on one component with error detection (burn-in).
    Stress(StressArgs),
    /// Sample CPU, memory, temperatures, power and GPUs and show them live.
    Monitor(MonitorArgs),
    /// Serve the network benchmarks' protocol, as the peer of
    /// `--param host=ADDR` on another machine (like `iperf3 -s`).
    NetServer(NetServerArgs),
    /// The result history: list, show, query and import recorded runs.
    Results {
        /// The results action.
        #[command(subcommand)]
        action: ResultsCommand,
    },
    /// Report runs for people (Markdown, HTML with charts) or tools (JSON).
    Report(ReportArgs),
    /// Measure this machine's run-to-run noise with A/A repetitions and store
    /// it: `benchmark compare` then widens its threshold to what noise explains.
    Noise(NoiseArgs),
    /// Show the effective configuration and where each value comes from.
    Config {
        /// The config action.
        #[command(subcommand)]
        action: ConfigCommand,
    },
    /// Run one benchmark for a parent warpt (request on stdin, events on stdout).
    #[command(name = "__worker", hide = true)]
    Worker,
}

/// `warpt list`
#[derive(Debug, Args)]
pub struct ListMachineArgs {
    /// Print the full machine model as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Which document a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaType {
    /// An export: one `BenchmarkSuiteRun`.
    SuiteRun,
    /// `warpt list --json`: one `ListOutput`.
    List,
}

/// `warpt schema`
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which schema to print.
    #[arg(long = "type", value_enum, default_value = "suite-run")]
    pub kind: SchemaType,
}

/// `warpt stress`
#[derive(Debug, Args)]
pub struct StressArgs {
    /// What to load: cpu, ram, storage or network.
    #[arg(value_parser = ["cpu", "ram", "storage", "network", "gpu"])]
    pub target: String,
    /// Seconds under load (after the burn-in).
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = parse_seconds)]
    pub duration: f64,
    /// Seconds of load before recording starts.
    #[arg(long, value_name = "SECONDS", default_value = "0", value_parser = parse_seconds)]
    pub burnin_seconds: f64,
    /// Override a parameter (repeatable): threads, fraction, mb, path, size_mb, streams,
    /// message_kb; inject_error=1 corrupts one result to prove the detector works.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Seed for generated data.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Background telemetry.
    #[command(flatten)]
    pub monitor: MonitorFlags,
    /// Where the run is recorded.
    #[command(flatten)]
    pub store: StoreFlags,
    /// Print the stress run as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write warpt_stress_<TARGET>_<TIMESTAMP>_<RANDOM>.json in the current directory.
    #[arg(long, conflicts_with = "export_file")]
    pub export: bool,
    /// Write the stress run to this file.
    #[arg(long, value_name = "PATH")]
    pub export_file: Option<PathBuf>,
}

/// `--store` and `--no-store`, shared by `benchmark run` and `stress`.
#[derive(Debug, Clone, Default, Args)]
pub struct StoreFlags {
    /// Record the run in this SQLite store instead of the configured one
    /// ($WARPT_STORE, `store` in warpt.toml, else $XDG_DATA_HOME/warpt/results.db).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Do not record the run in the store.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
}

/// `--monitor`, `--monitor-interval`, `--monitor-output`, shared by
/// `benchmark run` and `stress`.
#[derive(Debug, Args)]
pub struct MonitorFlags {
    /// Sample CPU, memory, temperatures, power and GPUs in the background
    /// (each benchmark result gets a telemetry summary of its measurement window).
    #[arg(long = "monitor")]
    pub enabled: bool,
    /// Seconds between monitor samples (at least 0.05).
    #[arg(long = "monitor-interval", value_name = "SECONDS", default_value = "1", requires = "enabled", value_parser = parse_interval)]
    pub interval: f64,
    /// Write the monitor's timeline (a JSON list of samples) to this file.
    #[arg(long = "monitor-output", value_name = "PATH", requires = "enabled")]
    pub output: Option<PathBuf>,
}

/// `warpt monitor`
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Seconds between samples (at least 0.05).
    #[arg(long, value_name = "SECONDS", default_value = "1", value_parser = parse_interval)]
    pub interval: f64,
    /// Stop after this many seconds (default: run until interrupted).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Print each sample as one JSON line on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also serve the latest sample in the Prometheus text format on ADDR:PORT.
    #[arg(long, value_name = "ADDR:PORT")]
    pub prometheus: Option<String>,
}

/// `warpt net-server`
#[derive(Debug, Args)]
pub struct NetServerArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "0.0.0.0:7420")]
    pub bind: String,
    /// Exit after serving this many sessions (default: serve until stopped).
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<usize>,
    /// End any session after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub session_seconds: u64,
}

/// `warpt config ...`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print every setting, its value and its source (default, file, env, flag).
    Show(ConfigShowArgs),
}

/// `warpt config show`
#[derive(Debug, Args)]
pub struct ConfigShowArgs {
    /// Read this configuration file instead of looking for warpt.toml.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Print the configuration as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

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

/// Output formats of `benchmark compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    /// Aligned columns (benchstat-like).
    Table,
    /// A Markdown table (for a pull request comment).
    Md,
    /// The whole comparison as JSON.
    Json,
}

/// `warpt benchmark compare`
#[derive(Debug, Args)]
#[command(
    after_help = "Verdicts: improved, regressed, ~ (no change beyond the band), inconclusive \
(too noisy to tell: which side, and why). Exit status 1 only for a regression, or with \
--fail-on-inconclusive for an inconclusive metric too."
)]
pub struct CompareArgs {
    /// The baseline: an export file or a run in the store (id, prefix, `latest`);
    /// with --rerun, a warpt executable or a configuration file (.toml).
    pub base: String,
    /// The run compared with it: an export file or a run in the store; with
    /// --rerun, a warpt executable or a configuration file.
    pub current: String,
    /// Run BASE and CURRENT (two warpt binaries, or two configuration files for
    /// this warpt) again now, in randomized interleaved trials (A B, B A, ...),
    /// and judge the paired per-round differences. The `benchmark run`
    /// arguments for both go after `--`.
    #[arg(long)]
    pub rerun: bool,
    /// With --rerun: rounds, i.e. trials per side.
    #[arg(long, value_name = "N", default_value_t = 5, requires = "rerun", value_parser = clap::value_parser!(u32).range(2..=200))]
    pub trials: u32,
    /// With --rerun: seed of the order of each round (which side runs first).
    #[arg(long, value_name = "N", default_value_t = 42, requires = "rerun")]
    pub seed: u64,
    /// Changes within this many percent are `~` however significant.
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = parse_threshold)]
    pub threshold: f64,
    /// Take this run-to-run spread (coefficient of variation, percent) for
    /// every metric instead of the machine's noise profile or history; 0
    /// trusts a single run's own statistics.
    #[arg(long, value_name = "PCT", value_parser = parse_threshold)]
    pub assume_noise: Option<f64>,
    /// Exit 1 when any metric is inconclusive, as well as on a regression.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
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

fn parse_threshold(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not a percentage >= 0"))
    }
}

/// Formats of `warpt report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Markdown.
    Md,
    /// One self-contained HTML file with SVG charts.
    Html,
    /// JSON: the runs and the comparisons with the first.
    Json,
}

/// `warpt report`
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Runs: export files or runs in the store (id, prefix, `latest`); later
    /// runs are compared with the first.
    #[arg(required = true, value_name = "RUN_OR_FILE")]
    pub runs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
    /// Write here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// A monitor timeline (`--monitor-output`) to chart power, frequency and temperature.
    #[arg(long, value_name = "FILE.json")]
    pub telemetry: Option<PathBuf>,
    /// The store that run ids are looked up in.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt results ...`
#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// List recorded runs, newest first.
    List(ResultsListArgs),
    /// Show one recorded run (id, unique id prefix, or `latest`) as the table or JSON.
    Show(ResultsShowArgs),
    /// Run one read-only SQL statement against the store (see the README for its tables).
    Query(ResultsQueryArgs),
    /// Record export files (`benchmark run --export`) made here or elsewhere.
    Import(ResultsImportArgs),
    /// Write a run for other tools: bmf, gab, junit or csv.
    Export(ResultsExportArgs),
}

/// Formats of `results export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Bencher Metric Format JSON.
    Bmf,
    /// github-action-benchmark `customBiggerIsBetter` / `customSmallerIsBetter` JSON.
    Gab,
    /// JUnit XML: one testcase per benchmark.
    Junit,
    /// CSV: one row per metric.
    Csv,
}

/// `warpt results export`
#[derive(Debug, Args)]
pub struct ResultsExportArgs {
    /// The run: an export file or a run in the store (id, prefix, `latest`).
    pub run: String,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Write here instead of stdout. For gab, two files: PATH with `-bigger`
    /// and `-smaller` before its extension.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// For junit: also fail the benchmarks with a metric regressed against this run
    /// (judged as `benchmark compare` does; inconclusive metrics are named in the output).
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// With --baseline: the run-to-run spread to assume, as `benchmark compare --assume-noise`.
    #[arg(long, value_name = "PCT", requires = "baseline", value_parser = parse_threshold)]
    pub assume_noise: Option<f64>,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}

/// The store a `results` command reads.
#[derive(Debug, Clone, Default, Args)]
pub struct StorePath {
    /// The SQLite store ($WARPT_STORE, `store` in warpt.toml, else
    /// $XDG_DATA_HOME/warpt/results.db).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
}

/// `warpt results list`
#[derive(Debug, Args)]
pub struct ResultsListArgs {
    /// Only runs of this suite (stress runs: the target).
    #[arg(long)]
    pub suite: Option<String>,
    /// Only runs containing this benchmark.
    #[arg(long)]
    pub benchmark: Option<String>,
    /// Only runs on this machine: host name or fingerprint prefix.
    #[arg(long)]
    pub machine: Option<String>,
    /// Only runs started at or after this date or RFC 3339 time.
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only runs started before this date or RFC 3339 time.
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// At most this many runs.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt results show`
#[derive(Debug, Args)]
pub struct ResultsShowArgs {
    /// Run id, unique prefix, or `latest`.
    pub run: String,
    /// The whole run as JSON (an export) on stdout.
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt results query`
#[derive(Debug, Args)]
pub struct ResultsQueryArgs {
    /// One SQL statement; anything that would write is refused.
    pub sql: String,
    /// Rows as a JSON list of objects.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Rows as CSV with a header line.
    #[arg(long)]
    pub csv: bool,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt results import`
#[derive(Debug, Args)]
pub struct ResultsImportArgs {
    /// Export files (JSON `BenchmarkSuiteRun`s).
    #[arg(required = true, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,
    /// The store.
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
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
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
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "{s} is negative or not finite; give a number of seconds >= 0"
        ));
    }
    Ok(v)
}

fn parse_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v < 0.05 {
        return Err(format!("{s} is below the shortest interval, 0.05 s"));
    }
    Ok(v)
}

fn parse_multiplier(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("{s} must be a positive number"));
    }
    Ok(v)
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage"))?;
    if !v.is_finite() || v <= 0.0 || v > 100.0 {
        return Err(format!("{s} is outside (0, 100]"));
    }
    Ok(v)
}
