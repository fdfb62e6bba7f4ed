//! The micro suite: hardware microbenchmarks with kernels written to be held
//! against their C counterparts.
//!
//! - [`cpu_flops`]: peak FMA throughput, fp64/fp32, one thread and all;
//! - [`mem_bandwidth`]: STREAM Copy/Scale/Add/Triad;
//! - [`mem_latency`]: pointer-chase latency across the cache hierarchy;
//! - [`disk_io`]: sequential throughput, random IOPS and latency of a file system;
//! - [`net`]: TCP throughput and round-trip time against a `warpt net-server`.

pub mod cpu_flops;
pub mod disk_io;
pub mod mem_bandwidth;
pub mod mem_latency;
pub mod net;

/// The four STREAM kernels, for the widest vector unit, chosen at run time.
mod stream_kernels;
/// `warpt stress` targets: sustained CPU and memory load with every result checked.
pub mod stress;
/// A team of pinned threads that run kernels in lock-step rounds.
mod team;

pub use warpt_system::peak::{Peak, theoretical_peak};

use warpt_harness::{Listed, ListedSuite};

/// The suite's name.
pub const SUITE: &str = "micro";

/// The suite's benchmarks, in the order `list` shows them.
const BENCHMARKS: &[Listed] = &[
    Listed::new(cpu_flops::spec, || Box::new(cpu_flops::CpuFlops::new())),
    Listed::new(mem_bandwidth::spec, || {
        Box::new(mem_bandwidth::MemBandwidth::default())
    }),
    Listed::new(mem_latency::spec, || {
        Box::new(mem_latency::MemLatency::default())
    }),
    Listed::new(disk_io::spec, || Box::new(disk_io::DiskIo::default())),
    Listed::new(net::bandwidth_spec, || {
        Box::new(net::NetBandwidth::default())
    }),
    Listed::new(net::latency_spec, || Box::new(net::NetLatency::default())),
];

/// The micro suite, for the registry.
pub const MICRO: ListedSuite = ListedSuite {
    name: SUITE,
    description: "hardware microbenchmarks: CPU FMA peak, STREAM memory bandwidth, memory latency, disk I/O, network",
    benchmarks: BENCHMARKS,
};
