//! A snapshot of the machine (`warpt list`), stored once per suite run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What this machine is. Every field is defaulted so older snapshots load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListOutput {
    /// The processor.
    #[serde(default)]
    pub cpu: CpuInfo,
    /// Main memory.
    #[serde(default)]
    pub memory: MemoryInfo,
    /// Operating system, virtualisation and container.
    #[serde(default)]
    pub os: OsInfo,
    /// GPUs: NVIDIA ones through NVML, any other through DRM.
    #[serde(default)]
    pub gpus: Vec<GpuInfo>,
    /// Why the GPU list may be incomplete (no NVIDIA driver, no DRM).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_notes: Vec<String>,
    /// The compute adapters the GPU benchmarks can run on (wgpu's Vulkan,
    /// Metal and DX12 devices, software ones included), in `device_index`
    /// order. Filled by `warpt list`; absent from a run's snapshot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute_adapters: Vec<ComputeAdapter>,
    /// Which model family runs in which precision on which device with
    /// this build on this machine (the ML benchmarks' compatibility map).
    /// Filled by `warpt list`; absent from a run's snapshot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_support: Vec<ModelSupport>,
    /// Block devices.
    #[serde(default)]
    pub storage: Vec<StorageDevice>,
    /// Mounted file systems backed by storage (not proc, sysfs, cgroup, ...).
    #[serde(default)]
    pub mounts: Vec<MountInfo>,
    /// Network interfaces.
    #[serde(default)]
    pub network: Vec<NetworkInterface>,
    /// Programs on PATH that benchmarks may use.
    #[serde(default)]
    pub tools: Vec<ToolInfo>,
}

/// One row of the compatibility map: a model family on one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelSupport {
    /// The family, as `config.json`'s `model_type` names it (`llama`, `vit`, ...).
    pub family: String,
    /// The benchmark that runs it (`pepbench/llm_infer`, ...).
    pub benchmark: String,
    /// `cpu`, `cuda` or `metal`.
    pub device: String,
    /// The precisions it runs in there; empty when it does not run there.
    pub precisions: Vec<String>,
    /// Why it does not run there, when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
    /// Physical packages.
    #[serde(default)]
    pub sockets: Option<usize>,
    /// Logical CPUs this process may run on.
    #[serde(default)]
    pub logical_cores: usize,
    /// Physical cores, when the topology is readable.
    #[serde(default)]
    pub physical_cores: Option<usize>,
    /// Hardware threads per core.
    #[serde(default)]
    pub threads_per_core: Option<usize>,
    /// Frequency in MHz as reported (cpufreq maximum, else /proc/cpuinfo).
    #[serde(default)]
    pub mhz: Option<f64>,
    /// Base (nominal) frequency from cpufreq, MHz.
    #[serde(default)]
    pub base_mhz: Option<f64>,
    /// Maximum (boost) frequency from cpufreq, MHz.
    #[serde(default)]
    pub max_mhz: Option<f64>,
    /// SIMD and math features that matter to benchmarks.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Caches, one entry per distinct cache level and type.
    #[serde(default)]
    pub caches: Vec<CacheInfo>,
    /// NUMA nodes.
    #[serde(default)]
    pub numa_nodes: Option<usize>,
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
    /// Swap space, bytes.
    #[serde(default)]
    pub swap_total_bytes: u64,
    /// Unused swap, bytes.
    #[serde(default)]
    pub swap_free_bytes: u64,
    /// Pre-allocated huge pages.
    #[serde(default)]
    pub hugepages_total: u64,
    /// Size of one huge page, bytes.
    #[serde(default)]
    pub hugepage_size_bytes: u64,
    /// Transparent huge page mode (`always`, `madvise`, `never`).
    #[serde(default)]
    pub transparent_hugepages: Option<String>,
    /// Memory modules, where `dmidecode` is installed and readable.
    #[serde(default)]
    pub dimms: Vec<DimmInfo>,
    /// Why `dimms` is empty, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimm_note: Option<String>,
}

/// One memory module (SMBIOS type 17).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DimmInfo {
    /// Slot, e.g. `DIMM_A1`.
    pub locator: String,
    /// Capacity, bytes.
    pub size_bytes: u64,
    /// Technology, e.g. `DDR5`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Configured speed, MT/s.
    #[serde(default)]
    pub speed_mts: Option<u64>,
    /// Manufacturer.
    #[serde(default)]
    pub manufacturer: Option<String>,
    /// Part number.
    #[serde(default)]
    pub part_number: Option<String>,
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
    /// Hypervisor, e.g. `kvm`, when running virtualised; `none` on bare metal.
    #[serde(default)]
    pub virtualization: Option<String>,
    /// Container runtime, e.g. `docker`, when inside one.
    #[serde(default)]
    pub container: Option<String>,
}

/// One GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuInfo {
    /// Index (NVML's, or the DRM card number).
    pub index: u32,
    /// Product name where known, else vendor and device id.
    pub name: String,
    /// `NVIDIA`, `AMD`, `Intel`, ...
    pub vendor: String,
    /// PCI vendor id, e.g. `0x10de`.
    #[serde(default)]
    pub vendor_id: Option<String>,
    /// PCI device id.
    #[serde(default)]
    pub device_id: Option<String>,
    /// Kernel driver.
    #[serde(default)]
    pub driver: Option<String>,
    /// Memory, bytes (NVML).
    #[serde(default)]
    pub memory_total_bytes: Option<u64>,
    /// UUID (NVML).
    #[serde(default)]
    pub uuid: Option<String>,
    /// `nvml` or `drm`.
    pub source: String,
    /// CUDA compute capability, `major.minor` (NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// Streaming multiprocessors: NVML's CUDA cores over the cores per SM
    /// of the compute capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_count: Option<u32>,
    /// Memory bus width, bits (NVML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bus_width_bits: Option<u32>,
    /// The memory's class by its bus: `HBM` (1024 bits and wider) or `GDDR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_class: Option<String>,
    /// Theoretical peak memory bandwidth, GB/s (1e9 B/s): 2 transfers per
    /// clock x the highest memory clock x the bus width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bandwidth_gbps: Option<f64>,
    /// SM clock now, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    /// Highest SM clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_max_mhz: Option<u32>,
    /// Memory clock now, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
    /// Highest memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_max_mhz: Option<u32>,
    /// The power limit the driver enforces, watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// The CUDA version the driver supports (`13.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_driver_version: Option<String>,
    /// The CUDA libraries warpt's benchmarks load here (`cuBLAS 13.1.0
    /// (libcublas.so.13)`), in a build with the `cuda` feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_runtime: Option<String>,
}

/// One compute adapter (see [`ListOutput::compute_adapters`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComputeAdapter {
    /// Its `device_index`.
    pub index: u32,
    /// The device's name.
    pub name: String,
    /// `Vulkan`, `Metal` or `Dx12`.
    pub backend: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu` (a software
    /// device) or `Other`.
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// A software device on the CPU (never taken for a GPU unless asked).
    pub software: bool,
    /// Whether shaders can use 16-bit floats.
    pub shader_f16: bool,
}

/// One block device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StorageDevice {
    /// Kernel name, e.g. `nvme0n1`.
    pub name: String,
    /// Model string, where the driver reports one.
    #[serde(default)]
    pub model: Option<String>,
    /// Capacity, bytes.
    pub size_bytes: u64,
    /// Spinning disk (`true`) or solid state.
    #[serde(default)]
    pub rotational: Option<bool>,
    /// Active I/O scheduler.
    #[serde(default)]
    pub scheduler: Option<String>,
    /// Removable media.
    #[serde(default)]
    pub removable: bool,
}

/// One mounted file system.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MountInfo {
    /// Where it is mounted.
    pub mount_point: String,
    /// File system type, e.g. `ext4`, `tmpfs`.
    pub filesystem: String,
    /// What is mounted, e.g. `/dev/vda1`.
    pub source: String,
    /// A kernel interface or plumbing, not storage: proc, sysfs, cgroup
    /// and their kind, anything under /proc, /sys or /dev, overlay layers
    /// other than the root. `warpt list` hides these (`--json` keeps them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pseudo: bool,
    /// A bind mount: a directory or file of a file system mounted elsewhere
    /// already (container volumes, /etc/hosts). Hidden like `pseudo`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bind: bool,
}

impl MountInfo {
    /// Whether `warpt list` shows it to people.
    pub fn is_storage(&self) -> bool {
        !self.pseudo && !self.bind
    }
}

/// One network interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetworkInterface {
    /// Name, e.g. `eth0`.
    pub name: String,
    /// Link speed, Mbit/s, where the driver reports it.
    #[serde(default)]
    pub speed_mbps: Option<u64>,
    /// MTU, bytes.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Kernel driver.
    #[serde(default)]
    pub driver: Option<String>,
    /// `up`, `down`, `unknown`.
    #[serde(default)]
    pub state: Option<String>,
    /// Hardware address.
    #[serde(default)]
    pub mac: Option<String>,
    /// The loopback interface.
    #[serde(default)]
    pub loopback: bool,
}

/// A program on PATH.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolInfo {
    /// Its name, e.g. `fio`.
    pub name: String,
    /// Where it was found.
    pub path: String,
    /// Its version line, where cheap to read.
    #[serde(default)]
    pub version: Option<String>,
}

impl ListOutput {
    /// The machine's hardware class: what machines must share to be
    /// compared as peers (CPU model, logical CPUs, memory to the nearest
    /// GiB, architecture, GPU models), without what tells nodes apart
    /// (host name) or changes with software (OS, kernel).
    pub fn hardware_class(&self) -> String {
        let mut class = format!(
            "{} x{} / {} GiB / {}",
            self.cpu.model,
            self.cpu.logical_cores,
            (self.memory.total_bytes as f64 / (1u64 << 30) as f64).round(),
            self.os.arch
        );
        let mut gpus: Vec<&str> = self.gpus.iter().map(|g| g.name.as_str()).collect();
        gpus.sort_unstable();
        if !gpus.is_empty() {
            class.push_str(&format!(" / {}", gpus.join(" + ")));
        }
        class
    }

    /// A stable identity of the machine: FNV-1a (64 bit, hex) of host name,
    /// CPU model, logical CPUs, memory in GiB, OS, architecture and
    /// virtualisation. Kernel updates and free memory do not change it.
    pub fn fingerprint(&self) -> String {
        let key = format!(
            "{}|{}|{}|{}|{}|{}|{}",
            self.os.hostname,
            self.cpu.model,
            self.cpu.logical_cores,
            (self.memory.total_bytes as f64 / (1u64 << 30) as f64).round(),
            self.os.name,
            self.os.arch,
            self.os.virtualization.as_deref().unwrap_or("")
        );
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}
