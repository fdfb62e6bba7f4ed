//! The machine warpt runs on.
//!
//! Reads procfs and sysfs directly (no external command): the CPU model and
//! features, the cache hierarchy, the CPUs this process may use, memory and
//! the operating system. Everything degrades to "unknown" rather than failing:
//! a container or a non-Linux kernel may hide any of it.

mod cpu;
mod energy;
mod git;
mod host;
mod probes;

pub use cpu::{
    allowed_cpus, cache_hierarchy, cpu_info, last_level_cache_bytes, pin_current_thread,
};
pub use energy::{EnergySnapshot, EnergyUnavailable};
pub use git::git_state;
pub use host::{hostname, memory_info, os_info};
pub use probes::{boost, current_mhz, governor, load_average, microcode, smt};

use warpt_model::ListOutput;

/// Captures the snapshot stored once per suite run and printed by `warpt list`.
pub fn snapshot() -> ListOutput {
    ListOutput {
        cpu: cpu_info(),
        memory: memory_info(),
        os: os_info(),
    }
}
