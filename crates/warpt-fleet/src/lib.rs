//! `warpt fleet`: benchmark runs dispatched to many machines through Slurm.
//!
//! warpt does not schedule anything itself: a fleet job is an ordinary
//! Slurm batch job on exclusive nodes, one step per node, each running
//! `warpt benchmark run` and recording into the shared store (or an export
//! in a directory every node sees). This crate is the Slurm side:
//!
//! - [`script`]: the sbatch script for a submission;
//! - [`slurm`]: calling `sbatch`, `squeue`, `scontrol` and `sacct`, and
//!   reading what they print;
//! - [`layout`]: a job's directory (node records, exports, logs) and the
//!   record each node writes as it starts and ends;
//! - [`status`]: Slurm's view and the nodes' records merged into one state
//!   per node: pending, running, done or failed, with the reason;
//! - [`runs`]: the run path's side: a submission checked before it waits
//!   in a queue, one node's run (through warpt-run), the exports collected.

pub mod layout;
pub mod runs;
pub mod script;
pub mod slurm;
pub mod status;

pub use layout::{JobDir, NodeRecord, NodeState};
pub use script::Submission;
pub use slurm::{JobInfo, Slurm};
pub use status::{Missing, NodeStatus, Phase, Watched, missing, node_statuses, watch};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// Bad input, or Slurm's commands are missing (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A Slurm command failed.
    #[error("{command}: {message}")]
    Slurm {
        /// The command line.
        command: String,
        /// What it printed on stderr (or why it could not start).
        message: String,
    },
    /// A file in the job directory.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}
