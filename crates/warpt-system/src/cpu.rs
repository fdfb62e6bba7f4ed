//! Processor facts: model, features, caches, usable CPUs, thread pinning.

use std::collections::BTreeMap;
use std::fs;

use crate::sysfs::read_trim;
use std::path::Path;

use warpt_model::{CacheInfo, CpuInfo};

/// Feature flags worth reporting for benchmarks (names as /proc/cpuinfo spells them).
const INTERESTING_FLAGS: &[&str] = &[
    "sse2",
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
];

/// The value of field `name` in /proc/cpuinfo's `text` (the first
/// processor's).
pub(crate) fn cpuinfo_field(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The processor as /proc/cpuinfo, sysfs and the affinity mask describe it.
pub fn cpu_info() -> CpuInfo {
    let text = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| cpuinfo_field(&text, name);
    let model = field("model name")
        .or_else(|| field("Model"))
        .or_else(|| field("CPU part"))
        .unwrap_or_default();
    let vendor = field("vendor_id")
        .or_else(|| field("CPU implementer"))
        .unwrap_or_default();
    let flags_line = field("flags")
        .or_else(|| field("Features"))
        .unwrap_or_default();
    let flags = flags_line
        .split_whitespace()
        .filter(|f| INTERESTING_FLAGS.contains(f))
        .map(str::to_string)
        .collect();
    let mhz = max_mhz().or_else(|| field("cpu MHz").and_then(|v| v.parse().ok()));
    let (sockets, physical) = topology();
    let online = online_cpu_dirs().len();
    CpuInfo {
        model,
        vendor,
        sockets,
        logical_cores: allowed_cpus().len(),
        physical_cores: physical,
        threads_per_core: physical.filter(|p| *p > 0).map(|p| (online / p).max(1)),
        mhz,
        base_mhz: khz_file("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency"),
        max_mhz: khz_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"),
        flags,
        caches: cache_hierarchy(),
        numa_nodes: numa_nodes(),
    }
}

fn khz_file(path: &str) -> Option<f64> {
    read_trim(path)?.parse::<f64>().ok().map(|khz| khz / 1000.0)
}

/// NUMA nodes under /sys/devices/system/node.
fn numa_nodes() -> Option<usize> {
    let n = fs::read_dir("/sys/devices/system/node")
        .ok()?
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    (n > 0).then_some(n)
}

/// The highest frequency cpufreq reports for CPU 0, in MHz.
fn max_mhz() -> Option<f64> {
    let khz: f64 = read_trim("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")?
        .parse()
        .ok()?;
    Some(khz / 1000.0)
}

/// Distinct packages and distinct (package, core) pairs in the topology.
fn topology() -> (Option<usize>, Option<usize>) {
    let mut packages = std::collections::BTreeSet::new();
    let mut cores = std::collections::BTreeSet::new();
    for cpu in online_cpu_dirs() {
        let Some((pkg, core)) = core_of(&cpu) else {
            return (None, None);
        };
        packages.insert(pkg.clone());
        cores.insert((pkg, core));
    }
    let count = |n: usize| (n > 0).then_some(n);
    (count(packages.len()), count(cores.len()))
}

/// The (package, core id) of the CPU whose sysfs directory is `cpu`.
fn core_of(cpu: &Path) -> Option<(String, String)> {
    Some((
        read_trim(cpu.join("topology/physical_package_id"))?,
        read_trim(cpu.join("topology/core_id"))?,
    ))
}

fn online_cpu_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = crate::sysfs::entries("/sys/devices/system/cpu")
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("cpu"))
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    dirs.sort();
    dirs
}

/// Every cache level of the machine, counting distinct instances through
/// each cache's `shared_cpu_list`.
pub fn cache_hierarchy() -> Vec<CacheInfo> {
    // (level, type) -> (size, set of shared_cpu_list strings)
    let mut seen: BTreeMap<(u8, String), (u64, std::collections::BTreeSet<String>)> =
        BTreeMap::new();
    for cpu in online_cpu_dirs() {
        let Ok(entries) = fs::read_dir(cpu.join("cache")) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            if !dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("index"))
            {
                continue;
            }
            let (Some(level), Some(kind), Some(size)) = (
                read_trim(dir.join("level")).and_then(|l| l.parse::<u8>().ok()),
                read_trim(dir.join("type")),
                read_trim(dir.join("size")).and_then(|s| parse_size(&s)),
            ) else {
                continue;
            };
            let shared =
                read_trim(dir.join("shared_cpu_list")).unwrap_or_else(|| cpu.display().to_string());
            let slot = seen
                .entry((level, kind))
                .or_insert((size, Default::default()));
            slot.1.insert(shared);
        }
    }
    seen.into_iter()
        .map(|((level, kind), (size_bytes, instances))| CacheInfo {
            level,
            kind,
            size_bytes,
            instances: instances.len().max(1),
        })
        .collect()
}

/// The environment variable that overrides the last-level cache size the
/// benchmarks size their working sets from (`1G`, `512M`, `98304K` or
/// bytes): for a VM that reports its host's cache, or none.
pub const LLC_OVERRIDE: &str = "WARPT_LAST_LEVEL_CACHE";

/// Total bytes of the last-level cache across all its instances, if known;
/// [`LLC_OVERRIDE`] replaces what sysfs says when it is set (and valid, see
/// [`check_llc_override`]).
pub fn last_level_cache_bytes() -> Option<u64> {
    if let Some(v) = std::env::var(LLC_OVERRIDE)
        .ok()
        .and_then(|v| parse_size(&v))
    {
        return Some(v);
    }
    detected_last_level_cache_bytes()
}

/// An error naming [`LLC_OVERRIDE`] when it is set to something that is not
/// a size, for a plan to refuse before anything runs.
pub fn check_llc_override() -> Result<(), String> {
    match std::env::var(LLC_OVERRIDE) {
        Ok(v) if parse_size(&v).is_none_or(|b| b == 0) => Err(format!(
            "{LLC_OVERRIDE}={v}: not a cache size (give bytes, or a number with K, M or G)"
        )),
        _ => Ok(()),
    }
}

/// The last-level cache as sysfs describes it, ignoring [`LLC_OVERRIDE`].
fn detected_last_level_cache_bytes() -> Option<u64> {
    let caches = cache_hierarchy();
    let top = caches
        .iter()
        .filter(|c| c.kind != "Instruction")
        .map(|c| c.level)
        .max()?;
    Some(
        caches
            .iter()
            .filter(|c| c.level == top && c.kind != "Instruction")
            .map(|c| c.size_bytes * c.instances as u64)
            .sum(),
    )
}

/// Parses sysfs sizes such as `32768K`, `2M` or `512`.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1024),
        b'M' | b'm' => (&s[..s.len() - 1], 1024 * 1024),
        b'G' | b'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// The CPUs this process may run on (its affinity mask), in ascending order.
/// Falls back to `0..available_parallelism` where the mask is unreadable.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most
        // size_of::<cpu_set_t>() bytes into it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc == 0 {
            let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                // SAFETY: i < CPU_SETSIZE, the set's capacity.
                .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
                .collect();
            if !cpus.is_empty() {
                return cpus;
            }
        }
    }
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    (0..n).collect()
}

/// How many distinct physical cores (package, core id) `cpus` are on; each
/// CPU counts as its own core where the topology is unreadable.
pub fn physical_cores(cpus: &[usize]) -> usize {
    let cores: std::collections::BTreeSet<(String, String)> = cpus
        .iter()
        .map(|cpu| {
            core_of(Path::new(&format!("/sys/devices/system/cpu/cpu{cpu}")))
                .unwrap_or_else(|| ("cpu".to_string(), cpu.to_string()))
        })
        .collect();
    cores.len()
}

/// Pins the calling thread to one CPU. Returns false where pinning is not
/// possible (another OS, a CPU outside the cgroup): the caller runs unpinned.
pub fn pin_current_thread(cpu: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: as above; the set is initialised before use and `cpu` is in range.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        false
    }
}

/// Pins the calling thread to the CPUs `cpus` (the processes it spawns
/// inherit the mask); false where the kernel refuses, none is given, or
/// this is not Linux.
pub fn pin_current_thread_to(cpus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    {
        if cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
            return false;
        }
        // SAFETY: as above; every cpu is in range.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                libc::CPU_SET(c, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_sizes() {
        assert_eq!(parse_size("32768K"), Some(32 * 1024 * 1024));
        assert_eq!(parse_size("2M"), Some(2 * 1024 * 1024));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn this_machine_has_cpus_and_a_model() {
        let info = cpu_info();
        assert!(info.logical_cores >= 1);
        assert_eq!(info.logical_cores, allowed_cpus().len());
        if cfg!(target_os = "linux") {
            assert!(!info.model.is_empty(), "/proc/cpuinfo gave no model name");
        }
    }
}
