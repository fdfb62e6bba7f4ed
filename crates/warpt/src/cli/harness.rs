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
