//! The cache the blocking is sized for: the level-2 cache a core has,
//! read once per process from Linux's sysfs (the kernel's view of the
//! CPU's cache descriptions; a guest's as its hypervisor reports them).

use std::sync::OnceLock;

/// Bytes of the level-2 cache (unified or data) of the CPU this process
/// asks about first, when the system says; None elsewhere than Linux or
/// where sysfs does not list it.
pub fn l2_bytes() -> Option<usize> {
    static L2: OnceLock<Option<usize>> = OnceLock::new();
    *L2.get_or_init(read_l2)
}

/// Whether a core's L2 holds 2 MiB or more: Intel's server cores since
/// Sapphire Rapids, where the blocking (fp32's) and the driver's
/// prefetches ([`crate::kernel::Kernel`]) differ from the AMD cores they
/// were first tuned on (512 KiB - 1 MiB).
pub(crate) fn large_l2() -> bool {
    l2_bytes().is_some_and(|l2| l2 >= 2 << 20)
}

fn read_l2() -> Option<usize> {
    let caches = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    caches.flatten().find_map(|entry| {
        let dir = entry.path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        let level2 = read("level")?.trim() == "2";
        let holds_data = read("type")?.trim() != "Instruction";
        if level2 && holds_data {
            parse_size(read("size")?.trim())
        } else {
            None
        }
    })
}

/// A size as sysfs writes it (`2048K`, `1M`, `512`) in bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_sysfs_writes_them() {
        assert_eq!(parse_size("2048K"), Some(2 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("12X"), None);
        assert_eq!(parse_size("K"), None);
    }

    #[test]
    fn the_l2_is_read_where_sysfs_lists_it() {
        let listed = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache")
            .map(|d| {
                d.flatten().any(|e| {
                    std::fs::read_to_string(e.path().join("level")).is_ok_and(|l| l.trim() == "2")
                })
            })
            .unwrap_or(false);
        if listed {
            // Every CPU with an L2 has at least 64 KiB of it.
            assert!(
                l2_bytes().is_some_and(|b| b >= 64 << 10),
                "{:?}",
                l2_bytes()
            );
        } else {
            assert_eq!(l2_bytes(), None);
        }
    }
}
