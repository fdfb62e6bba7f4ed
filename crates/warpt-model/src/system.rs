//! A snapshot of the machine (`warpt list`), stored once per suite run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What this machine is. Later versions add GPUs, storage, network and tools;
/// every field is defaulted so older snapshots still load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListOutput {
    /// The processor.
    #[serde(default)]
    pub cpu: CpuInfo,
    /// Main memory.
    #[serde(default)]
    pub memory: MemoryInfo,
    /// Operating system.
    #[serde(default)]
    pub os: OsInfo,
}

/// The processor, as far as the OS tells it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuInfo {
    /// Model name, e.g. `AMD EPYC 9B45`.
    #[serde(default)]
    pub model: String,
    /// Vendor id, e.g. `AuthenticAMD`.
    #[serde(default)]
    pub vendor: String,
    /// Logical CPUs this process may run on.
    #[serde(default)]
    pub logical_cores: usize,
    /// Physical cores, when the topology is readable.
    #[serde(default)]
    pub physical_cores: Option<usize>,
    /// Frequency in MHz as reported (cpufreq maximum, else /proc/cpuinfo).
    #[serde(default)]
    pub mhz: Option<f64>,
    /// SIMD and math features that matter to benchmarks.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Caches, one entry per distinct cache level and type.
    #[serde(default)]
    pub caches: Vec<CacheInfo>,
}

/// One cache level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheInfo {
    /// 1, 2, 3, ...
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size of one instance, bytes.
    pub size_bytes: u64,
    /// How many separate instances exist on the machine.
    pub instances: usize,
}

/// Main memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryInfo {
    /// Installed memory the OS sees, bytes.
    #[serde(default)]
    pub total_bytes: u64,
    /// Memory available for new allocations, bytes.
    #[serde(default)]
    pub available_bytes: u64,
}

/// Operating system.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OsInfo {
    /// Distribution name and version, e.g. `Debian GNU/Linux 12 (bookworm)`.
    #[serde(default)]
    pub name: String,
    /// Kernel release.
    #[serde(default)]
    pub kernel: String,
    /// Host name.
    #[serde(default)]
    pub hostname: String,
    /// CPU architecture, e.g. `x86_64`.
    #[serde(default)]
    pub arch: String,
}
