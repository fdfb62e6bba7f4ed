//! The command line: every command, flag and its help text.
//!
//! This file holds the top level and the value parsers; each family of
//! commands has its own file (`machine` for the small ones and the flags
//! several commands share).

use clap::{Parser, Subcommand};

mod benchmark;
mod ci;
mod exec;
mod fleet;
mod harness;
mod machine;
mod results;

pub use benchmark::*;
pub use ci::*;
pub use exec::*;
pub use fleet::*;
pub use harness::*;
pub use machine::*;
pub use results::*;

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
    /// Benchmark shell commands (hyperfine's flags, warpt's statistics, interleaved).
    Exec(Box<ExecArgs>),
    /// List, describe and run benchmarks.
    Benchmark {
        /// The benchmark action.
        #[command(subcommand)]
        action: BenchmarkCommand,
    },
    /// Your own benchmarks under warpt's harness: discover baseline/optimized pairs and kernels.
    Harness {
        /// The harness action.
        #[command(subcommand)]
        action: HarnessCommand,
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
    /// Serve the result history over HTTP: a REST API under /api/v1 (runs,
    /// compare, series, reports, read-only SQL) and Prometheus /metrics.
    Serve(ServeArgs),
    /// The result history: list, show, query and import recorded runs.
    Results {
        /// The results action.
        #[command(subcommand)]
        action: ResultsCommand,
    },
    /// Report runs for people (Markdown, HTML with charts) or tools (JSON).
    Report(ReportArgs),
    /// One number per component and suite: a run's headline figures against a
    /// reference run's (geometric mean of the ratios, 95% CI, what is missing).
    Score(ScoreArgs),
    /// Many machines: benchmark runs dispatched through Slurm, their status,
    /// their exports collected, and the machines slower than their peers.
    Fleet {
        /// The fleet action.
        #[command(subcommand)]
        action: FleetCommand,
    },
    /// Benchmarks in CI: two git refs compared on this machine, interleaved.
    Ci {
        /// The CI action.
        #[command(subcommand)]
        action: CiCommand,
    },
    /// Measure this machine's run-to-run noise with A/A repetitions and store
    /// it: `benchmark compare` then widens its threshold to what noise explains.
    Noise(NoiseArgs),
    /// Show the effective configuration and where each value comes from.
    Config {
        /// The config action.
        #[command(subcommand)]
        action: ConfigCommand,
    },
    /// Fill a new store with a demo history (this machine's real tiny runs,
    /// two made-up machines derived from them, a regression step, sweeps),
    /// then explore it with `warpt serve --store PATH`.
    Demo(DemoArgs),
    /// Print a shell completion script (e.g. `warpt completions bash > /etc/bash_completion.d/warpt`).
    Completions(CompletionsArgs),
    /// Print the man page (roff): `warpt man > warpt.1; man ./warpt.1`.
    Man,
    /// Run one benchmark for a parent warpt (request on stdin, events on stdout).
    #[command(name = "__worker", hide = true)]
    Worker,
}

/// `--param NAME=VALUE`: split at the first `=`, the name trimmed (the
/// plan then compares it exactly).
fn parse_param(s: &str) -> Result<warpt_harness::ParamArg, String> {
    s.parse()
        .map_err(|e: warpt_harness::PlanError| e.to_string())
}

pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    warpt_model::labels::parse_label(s)
}

/// A label's key alone (`compare --label KEY`).
pub(crate) fn parse_label_key(s: &str) -> Result<String, String> {
    match warpt_model::labels::key_problem(s) {
        Some(why) => Err(why),
        None => Ok(s.to_string()),
    }
}

pub(crate) fn parse_description(s: &str) -> Result<String, String> {
    match warpt_model::labels::description_problem(s) {
        Some(why) => Err(why),
        None => Ok(s.to_string()),
    }
}

pub(crate) fn parse_percentiles(s: &str) -> Result<warpt_model::Percentiles, String> {
    warpt_model::Percentiles::parse(s)
}

pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
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

/// A time limit: seconds, more than none.
fn positive_seconds(s: &str) -> Result<f64, String> {
    match parse_seconds(s)? {
        0.0 => Err(format!("{s}: give a limit of more than 0 seconds")),
        v => Ok(v),
    }
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

/// `--format`'s values: the formats `registry` holds, each with its line of
/// help, so a format added there is a value here.
pub(crate) fn formats<K: warpt_export::Input>(
    registry: &'static warpt_export::Registry<K>,
) -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        registry
            .formats()
            .iter()
            .map(|f| clap::builder::PossibleValue::new(f.name()).help(f.about())),
    )
}

/// A percentage of at least 0 (`--threshold`, `--assume-noise`).
pub(crate) fn parse_threshold(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not a percentage >= 0"))
    }
}
