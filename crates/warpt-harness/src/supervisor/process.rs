//! The worker process itself: how it ended, reaping it, stopping its
//! group, and what it used.

use warpt_model::Resources;
use warpt_system::EnergySnapshot;
use warpt_system::procstat::GroupUsage;

use super::{Duration, Instant, KILL_GRACE};

/// How the worker process ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Exit {
    Code(i32),
    Signal(i32),
}

/// A reaped worker: how it ended and what it used.
pub(super) struct Reaped {
    pub(super) exit: Exit,
    pub(super) rusage: libc::rusage,
}

pub(super) fn crash_message(exit: Option<Exit>, had_result: bool, stderr: &[String]) -> String {
    let last_words = stderr
        .iter()
        .rev()
        .find(|l| {
            l.contains("panicked at") || l.contains("memory allocation of") || l.contains("error")
        })
        .or(stderr.last());
    let oom = stderr
        .iter()
        .any(|l| l.contains("memory allocation of") && l.contains("failed"));
    let how = match exit {
        Some(Exit::Code(0)) => "exited with status 0 without a result".to_string(),
        Some(Exit::Code(c)) => format!("exited with status {c}"),
        Some(Exit::Signal(s)) if s == libc::SIGKILL => {
            "was killed by SIGKILL (the kernel's out-of-memory killer does this when memory runs out)".to_string()
        }
        Some(Exit::Signal(s)) => format!("was killed by {}", signal_name(s)),
        None => "could not be waited for".to_string(),
    };
    let mut msg = format!(
        "{}the worker {how}{}",
        if oom { "out of memory: " } else { "" },
        if had_result {
            " after reporting its result"
        } else {
            ""
        }
    );
    if let Some(l) = last_words {
        msg.push_str(&format!("; last stderr line: {l}"));
    }
    msg
}

/// The GPU memory peak a benchmark reported in its details, if any.
pub(super) fn gpu_memory_peak(
    details: &std::collections::BTreeMap<String, warpt_model::ParamValue>,
) -> Option<u64> {
    details
        .get("gpu_memory_peak_bytes")
        .and_then(warpt_model::ParamValue::as_i64)
        .and_then(|b| u64::try_from(b).ok())
}

/// What a worker used over its lifetime (one request): its rusage once
/// reaped, and the package's energy meanwhile.
pub(super) fn resources(
    reaped: Option<&Reaped>,
    before: Result<EnergySnapshot, warpt_system::EnergyUnavailable>,
) -> Resources {
    let mut r = Resources::default();
    if let Some(reaped) = reaped {
        let ru = &reaped.rusage;
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        // Linux reports ru_maxrss in KiB.
        r.peak_rss_bytes = Some(ru.ru_maxrss as u64 * 1024);
        r.cpu_user_s = Some(secs(ru.ru_utime));
        r.cpu_sys_s = Some(secs(ru.ru_stime));
    } else {
        r.notes
            .push("the worker could not be reaped, so its rusage is unknown".into());
    }
    add_energy(&mut r, before, "the worker's lifetime");
    r
}

/// What one request used in a worker kept across a benchmark's trials:
/// its group's CPU time between `before` and `after` (from /proc), the
/// largest peak resident set of its processes so far, and the package's
/// energy meanwhile.
pub(super) fn kept_resources(
    before: GroupUsage,
    after: GroupUsage,
    energy: Result<EnergySnapshot, warpt_system::EnergyUnavailable>,
) -> Resources {
    let mut r = Resources {
        cpu_user_s: Some((after.user_s - before.user_s).max(0.0)),
        cpu_sys_s: Some((after.system_s - before.system_s).max(0.0)),
        peak_rss_bytes: after.peak_rss_bytes,
        ..Resources::default()
    };
    r.notes.push(
        "one worker ran this benchmark's trials: CPU time is this trial's (from /proc), peak \
         RSS the largest of the worker's and its children's peaks so far"
            .into(),
    );
    add_energy(&mut r, energy, "this trial");
    r
}

/// The package energy since `before` into `r`, or why there is none.
fn add_energy(
    r: &mut Resources,
    before: Result<EnergySnapshot, warpt_system::EnergyUnavailable>,
    over: &str,
) {
    match before.and_then(|b| EnergySnapshot::read().map(|a| b.joules_until(&a))) {
        Ok(Some(j)) => {
            r.energy_j = Some(j);
            r.notes.push(format!(
                "energy_j: RAPL package energy over {over}, whole package (all processes)"
            ));
        }
        Ok(None) => r
            .notes
            .push("energy_j: RAPL domains changed during the run".into()),
        Err(e) => r.notes.push(format!("energy_j: {e}")),
    }
}

/// Reaps `pid` if it has exited, without blocking.
pub(super) fn try_reap(pid: libc::pid_t) -> Option<Reaped> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter; wait4 fills it.
    let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child; status and rusage are valid pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut rusage) };
    if rc != pid {
        return None;
    }
    let exit = if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    };
    Some(Reaped { exit, rusage })
}

/// Waits up to `grace` for `pid` to exit by itself, then kills its group.
pub(super) fn wait_or_kill(pid: libc::pid_t, grace: Duration) -> Option<Reaped> {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Some(r) = try_reap(pid) {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    kill_group(pid)
}

/// SIGTERM to the worker's process group, SIGKILL after a grace period;
/// returns once the worker is reaped.
pub(super) fn kill_group(pid: libc::pid_t) -> Option<Reaped> {
    // SAFETY: signalling our child's process group.
    unsafe { libc::kill(-pid, libc::SIGTERM) };
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        if let Some(r) = try_reap(pid) {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    for _ in 0..2000 {
        if let Some(r) = try_reap(pid) {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// The conventional name of signal `s`.
pub fn signal_name(s: i32) -> String {
    let name = match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {s}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_model::ParamValue;

    #[test]
    fn a_reported_gpu_memory_peak_moves_into_resources() {
        let mut details = std::collections::BTreeMap::new();
        assert_eq!(gpu_memory_peak(&details), None);
        details.insert(
            "gpu_memory_peak_bytes".to_string(),
            ParamValue::Int(3 << 30),
        );
        assert_eq!(gpu_memory_peak(&details), Some(3 << 30));
        details.insert("gpu_memory_peak_bytes".to_string(), ParamValue::Int(-1));
        assert_eq!(gpu_memory_peak(&details), None);
    }
}
