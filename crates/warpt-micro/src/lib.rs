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

use warpt_harness::{Benchmark, Suite};
use warpt_model::BenchmarkSpec;

/// The suite's name.
pub const SUITE: &str = "micro";

/// The micro suite, for the registry.
pub struct MicroSuite;

impl Suite for MicroSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "hardware microbenchmarks: CPU FMA peak, STREAM memory bandwidth, memory latency, disk I/O, network"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        vec![
            cpu_flops::spec(),
            mem_bandwidth::spec(),
            mem_latency::spec(),
            disk_io::spec(),
            net::bandwidth_spec(),
            net::latency_spec(),
        ]
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        match name {
            cpu_flops::NAME => Some(Box::new(cpu_flops::CpuFlops::new())),
            mem_bandwidth::NAME => Some(Box::new(mem_bandwidth::MemBandwidth::new())),
            mem_latency::NAME => Some(Box::new(mem_latency::MemLatency::new())),
            disk_io::NAME => Some(Box::new(disk_io::DiskIo::new())),
            net::BANDWIDTH => Some(Box::new(net::NetBandwidth::new())),
            net::LATENCY => Some(Box::new(net::NetLatency::new())),
            _ => None,
        }
    }
}
