//! `warpt exec`: any command as a benchmark, timed as hyperfine times it
//! and judged with warpt's statistics, several commands interleaved.
//!
//! - [`spawn`]: one run of one command (wall time, user and system CPU,
//!   peak RSS from wait4, the exit, a time limit);
//! - [`plan`]: the commands after parameter substitution, through a shell
//!   or split into argv;
//! - [`engine`]: the shell's spawn time, set-up, warm-up, interleaved
//!   rounds to each command's stopping rule, clean-up;
//! - [`state`]: what the engine and the duet share: each job's state and
//!   result, the shell's cost, the progress observer;
//! - [`report`]: one `exec` suite run and hyperfine's summary lines;
//! - [`session`]: one invocation: calibrate, measure, count, report;
//! - [`counts`]: `--measure instructions`: executed instructions, counted;
//! - [`duet`]: `--duet`: two commands at once on separate CPUs, judged on
//!   their paired runs;
//! - [`hyperfine`]: hyperfine's JSON, Markdown and CSV exports;
//! - [`declared`]: commands declared as `[[benchmarks]]` in configuration,
//!   the `user` suite under warpt's whole harness.

pub mod counts;
pub mod declared;
pub mod duet;
pub mod engine;
pub mod hyperfine;
pub mod plan;
pub mod report;
pub mod session;
pub mod spawn;
pub mod state;

pub use engine::{Calibration, JobResult, ShellCost, calibrate, measure};
pub use plan::Measure;
pub use plan::{ExecPlan, Job, Parameter, Shell};
pub use spawn::{Captured, Exit, Output, Sample, Spawn};

/// What can stop `warpt exec`.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Bad input (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A command could not be started.
    #[error("cannot start {0}")]
    Spawn(String),
    /// A file or wait failed.
    #[error("{0}")]
    Io(String),
}
