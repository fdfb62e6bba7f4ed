//! `warpt ci ...`: benchmarks in continuous integration.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{StoreFlags, parse_threshold};

/// `warpt ci ...`
#[derive(Debug, Subcommand)]
pub enum CiCommand {
    /// Compare two git refs of the repository on this machine: both checked
    /// out as worktrees (your tree untouched), built, and run with the same
    /// `benchmark run`, `exec` or `harness run` arguments in randomized interleaved trials; a
    /// Markdown verdict for the pull request (exit 1 on a regression).
    Pr(CiPrArgs),
    /// Record one run of the current commit into the history (the store, or
    /// exports in a directory committed to the repository), show each
    /// metric's trend, and alert when the newest run sits after a
    /// regression step (exit 1).
    Record(CiRecordArgs),
}

/// `warpt ci record`
#[derive(Debug, Args)]
pub struct CiRecordArgs {
    /// The branch recorded with the run (CI checkouts are often detached).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// Keep the history as exports in this directory (e.g.
    /// `benchmarks/history`, committed to the repository) instead of the store.
    #[arg(long, value_name = "DIR")]
    pub history_dir: Option<PathBuf>,
    /// Write a Markdown alert here when the newest run sits after a regression step.
    #[arg(long, value_name = "FILE")]
    pub alert_file: Option<PathBuf>,
    /// Steps smaller than this percentage are never alerted (however sure
    /// the change-point test is of them: a short history knows its noise poorly).
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = parse_threshold)]
    pub threshold: f64,
    /// The store (without --history-dir).
    #[command(flatten)]
    pub store: StoreFlags,
    /// The command recorded: `benchmark run ...`, `exec ...` or `harness run ...`.
    #[arg(last = true, required = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// `warpt ci pr`
#[derive(Debug, Args)]
pub struct CiPrArgs {
    /// The base ref (a branch, tag or commit), e.g. `origin/main`.
    #[arg(long, value_name = "REF")]
    pub base: String,
    /// The ref under test.
    #[arg(long, value_name = "REF", default_value = "HEAD")]
    pub head: String,
    /// A shell command that builds a checkout, run in each worktree first.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// A directory inside the repository.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workdir: PathBuf,
    /// Rounds: trials per side. Without it, 5 (10 with --duet), then as many
    /// again while a verdict is inconclusive or `~` only within a band wider
    /// than 1.5 times --threshold, up to three times that.
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub trials: Option<u32>,
    /// Seed of the order of each round (which side runs first).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run base and head at the same time, each on its own half of the CPUs (swapped
    /// every round), instead of one after the other; the verdict from the mean ratio of
    /// each two rounds (Duet benchmarking).
    #[arg(long)]
    pub duet: bool,
    /// Changes smaller than this percentage are never called a regression.
    #[arg(long, value_name = "PCT", default_value_t = warpt_report::compare::DEFAULT_THRESHOLD_PCT, value_parser = parse_threshold)]
    pub threshold: f64,
    /// Changes of a counted metric (`exec --measure instructions`, `harness run
    /// --measure instructions`) within this many percent are `~`.
    #[arg(long, value_name = "PCT", default_value_t = warpt_report::compare::DEFAULT_COUNT_THRESHOLD_PCT, value_parser = parse_threshold)]
    pub count_threshold: f64,
    /// Exit 1 when a metric is inconclusive, as for a regression.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// Write the verdict as Markdown (a pull-request comment) to this file.
    #[arg(long, value_name = "FILE")]
    pub comment: Option<PathBuf>,
    /// Write the head's results, judged against the base, as JUnit XML.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Where the two runs are recorded.
    #[command(flatten)]
    pub store: StoreFlags,
    /// The command run in both checkouts: `benchmark run ...`, `exec ...` or
    /// `harness run ...` (whose reports go to a directory per side, removed
    /// with the checkouts).
    #[arg(last = true, required = true, value_name = "ARGS")]
    pub args: Vec<String>,
}
