//! Host state that changes how fast things run: governor, boost, SMT, load,
//! microcode, the current CPU frequency.

use std::fs;

use crate::sysfs::read_trim;

/// The cpufreq scaling governor of CPU 0 (`performance`, `powersave`, ...),
/// or `None` where cpufreq is absent (many VMs).
pub fn governor() -> Option<String> {
    read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
}

/// Whether turbo/boost is on: the generic cpufreq `boost` switch, or
/// intel_pstate's `no_turbo` (inverted). `None` where neither exists.
pub fn boost() -> Option<bool> {
    if let Some(v) = read_trim("/sys/devices/system/cpu/cpufreq/boost") {
        return Some(v == "1");
    }
    read_trim("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|v| v == "0")
}

/// SMT control state (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`).
pub fn smt() -> Option<String> {
    read_trim("/sys/devices/system/cpu/smt/control")
}

/// 1-, 5- and 15-minute load averages.
pub fn load_average() -> Option<[f64; 3]> {
    let text = read_trim("/proc/loadavg")?;
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Microcode revision of the first CPU, as /proc/cpuinfo reports it.
pub fn microcode() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("microcode"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Mean current frequency of the CPUs this process may use, in MHz:
/// cpufreq's `scaling_cur_freq` where present, else /proc/cpuinfo's `cpu MHz`.
pub fn current_mhz() -> Option<f64> {
    let cpus = crate::allowed_cpus();
    let from_sysfs: Vec<f64> = cpus
        .iter()
        .filter_map(|c| {
            read_trim(format!(
                "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq"
            ))
        })
        .filter_map(|v| v.parse::<f64>().ok())
        .map(|khz| khz / 1000.0)
        .collect();
    if !from_sysfs.is_empty() {
        return Some(from_sysfs.iter().sum::<f64>() / from_sysfs.len() as f64);
    }
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(_, v)| v.trim().parse::<f64>().ok())
        .collect();
    (!mhz.is_empty()).then(|| mhz.iter().sum::<f64>() / mhz.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn load_average_and_frequency_are_readable_here() {
        let [one, five, fifteen] = load_average().expect("/proc/loadavg");
        assert!(one >= 0.0 && five >= 0.0 && fifteen >= 0.0);
        assert!(current_mhz().is_some_and(|m| m > 0.0));
    }
}
