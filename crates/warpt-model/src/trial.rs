//! Repetitions of a plan: the run as the unit of replication.
//!
//! `warpt benchmark run --repeat N` runs the whole plan N times. Each
//! repetition is a [`Trial`] with its own results and statistics; the suite
//! run's `benchmarks` then hold one aggregate per planned benchmark whose
//! metrics summarise the trial medians (`value` is their median, `stats.samples`
//! the trial medians themselves, `stats.n` the number of trials).

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::BenchmarkRunResult;

/// One repetition of a suite run's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trial {
    /// 1-based number of this repetition.
    pub index: u32,
    /// When the repetition started (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    /// When it ended (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Timestamp>,
    /// The plan position (0-based) of each entry of `benchmarks`:
    /// repetitions shuffle the plan so that drift and order effects spread
    /// over every benchmark.
    #[serde(default)]
    pub order: Vec<usize>,
    /// One result per planned benchmark that ran, in the order they ran.
    pub benchmarks: Vec<BenchmarkRunResult>,
}

/// How a quality reason about the hypervisor's steal time begins (see
/// [`Interference::steal_share`]): `compare` weighs steal that differed
/// between one run a side by how far it can move a figure, as it weighs a
/// host regime, instead of holding the verdict back.
pub const STEAL_PREFIX: &str = "steal: ";

/// What else used the machine while a benchmark measured, read from
/// `/proc/stat` and the benchmark's own CPU time over its measurement window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interference {
    /// Length of the measurement window, seconds.
    pub window_s: f64,
    /// CPUs the kernel accounts time for (`cpuN` lines of /proc/stat).
    pub cpus: usize,
    /// Share of all CPU time in the window that the hypervisor gave to
    /// other guests (`steal` over every column of /proc/stat's `cpu` line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_share: Option<f64>,
    /// CPU time other processes used in the window (user, nice and system
    /// time of the machine minus the benchmark's and warpt's own), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_cpu_s: Option<f64>,
    /// `foreign_cpu_s` as a share of the machine's capacity in the window
    /// (`window_s` x `cpus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_cpu_share: Option<f64>,
    /// CPU time the benchmark's processes used in the window, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_cpu_s: Option<f64>,
    /// Mean of `procs_running` sampled during the window (the benchmark's
    /// own runnable threads included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_queue_mean: Option<f64>,
    /// Largest `procs_running` seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_queue_max: Option<u32>,
}

/// Every trial's result for plan position `position`, in trial order
/// (trials that did not reach it are left out).
pub fn results_at(trials: &[Trial], position: usize) -> Vec<&BenchmarkRunResult> {
    trials
        .iter()
        .filter_map(|t| {
            t.order
                .iter()
                .position(|&p| p == position)
                .and_then(|i| t.benchmarks.get(i))
        })
        .collect()
}
