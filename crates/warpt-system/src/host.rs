//! Host facts: memory, operating system, kernel, host name.

use std::fs;

use warpt_model::{MemoryInfo, OsInfo};

/// /proc/meminfo, read once.
pub(crate) struct MemInfo(String);

impl MemInfo {
    /// Reads /proc/meminfo (empty where it does not exist).
    pub(crate) fn read() -> Self {
        MemInfo(fs::read_to_string("/proc/meminfo").unwrap_or_default())
    }

    /// The value of field `name`, in the file's unit (kB for sizes), or 0.
    pub(crate) fn get(&self, name: &str) -> u64 {
        self.0
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    }
}

/// Memory, swap, huge pages and DIMMs.
pub fn memory_info() -> MemoryInfo {
    let m = MemInfo::read();
    let (dimms, dimm_note) = crate::dimms::dimms();
    MemoryInfo {
        swap_total_bytes: m.get("SwapTotal") * 1024,
        swap_free_bytes: m.get("SwapFree") * 1024,
        hugepages_total: m.get("HugePages_Total"),
        hugepage_size_bytes: m.get("Hugepagesize") * 1024,
        transparent_hugepages: fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .ok()
            .and_then(|s| {
                s.split('[')
                    .nth(1)
                    .and_then(|r| r.split(']').next())
                    .map(str::to_string)
            }),
        dimms,
        dimm_note,
        ..quick(&m)
    }
}

/// Memory total and availability only, without asking dmidecode: cheap
/// enough to call before every allocation-heavy benchmark.
pub fn memory_quick() -> MemoryInfo {
    quick(&MemInfo::read())
}

fn quick(m: &MemInfo) -> MemoryInfo {
    MemoryInfo {
        total_bytes: m.get("MemTotal") * 1024,
        available_bytes: m.get("MemAvailable") * 1024,
        ..MemoryInfo::default()
    }
}

/// Operating system name (os-release), kernel release, host name, architecture.
pub fn os_info() -> OsInfo {
    let release = fs::read_to_string("/etc/os-release").unwrap_or_default();
    let name = release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    OsInfo {
        name,
        kernel,
        hostname: hostname(),
        arch: std::env::consts::ARCH.to_string(),
        virtualization: crate::virt::virtualization(),
        container: crate::virt::container(),
    }
}

/// The host name, or an empty string when it cannot be read.
pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn reads_memory_and_kernel() {
        let m = memory_info();
        assert!(m.total_bytes > 0 && m.available_bytes <= m.total_bytes);
        let os = os_info();
        assert!(!os.kernel.is_empty());
    }
}
