//! `warpt results ...` and `warpt report`: the stored history and what is made of it.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{formats, parse_threshold};

/// What `report --by` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportBy {
    /// Machines: every stored run selected by --machine, --since, --until,
    /// --suite, --benchmark, --fleet-job, grouped by the machine it ran on.
    Machine,
}

/// `warpt report`
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Runs: export files or runs in the store (id, prefix, `latest`); later
    /// runs are compared with the first.
    #[arg(
        required_unless_present = "by",
        conflicts_with = "by",
        value_name = "RUN_OR_FILE"
    )]
    pub runs: Vec<String>,
    /// Compare machines across the stored runs instead: per workload each
    /// machine's figure with its CI, the best machine by throughput, per
    /// watt and per cost (machines.toml) with the margin's significance,
    /// and scaling lines.
    #[arg(long, value_enum)]
    pub by: Option<ReportBy>,
    /// With --by machine: only these machines (host name or fingerprint
    /// prefix; repeatable).
    #[arg(long, requires = "by")]
    pub machine: Vec<String>,
    /// With --by machine: only runs started at or after this time or date.
    #[arg(long, requires = "by")]
    pub since: Option<String>,
    /// With --by machine: only runs started before this time or date.
    #[arg(long, requires = "by")]
    pub until: Option<String>,
    /// With --by machine: only this suite.
    #[arg(long, requires = "by")]
    pub suite: Option<String>,
    /// With --by machine: only this benchmark.
    #[arg(long, requires = "by")]
    pub benchmark: Option<String>,
    /// With --by machine: only the runs of this fleet job (Slurm job id).
    #[arg(long, requires = "by", value_name = "JOB")]
    pub fleet_job: Option<String>,
    /// With --by machine: each machine's price, `[machines.HOST]
    /// cost_per_hour = 3.2` (default: ./machines.toml when it exists).
    #[arg(long, requires = "by", value_name = "FILE")]
    pub machines_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, default_value = "md", value_parser = formats(&warpt_export::REPORT))]
    pub format: String,
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
    /// Run one read-only SQL statement against the store (docs/store.md lists its tables).
    Query(ResultsQueryArgs),
    /// Record export files (`benchmark run --export`) made here or elsewhere, or what
    /// hyperfine, criterion, Google Benchmark or pytest-benchmark wrote.
    Import(ResultsImportArgs),
    /// Write a run for other tools: bmf, gab, junit, csv, or warpt's own json.
    Export(ResultsExportArgs),
    /// A metric over the stored runs with its change points; exit 1 when the
    /// latest run sits after a step in the bad direction (a nightly alert).
    Trend(ResultsTrendArgs),
    /// Copy a store's whole history into another: a machine's SQLite file
    /// into a shared PostgreSQL database (runs already there are kept;
    /// an interrupted copy finishes when run again).
    Migrate(ResultsMigrateArgs),
}

/// `warpt results migrate`
#[derive(Debug, Args)]
pub struct ResultsMigrateArgs {
    /// The store to copy from: a SQLite file (or a `postgres://` URL).
    #[arg(long, value_name = "FILE.db|URL")]
    pub from: String,
    /// The store to copy into: a `postgres://` URL (or a SQLite file),
    /// created or brought up to date first.
    #[arg(long, value_name = "URL|FILE.db")]
    pub to: String,
    /// What was copied, as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `warpt results trend`
#[derive(Debug, Args)]
pub struct ResultsTrendArgs {
    /// The benchmark.
    #[arg(long)]
    pub benchmark: String,
    /// The metric (e.g. `gflops`, `bandwidth`).
    #[arg(long)]
    pub metric: String,
    /// Only this suite.
    #[arg(long)]
    pub suite: Option<String>,
    /// A tag the metric must carry, KEY=VALUE (repeatable), e.g. `--tags kernel=triad`.
    #[arg(long = "tags", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Only runs on this machine: host name or fingerprint prefix (needed
    /// when the history holds several).
    #[arg(long)]
    pub machine: Option<String>,
    /// JSON on stdout (`points`, `change_points`).
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt results export`
#[derive(Debug, Args)]
pub struct ResultsExportArgs {
    /// The run: an export file or a run in the store (id, prefix, `latest`).
    pub run: String,
    /// Output format.
    #[arg(long, value_parser = formats(&warpt_export::RUN))]
    pub format: String,
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
    /// The store: a SQLite file or a `postgres://` URL ($WARPT_STORE,
    /// `store` in warpt.toml, else $XDG_DATA_HOME/warpt/results.db).
    #[arg(long, value_name = "PATH|URL")]
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
    /// Only runs recorded with this label (`--label` of the run; repeatable: all of them).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::cli::parse_label)]
    pub labels: Vec<(String, String)>,
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
    /// warpt's JSON exports, or what another tool wrote: hyperfine's
    /// `--export-json` file, criterion's `target/criterion` directory,
    /// Google Benchmark's `--benchmark_format=json` output, pytest-benchmark's
    /// `--benchmark-json` file. Each is recognised by its content.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub files: Vec<PathBuf>,
    /// Read every input as this format instead of recognising it.
    #[arg(long, value_parser = ["warpt", "hyperfine", "criterion", "gbench", "pytest-benchmark"])]
    pub format: Option<String>,
    /// Print what was imported as JSON (file, format, run id, benchmarks, whether new).
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt score`
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// The run to score: id, unique prefix, `latest` or `label:KEY=VALUE`.
    #[arg(default_value = "latest")]
    pub run: String,
    /// What 1.0 means: a stored run (id, prefix, `latest`, `label:KEY=VALUE`) or a file (a
    /// reference written by --save-reference, or a run's JSON export)
    /// [default: the reference shipped with warpt, docs/score.md].
    #[arg(long, value_name = "RUN|FILE")]
    pub reference: Option<String>,
    /// Also write RUN's headline figures as a reference file (for --reference on other machines).
    #[arg(long, value_name = "PATH")]
    pub save_reference: Option<PathBuf>,
    /// The score as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}
