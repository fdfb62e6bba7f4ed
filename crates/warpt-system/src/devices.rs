//! Block devices, mounted file systems and network interfaces from sysfs and procfs.

use std::fs;
use std::path::Path;

use warpt_model::{MountInfo, NetworkInterface, StorageDevice};

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Whole block devices with a size, except loop and RAM disks.
pub fn storage() -> Vec<StorageDevice> {
    let Ok(entries) = fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<StorageDevice> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("loop") || name.starts_with("ram") {
                return None;
            }
            let dir = e.path();
            // `size` counts 512-byte sectors whatever the device's block size.
            let sectors: u64 = read_trim(dir.join("size"))?.parse().ok()?;
            if sectors == 0 {
                return None;
            }
            let scheduler = read_trim(dir.join("queue/scheduler")).map(|s| {
                s.split('[')
                    .nth(1)
                    .and_then(|r| r.split(']').next())
                    .unwrap_or(&s)
                    .to_string()
            });
            Some(StorageDevice {
                model: read_trim(dir.join("device/model")),
                size_bytes: sectors * 512,
                rotational: read_trim(dir.join("queue/rotational")).map(|r| r == "1"),
                scheduler,
                removable: read_trim(dir.join("removable")).is_some_and(|r| r == "1"),
                name,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// File systems a benchmark could write to: those backed by a device, plus
/// tmpfs; not proc, sysfs, cgroup and other kernel interfaces.
pub fn mounts() -> Vec<MountInfo> {
    const VIRTUAL: &[&str] = &[
        "proc",
        "sysfs",
        "cgroup",
        "cgroup2",
        "devpts",
        "devtmpfs",
        "mqueue",
        "securityfs",
        "debugfs",
        "tracefs",
        "pstore",
        "bpf",
        "configfs",
        "fusectl",
        "hugetlbfs",
        "autofs",
        "binfmt_misc",
        "efivarfs",
        "nsfs",
        "rpc_pipefs",
    ];
    let text = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (source, mount_point, filesystem) = (f.next()?, f.next()?, f.next()?);
            (!VIRTUAL.contains(&filesystem)).then(|| MountInfo {
                mount_point: unescape(mount_point),
                filesystem: filesystem.to_string(),
                source: source.to_string(),
            })
        })
        .collect()
}

/// /proc/mounts escapes spaces and tabs as octal.
fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\134", "\\")
}

/// Every network interface.
pub fn network() -> Vec<NetworkInterface> {
    let Ok(entries) = fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    let mut out: Vec<NetworkInterface> = entries
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let dir = e.path();
            NetworkInterface {
                // Reading `speed` of a link that is down fails with EINVAL; -1 means unknown.
                speed_mbps: read_trim(dir.join("speed"))
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|s| *s > 0)
                    .map(|s| s as u64),
                mtu: read_trim(dir.join("mtu")).and_then(|s| s.parse().ok()),
                driver: fs::read_link(dir.join("device/driver"))
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
                state: read_trim(dir.join("operstate")),
                mac: read_trim(dir.join("address")),
                loopback: read_trim(dir.join("type")).is_some_and(|t| t == "772"),
                name,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
