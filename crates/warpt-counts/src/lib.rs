//! Deterministic measures of a command: how many instructions it executed,
//! and (under cachegrind) its simulated cache misses, counts that do not
//! move with the machine's load the way time does.
//!
//! - [`source`]: where counts come from here: the CPU's own counters
//!   through `perf_event_open(2)` when the kernel and the hypervisor expose
//!   them, else valgrind's cachegrind, else nothing (with the reason);
//! - [`perf`]: one command counted by the CPU's counters;
//! - [`cachegrind`]: one command counted under cachegrind, its output read
//!   and the estimated-cycles model.

pub mod cachegrind;
pub mod perf;
pub mod source;

pub use source::{Source, detect};

/// One command's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Instructions executed in user space, the command and its children.
    pub instructions: u64,
    /// Cachegrind's simulated cache behaviour; `None` from the CPU's counters.
    pub cache: Option<CacheCounts>,
}

/// Cachegrind's simulated misses (its first-level and last-level caches
/// modelled on this machine's, instruction and data together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheCounts {
    /// Data reads and writes.
    pub data_refs: u64,
    /// First-level misses, instruction and data.
    pub l1_misses: u64,
    /// Last-level misses, instruction and data.
    pub ll_misses: u64,
}

impl CacheCounts {
    /// The estimated cycles of a run with `instructions` executed: every
    /// instruction and data reference 1 cycle, a first-level miss that hits
    /// the last level 10 more, a last-level miss 100 more. The model of
    /// callgrind's `--cache-sim` summary and of iai, stated so it can be
    /// checked; a figure to compare runs of one program, not a prediction
    /// of a real CPU's cycles.
    pub fn estimated_cycles(&self, instructions: u64) -> u64 {
        let l1_only = self.l1_misses.saturating_sub(self.ll_misses);
        instructions
            .saturating_add(self.data_refs)
            .saturating_add(l1_only.saturating_mul(10))
            .saturating_add(self.ll_misses.saturating_mul(100))
    }
}

/// What can stop a count.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// No source of counts on this machine.
    #[error("no instruction counts here: {0}")]
    Unavailable(String),
    /// The command could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The command (or valgrind) exited unsuccessfully.
    #[error("{0}")]
    Failed(String),
    /// Reading the counts failed.
    #[error("reading the counts: {0}")]
    Read(String),
}
