//! Block devices, mounted file systems and network interfaces from sysfs and procfs.

use std::fs;

use crate::sysfs::read_trim;

use warpt_model::{MountInfo, NetworkInterface, StorageDevice};

/// Whole block devices with a size, except loop and RAM disks.
pub fn storage() -> Vec<StorageDevice> {
    let mut out: Vec<StorageDevice> = crate::sysfs::entries("/sys/block")
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

/// File system types that are kernel interfaces, not storage.
const PSEUDO_FS: &[&str] = &[
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
    "selinuxfs",
];

/// Every mount of this process's namespace, each marked `pseudo` or `bind`
/// where it is not storage a person looks for (from /proc/self/mountinfo,
/// else /proc/self/mounts without the bind marks).
pub fn mounts() -> Vec<MountInfo> {
    match fs::read_to_string("/proc/self/mountinfo") {
        Ok(text) => parse_mountinfo(&text),
        Err(_) => fs::read_to_string("/proc/self/mounts")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (source, mount_point, filesystem) = (f.next()?, f.next()?, f.next()?);
                Some(mount(unescape(mount_point), filesystem, source, false))
            })
            .collect(),
    }
}

fn mount(mount_point: String, filesystem: &str, source: &str, bind: bool) -> MountInfo {
    let under = |dir: &str| mount_point == dir || mount_point.starts_with(&format!("{dir}/"));
    let pseudo = PSEUDO_FS.contains(&filesystem)
        || under("/proc")
        || under("/sys")
        || under("/dev")
        || (filesystem == "overlay" && mount_point != "/");
    MountInfo {
        mount_point,
        filesystem: filesystem.to_string(),
        source: source.to_string(),
        pseudo,
        bind,
    }
}

/// Parses mountinfo: `id parent major:minor root mount_point options
/// [optional...] - fstype source superoptions`. A mount whose root is not
/// the file system's root, or whose device was already mounted from its
/// root, is a bind mount.
fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    let mut seen_devices = std::collections::HashSet::new();
    text.lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let h: Vec<&str> = head.split_whitespace().collect();
            let (device, root, mount_point) = (*h.get(2)?, *h.get(3)?, *h.get(4)?);
            let mut t = tail.split_whitespace();
            let (filesystem, source) = (t.next()?, t.next().unwrap_or(""));
            // Kernel file systems share a "device" 0:N per instance, so a
            // repeat is a bind; the same is true of block devices.
            let repeat = !seen_devices.insert(device.to_string());
            let bind = root != "/" || repeat;
            Some(mount(unescape(mount_point), filesystem, source, bind))
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
    let mut out: Vec<NetworkInterface> = crate::sysfs::entries("/sys/class/net")
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

#[cfg(test)]
mod mount_tests {
    use super::*;

    #[test]
    fn container_plumbing_is_marked_and_storage_is_not() {
        let text = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 253:1 / / rw,relatime - ext4 /dev/vda1 rw
30 27 253:1 /var/lib/docker/volumes/x /data rw - ext4 /dev/vda1 rw
31 27 253:1 /etc/hosts /etc/hosts rw - ext4 /dev/vda1 rw
32 27 0:40 / /var/lib/docker/overlay2/abc/merged rw - overlay overlay rw
33 27 0:41 / /tmp rw - tmpfs tmpfs rw
34 27 0:42 / /dev/shm rw - tmpfs shm rw
35 27 253:2 / /mnt/big\\040disk rw - xfs /dev/vdb rw
";
        let m = parse_mountinfo(text);
        let shown: Vec<&str> = m
            .iter()
            .filter(|m| m.is_storage())
            .map(|m| m.mount_point.as_str())
            .collect();
        assert_eq!(shown, ["/", "/tmp", "/mnt/big disk"]);
        let find = |p: &str| m.iter().find(|m| m.mount_point == p).unwrap();
        assert!(find("/proc").pseudo && !find("/proc").bind);
        assert!(find("/data").bind && find("/etc/hosts").bind);
        assert!(find("/var/lib/docker/overlay2/abc/merged").pseudo);
        assert!(find("/dev/shm").pseudo);
        assert_eq!(m.len(), 8, "nothing is dropped");
    }
}
