//! Whether we run under a hypervisor or inside a container.

use std::fs;
use std::path::Path;

use crate::tools::run_with_timeout;

/// The hypervisor (`kvm`, `vmware`, ...), `none` on bare metal, or `None`
/// when it cannot be told. Asks `systemd-detect-virt --vm` where installed,
/// else the CPU's hypervisor flag and the DMI vendor.
pub fn virtualization() -> Option<String> {
    if crate::tools::which("systemd-detect-virt").is_some()
        && let Some(v) = run_with_timeout("systemd-detect-virt", &["--vm"])
    {
        let v = v.trim();
        if !v.is_empty() {
            return Some(v.to_string());
        }
    }
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").ok()?;
    let flagged = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == "hypervisor"));
    if !flagged {
        return Some("none".into());
    }
    let vendor = fs::read_to_string("/sys/class/dmi/id/sys_vendor")
        .unwrap_or_default()
        .to_lowercase();
    let product = fs::read_to_string("/sys/class/dmi/id/product_name")
        .unwrap_or_default()
        .to_lowercase();
    let known = [
        ("qemu", "qemu"),
        ("kvm", "kvm"),
        ("vmware", "vmware"),
        ("microsoft", "microsoft"),
        ("xen", "xen"),
        ("amazon", "amazon"),
        ("google", "google"),
        ("virtualbox", "oracle"),
    ];
    Some(
        known
            .iter()
            .find(|(needle, _)| vendor.contains(needle) || product.contains(needle))
            .map_or("unknown hypervisor", |(_, name)| name)
            .to_string(),
    )
}

/// The container runtime we run in (`docker`, `podman`, `kubernetes`,
/// `lxc`, ...), or `None` outside one.
pub fn container() -> Option<String> {
    if let Ok(c) = std::env::var("container")
        && !c.is_empty()
    {
        return Some(c);
    }
    if Path::new("/.dockerenv").exists() {
        return Some("docker".into());
    }
    if Path::new("/run/.containerenv").exists() {
        return Some("podman".into());
    }
    let cgroup = fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
    for (needle, name) in [
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("lxc", "lxc"),
        ("containerd", "containerd"),
    ] {
        if cgroup.contains(needle) {
            return Some(name.into());
        }
    }
    None
}
