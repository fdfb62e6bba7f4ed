//! `warpt fleet ...`: benchmark runs on many machines through Slurm, and
//! the machines compared with their peers.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::StorePath;

/// `warpt fleet ...`
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Write an sbatch script and submit it: every node (exclusive) runs
    /// `warpt benchmark run` with the arguments after `--`, recording into
    /// the shared PostgreSQL store, or into exports in the fleet directory.
    Submit(FleetSubmitArgs),
    /// Per node: pending, running, done or failed, with Slurm's reasons
    /// (exit 1 when a node failed).
    Status(FleetStatusArgs),
    /// Import the nodes' exports into the store and name the nodes that
    /// produced nothing (exit 1 when any).
    Collect(FleetCollectArgs),
    /// Machines slower than their hardware peers on some metric, by a
    /// robust z-score (exit 1 when any: a cron job's alert).
    Outliers(FleetOutliersArgs),
    /// One node's part of a fleet job (run by `srun` inside the job).
    #[command(hide = true)]
    Node(FleetNodeArgs),
}

/// The fleet directory flag.
#[derive(Debug, Clone, Args)]
pub struct FleetDir {
    /// The fleet directory: job scripts, and per job the nodes' records,
    /// exports and logs. Every node must see it at this path (a shared
    /// file system).
    #[arg(
        long,
        value_name = "DIR",
        env = "WARPT_FLEET_DIR",
        default_value = "warpt-fleet"
    )]
    pub dir: PathBuf,
}

/// `warpt fleet submit`
#[derive(Debug, Args)]
pub struct FleetSubmitArgs {
    /// The Slurm partition.
    #[arg(long, short = 'p')]
    pub partition: Option<String>,
    /// How many nodes (one benchmark run each).
    #[arg(long, short = 'N', conflicts_with = "nodelist")]
    pub nodes: Option<u32>,
    /// These nodes, as a Slurm host list (`node[01-16]`).
    #[arg(long, short = 'w')]
    pub nodelist: Option<String>,
    /// Node features the nodes must have (`--constraint` of sbatch).
    #[arg(long, short = 'C')]
    pub constraint: Option<String>,
    /// Time limit of the job, in Slurm's format (`30`, `01:00:00`).
    #[arg(long, short = 't')]
    pub time: Option<String>,
    /// Another sbatch option for the script (repeatable), e.g.
    /// `--sbatch-arg=--account=proj`.
    #[arg(long = "sbatch-arg", value_name = "OPTION", allow_hyphen_values = true)]
    pub sbatch_args: Vec<String>,
    /// The job's name.
    #[arg(long, default_value = "warpt-fleet")]
    pub job_name: String,
    /// The warpt binary the nodes run (default: this one; every node must
    /// see it at this path).
    #[arg(long, value_name = "PATH")]
    pub warpt: Option<PathBuf>,
    /// The fleet directory.
    #[command(flatten)]
    pub dir: FleetDir,
    /// The shared store the nodes record into: a `postgres://` URL
    /// (default: the configured store when it is one; otherwise the nodes
    /// write exports for `fleet collect`).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Exports only, even when a PostgreSQL store is configured.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Print the script instead of submitting it.
    #[arg(long)]
    pub dry_run: bool,
    /// The job id and directory as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The `warpt benchmark run` arguments every node runs with.
    #[arg(last = true, value_name = "RUN ARGS")]
    pub run_args: Vec<String>,
}

/// `warpt fleet status`
#[derive(Debug, Args)]
pub struct FleetStatusArgs {
    /// The Slurm job id `fleet submit` printed.
    pub job: String,
    /// The fleet directory.
    #[command(flatten)]
    pub dir: FleetDir,
    /// Wait until no node is pending or running.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this many seconds (exit 1).
    #[arg(long, value_name = "SECONDS", requires = "wait")]
    pub timeout: Option<f64>,
    /// Per node as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `warpt fleet collect`
#[derive(Debug, Args)]
pub struct FleetCollectArgs {
    /// The Slurm job id.
    pub job: String,
    /// The fleet directory.
    #[command(flatten)]
    pub dir: FleetDir,
    /// What was imported and what is missing, as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The store to import into.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt fleet outliers`
#[derive(Debug, Args)]
pub struct FleetOutliersArgs {
    /// Only runs of this fleet job (a Slurm job id).
    #[arg(long, value_name = "JOB")]
    pub job: Option<String>,
    /// Only these machines (host name or fingerprint prefix; repeatable).
    #[arg(long)]
    pub machine: Vec<String>,
    /// Only runs started at or after this time or date (RFC 3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Only this suite.
    #[arg(long)]
    pub suite: Option<String>,
    /// Only this benchmark.
    #[arg(long)]
    pub benchmark: Option<String>,
    /// Flag a machine whose robust z-score is beyond this (both directions
    /// are computed; only the worse one flags).
    #[arg(long, default_value_t = 3.5, value_name = "Z")]
    pub z: f64,
    /// ... and which is at least this many percent worse than its peers'
    /// median (so a tiny spread does not flag a 0.1% difference).
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub min_deviation: f64,
    /// Findings as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StorePath,
}

/// `warpt fleet node` (inside a job step)
#[derive(Debug, Args)]
pub struct FleetNodeArgs {
    /// The fleet directory.
    #[command(flatten)]
    pub dir: FleetDir,
    /// Record nothing in a store: the export is the result.
    #[arg(long)]
    pub no_store: bool,
    /// The `warpt benchmark run` arguments.
    #[arg(last = true)]
    pub run_args: Vec<String>,
}
