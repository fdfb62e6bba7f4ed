//! Resource telemetry sampled in the background while benchmarks and
//! stress tests run (`--monitor`), and its per-result summary.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One sample of the machine's state. The first five fields keep the
/// seed's names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TelemetrySample {
    /// When it was taken (UTC).
    pub timestamp: Option<Timestamp>,
    /// CPU busy time over the last interval, all CPUs, percent.
    pub cpu_utilization_percent: f64,
    /// Installed memory, bytes.
    pub total_memory_bytes: u64,
    /// Memory in use (total - available), percent of total.
    pub memory_utilization_percent: f64,
    /// NVIDIA GPUs (NVML).
    #[serde(default)]
    pub gpu_usage: Vec<GpuSample>,
    /// CPU busy time per CPU, percent.
    #[serde(default)]
    pub per_core_utilization_percent: Vec<f64>,
    /// Current frequency per CPU, MHz (cpufreq, else /proc/cpuinfo).
    #[serde(default)]
    pub per_core_freq_mhz: Vec<f64>,
    /// Memory in use, bytes.
    #[serde(default)]
    pub used_memory_bytes: u64,
    /// Memory available for new allocations, bytes.
    #[serde(default)]
    pub available_memory_bytes: u64,
    /// Swap in use, bytes.
    #[serde(default)]
    pub swap_used_bytes: u64,
    /// Temperatures from hwmon and thermal zones.
    #[serde(default)]
    pub temperatures: Vec<TemperatureReading>,
    /// CPU package power over the last interval, watts (RAPL).
    #[serde(default)]
    pub package_power_w: Option<f64>,
    /// DRAM power over the last interval, watts (RAPL).
    #[serde(default)]
    pub dram_power_w: Option<f64>,
    /// Resident memory of warpt and every process it started (the
    /// benchmark's worker), bytes.
    #[serde(default)]
    pub process_rss_bytes: Option<u64>,
}

/// One GPU in a sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuSample {
    /// NVML index.
    pub index: u32,
    /// Product name.
    pub model: String,
    /// GPU busy, percent.
    pub utilization_percent: f64,
    /// Memory controller busy, percent.
    pub memory_utilization_percent: f64,
    /// Memory in use, bytes.
    #[serde(default)]
    pub memory_used_bytes: Option<u64>,
    /// Board power, watts.
    pub power_watts: Option<f64>,
    /// Core temperature, Celsius.
    #[serde(default)]
    pub temperature_c: Option<f64>,
    /// SM clock, MHz.
    #[serde(default)]
    pub sm_clock_mhz: Option<u32>,
    /// Active clock throttle reasons, as NVML names them.
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
    /// GPU UUID.
    pub guid: String,
}

/// One temperature sensor's reading.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TemperatureReading {
    /// Sensor, e.g. `k10temp/Tctl` or `thermal_zone0/x86_pkg_temp`.
    pub sensor: String,
    /// Degrees Celsius.
    pub celsius: f64,
}

/// The power sources the monitor integrates, in the order tables show them.
pub const ENERGY_SOURCES: [&str; 3] = ["cpu_package", "dram", "gpu"];

/// One power source's share of a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceEnergy {
    /// Joules over the window.
    pub energy_j: f64,
    /// Mean power, watts (the joules over the window's seconds).
    pub mean_power_w: f64,
    /// Samples that read the source.
    pub samples: usize,
}

/// What the monitor saw during one result's measurement window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TelemetrySummary {
    /// Samples in the window.
    pub samples: usize,
    /// Mean power over the window, watts: every source the monitor read
    /// ([`TelemetrySummary::energy_sources`]) summed. Runs stored before
    /// GPUs were counted hold the CPU package and DRAM alone.
    #[serde(default)]
    pub mean_power_w: Option<f64>,
    /// Highest power of one sample, every source summed, watts.
    #[serde(default)]
    pub max_power_w: Option<f64>,
    /// Energy over the window, joules: every source summed.
    #[serde(default)]
    pub energy_j: Option<f64>,
    /// The energy of each source the monitor read, by name
    /// ([`ENERGY_SOURCES`]): `cpu_package` and `dram` (RAPL), `gpu` (every
    /// NVIDIA GPU's board power, NVML). Each is the trapezoid integral of
    /// the source's samples over their timestamps, the first and last
    /// sample's power held to the window's edges.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub energy_sources: std::collections::BTreeMap<String, SourceEnergy>,
    /// Highest temperature of any sensor, Celsius.
    #[serde(default)]
    pub max_temp_c: Option<f64>,
    /// Lowest per-CPU frequency seen, MHz.
    #[serde(default)]
    pub min_freq_mhz: Option<f64>,
    /// Mean of the per-sample mean frequency, MHz.
    #[serde(default)]
    pub mean_freq_mhz: Option<f64>,
    /// Whether throttling was seen (a GPU throttle reason, or CPU frequency
    /// more than 10% below the window's first sample).
    pub throttled: bool,
    /// Energy per unit of work, joules, for every rate metric of the result
    /// (e.g. `gflops precision=fp64,threads=all` -> J/GFLOP): the mean
    /// power of every source divided by the metric's median rate. Empty
    /// without a power reading.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub energy_per_unit: std::collections::BTreeMap<String, f64>,
    /// Mean CPU utilisation, percent.
    #[serde(default)]
    pub mean_cpu_utilization_percent: Option<f64>,
    /// Why a figure is absent (no RAPL, no sensors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Highest resident memory of warpt's processes (the benchmark's worker
    /// included) in the window, from setup to validation, bytes.
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// Mean resident memory over the window's samples, bytes.
    #[serde(default)]
    pub mean_rss_bytes: Option<u64>,
    /// Highest GPU memory in use (all GPUs), bytes, where NVML reads it.
    #[serde(default)]
    pub peak_gpu_memory_bytes: Option<u64>,
    /// Resident memory over the window (at most 200 points), for the
    /// report's memory-against-time chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_timeline: Vec<MemoryPoint>,
}

/// One point of a result's memory over time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryPoint {
    /// Seconds since the window started (the result's `start_time`).
    pub seconds: f64,
    /// Resident memory of warpt's processes, bytes.
    pub rss_bytes: u64,
}
