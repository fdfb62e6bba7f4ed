//! The flags of the commands about this machine and its services:
//! `list`, `schema`, `stress`, `monitor`, `net-server`, `serve`, `config`,
//! `completions`, and the store and monitor flags several commands share.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{parse_interval, parse_param, parse_seconds};

/// `warpt demo`
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The store to create: a SQLite file that does not exist yet, or an
    /// empty PostgreSQL database (`postgres://` URL). The demo never writes
    /// into a store that holds runs.
    #[arg(long, value_name = "PATH")]
    pub store: PathBuf,
    /// Leave out the serving sweep (it runs against a scripted
    /// OpenAI-compatible server on 127.0.0.1).
    #[arg(long)]
    pub no_serving: bool,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `warpt completions`
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
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
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_param)]
    pub params: Vec<warpt_harness::ParamArg>,
    /// Seed for generated data.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Background telemetry.
    /// A label recorded with the run (repeatable): `results list --label KEY=VALUE` finds it.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = super::parse_label)]
    pub labels: Vec<(String, String)>,
    /// A sentence about the run, stored and shown with it.
    #[arg(long, value_name = "TEXT", value_parser = super::parse_description)]
    pub description: Option<String>,
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
    /// Record the run in this store instead of the configured one: a SQLite
    /// file or a `postgres://` URL ($WARPT_STORE, `store` in warpt.toml,
    /// else $XDG_DATA_HOME/warpt/results.db).
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
    /// Do not record the run in the store.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
}

impl StoreFlags {
    /// What the two flags choose.
    pub fn choice(&self) -> warpt_run::StoreChoice {
        warpt_run::StoreChoice::from_flags(self.store.clone(), self.no_store)
    }
}

/// `--monitor`, `--monitor-interval`, `--monitor-output`, shared by
/// `benchmark run`, `harness run` and `stress`.
#[derive(Debug, Args)]
pub struct MonitorFlags {
    /// Sample CPU, memory, temperatures, power and GPUs in the background
    /// (each benchmark result gets a telemetry summary of its measurement window,
    /// and its energy: energy_j, mean_power_w, energy_per_<unit>).
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

/// `warpt serve`
#[derive(Debug, Args)]
#[command(after_help = "\
Who may do what (docs/security.md):
  anyone who reaches the port    reads the history (unless --token-for-reads)
  whoever holds the token        runs benchmarks on this machine as this user, cancels runs
                                 and queries the store; with --allow-commands also runs any
                                 command, and with --allow-paths DIR reads and writes under DIR
Beyond loopback the token file must be private (chmod 600) and hold at least 32 bytes; the
server speaks plain HTTP, so put a TLS-terminating reverse proxy in front of it (docs/serve.md).")]
pub struct ServeArgs {
    /// Address and port to listen on (port 0: any free port). Anything but
    /// loopback needs --token-file.
    #[arg(long, default_value = "127.0.0.1:8321", value_name = "ADDR:PORT")]
    pub bind: String,
    /// The store to serve ($WARPT_STORE, `store` in warpt.toml, else
    /// $XDG_DATA_HOME/warpt/results.db).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// The bearer token for POST and DELETE endpoints (default:
    /// $XDG_CONFIG_HOME/warpt/token, created with mode 0600 when missing).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Keep up to N answers to reads (runs, compare, series, ...) until the
    /// store changes; 0 computes every answer afresh.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub cache_entries: usize,
    /// Let token holders set parameters that are commands (mlperf_external's
    /// `command`, linpack_external's `binary`, the harness suite's `file`
    /// and `python`, ...): whoever holds the token then runs any command
    /// as this user. Off: such a run is refused with 403.
    #[arg(long)]
    pub allow_commands: bool,
    /// Let token holders name files and directories under DIR in path
    /// parameters (inputs read, outputs written); repeatable. Symlinks are
    /// followed and `..` refused. None: every path parameter is refused.
    #[arg(long, value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
    /// Also answer requests sent to this host name (the server answers IP
    /// addresses and localhost; other names are refused with 421, which
    /// stops DNS-rebinding pages); repeatable.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Require the token on every request, reads included (the dashboard's
    /// static files excepted); the dashboard sends the token typed in its
    /// SQL or Live view with every request of that tab.
    #[arg(long)]
    pub token_for_reads: bool,
    /// Drop a connection that has not sent a whole request head within
    /// this many seconds (a client that sends half a header and waits).
    #[arg(long, value_name = "SECONDS",
          default_value_t = warpt_server::listen::LIMITS.header_read.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// Answer 503 to a request not answered (its body read included)
    /// within this many seconds of its head; a run's live events
    /// (WebSocket) are not bound by it.
    #[arg(long, value_name = "SECONDS",
          default_value_t = warpt_server::listen::LIMITS.request.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub request_timeout: u64,
    /// Connections open at once; one more is closed as soon as it is
    /// accepted.
    #[arg(long, value_name = "N",
          default_value_t = warpt_server::listen::LIMITS.connections as u64,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_connections: u64,
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
