//! Package energy from RAPL counters in the powercap interface.

use std::fs;
use std::path::{Path, PathBuf};

/// Where the kernel's powercap interface lives.
pub const POWERCAP: &str = "/sys/class/powercap";

/// The environment variable naming another powercap tree: sysfs mounted
/// elsewhere (a container), or a tree a test writes.
pub const POWERCAP_ENV: &str = "WARPT_POWERCAP";

/// The powercap tree read: [`POWERCAP_ENV`]'s, else [`POWERCAP`].
fn root() -> PathBuf {
    std::env::var_os(POWERCAP_ENV).map_or_else(|| PathBuf::from(POWERCAP), PathBuf::from)
}

/// How to let warpt read the counters when they are root-only (Linux made
/// `energy_uj` readable by root alone in 5.10, after the PLATYPUS power
/// side channel, CVE-2020-8694).
pub const RAPL_FIX: &str = "run as root, give warpt the capability to read them \
     (`sudo setcap cap_dac_read_search+ep \"$(command -v warpt)\"`), or make them readable at \
     boot with a udev rule (/etc/udev/rules.d/99-rapl.rules: `ACTION==\"add\", \
     SUBSYSTEM==\"powercap\", RUN+=\"/bin/chmod o+r /sys%p/energy_uj\"`)";

/// One RAPL domain's counter at one moment.
#[derive(Debug, Clone, PartialEq)]
struct Reading {
    domain: PathBuf,
    energy_uj: u64,
    max_range_uj: u64,
}

/// Energy counters of every top-level RAPL package domain, read at once.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergySnapshot {
    readings: Vec<Reading>,
}

/// Why energy cannot be read here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnergyUnavailable {
    /// The powercap interface has no RAPL domain (VMs, non-x86, no driver).
    #[error("no RAPL domain under /sys/class/powercap (or $WARPT_POWERCAP) on this machine")]
    NoDomain,
    /// Domains exist but their counters cannot be read (permissions).
    #[error("RAPL counters are not readable ({0}): {fix}", fix = RAPL_FIX)]
    Unreadable(String),
}

impl EnergySnapshot {
    /// Reads every package-level `intel-rapl:N` domain (AMD exposes its
    /// counters under the same name).
    pub fn read() -> Result<EnergySnapshot, EnergyUnavailable> {
        Self::read_in(&root())
    }

    /// Reads the DRAM subdomains (`intel-rapl:N:M` named `dram`).
    pub fn read_dram() -> Result<EnergySnapshot, EnergyUnavailable> {
        Self::read_dram_in(&root())
    }

    /// [`EnergySnapshot::read`] of a powercap tree at `root` (a copy of
    /// `/sys/class/powercap` in tests).
    pub fn read_in(root: &Path) -> Result<EnergySnapshot, EnergyUnavailable> {
        Self::read_where(root, |name, _| !name.contains(':'))
    }

    /// [`EnergySnapshot::read_dram`] of a powercap tree at `root`.
    pub fn read_dram_in(root: &Path) -> Result<EnergySnapshot, EnergyUnavailable> {
        Self::read_where(root, |name, path| {
            name.contains(':')
                && fs::read_to_string(path.join("name")).is_ok_and(|n| n.trim() == "dram")
        })
    }

    fn read_where(
        root: &Path,
        keep: impl Fn(&str, &Path) -> bool,
    ) -> Result<EnergySnapshot, EnergyUnavailable> {
        let entries = fs::read_dir(root).map_err(|_| EnergyUnavailable::NoDomain)?;
        let mut domains: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix("intel-rapl:"))
                    .is_some_and(|rest| keep(rest, p))
            })
            .collect();
        domains.sort();
        if domains.is_empty() {
            return Err(EnergyUnavailable::NoDomain);
        }
        let mut readings = Vec::new();
        for domain in domains {
            let read = |file: &str| -> Result<u64, EnergyUnavailable> {
                let path = domain.join(file);
                fs::read_to_string(&path)
                    .map_err(|e| EnergyUnavailable::Unreadable(format!("{}: {e}", path.display())))?
                    .trim()
                    .parse()
                    .map_err(|e| EnergyUnavailable::Unreadable(format!("{}: {e}", path.display())))
            };
            readings.push(Reading {
                energy_uj: read("energy_uj")?,
                max_range_uj: read("max_energy_range_uj")?,
                domain,
            });
        }
        Ok(EnergySnapshot { readings })
    }

    /// Joules consumed between `self` and a later snapshot, summed over
    /// domains; a counter that wrapped (at most once) is unwrapped.
    pub fn joules_until(&self, later: &EnergySnapshot) -> Option<f64> {
        let mut total_uj = 0u64;
        for before in &self.readings {
            let after = later.readings.iter().find(|r| r.domain == before.domain)?;
            total_uj += wrapped_delta(before.energy_uj, after.energy_uj, before.max_range_uj);
        }
        Some(total_uj as f64 / 1e6)
    }
}

/// `after - before` for a counter that wraps at `range`.
fn wrapped_delta(before: u64, after: u64, range: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        range.saturating_sub(before) + after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_unwrap_the_counter() {
        assert_eq!(wrapped_delta(10, 25, 100), 15);
        assert_eq!(wrapped_delta(90, 5, 100), 15);
        let snap = |uj| EnergySnapshot {
            readings: vec![Reading {
                domain: "/d".into(),
                energy_uj: uj,
                max_range_uj: 1_000_000,
            }],
        };
        assert_eq!(snap(999_000).joules_until(&snap(1_000)), Some(0.002));
    }
}
