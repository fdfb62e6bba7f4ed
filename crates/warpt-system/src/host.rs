//! Host facts: memory, operating system, kernel, host name.

use std::fs;

use warpt_model::{MemoryInfo, OsInfo};

/// Total and available memory from /proc/meminfo.
pub fn memory_info() -> MemoryInfo {
    let text = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    MemoryInfo {
        total_bytes: kib("MemTotal") * 1024,
        available_bytes: kib("MemAvailable") * 1024,
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
