//! The machine warpt runs on.
//!
//! Reads procfs and sysfs directly for every core fact: the CPU model and
//! features, the cache hierarchy, the CPUs this process may use, memory,
//! block devices, mounts, network interfaces and the operating system.
//! NVIDIA GPUs come from NVML loaded at run time; optional extras (DIMMs,
//! tool versions, `systemd-detect-virt`) from commands that may be absent.
//! [`procstat`] accounts CPU time over a window (steal, other processes);
//! [`clock`] finds the clock a core really runs at; [`rss`] the memory a
//! run's processes hold.
//! Everything degrades to "unknown" rather than failing: a container or a
//! non-Linux kernel may hide any of it.

pub mod clock;
/// Processor facts: model, topology, caches, frequencies.
mod cpu;
/// Block devices, mounted file systems and network interfaces.
mod devices;
/// Memory modules from SMBIOS through `dmidecode`.
mod dimms;
/// Package energy from RAPL counters.
mod energy;
/// The git state of a directory.
mod git;
/// GPUs: what is installed and what the driver reports.
mod gpu;
/// Host facts: OS, kernel, hostname, memory.
mod host;
/// The CPU's SIMD instruction set for floating-point multiply-add.
pub mod isa;
/// The background monitor (`--monitor`).
pub mod monitor;
/// The theoretical FMA peak of this machine, and how it was derived.
pub mod peak;
/// Energy over a window from the monitor's power samples, per source.
pub mod power;
/// Host state that changes how fast things run: governor, SMT, turbo.
mod probes;
pub mod procstat;
pub mod rss;
/// Reading sysfs and procfs files and directories.
mod sysfs;
/// Programs on PATH that benchmarks may use, with their versions.
mod tools;
/// Whether we run under a hypervisor or inside a container.
mod virt;

pub use cpu::{
    LLC_OVERRIDE, allowed_cpus, cache_hierarchy, check_llc_override, cpu_info,
    last_level_cache_bytes, physical_cores, pin_current_thread, pin_current_thread_to,
};
pub use devices::{mounts, network, storage};
pub use energy::{EnergySnapshot, EnergyUnavailable, POWERCAP, POWERCAP_ENV, RAPL_FIX};
pub use git::git_state;
pub use gpu::gpus;
pub use host::{hostname, memory_info, memory_quick, os_info};
pub use probes::{boost, current_mhz, governor, load_average, microcode, smt};
pub use tools::{run_with_timeout, run_within, tools, which};
pub use virt::{container, virtualization};

use warpt_model::ListOutput;

/// Captures the snapshot stored once per suite run and printed by `warpt list`.
pub fn snapshot() -> ListOutput {
    let (gpus, gpu_notes) = gpus();
    ListOutput {
        cpu: cpu_info(),
        memory: memory_info(),
        os: os_info(),
        gpus,
        gpu_notes,
        compute_adapters: Vec::new(),
        model_support: Vec::new(),
        storage: storage(),
        mounts: mounts(),
        network: network(),
        tools: tools(),
    }
}
