//! CPU time accounting from procfs: the machine's (`/proc/stat`) and a
//! process group's (`/proc/PID/stat`), for telling how much of a
//! measurement window went to the benchmark, to other processes and to the
//! hypervisor (steal).
//!
//! Every figure is in clock ticks (`USER_HZ`, 100 per second on Linux)
//! until [`Window::finish`] turns the differences into seconds and shares.

use std::fs;

use warpt_model::Interference;

/// One line of `/proc/stat` (`cpu` or `cpuN`): time in each state, in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// User mode (guest time included).
    pub user: u64,
    /// User mode at low priority.
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle with I/O outstanding.
    pub iowait: u64,
    /// Servicing hardware interrupts.
    pub irq: u64,
    /// Servicing softirqs.
    pub softirq: u64,
    /// Taken by the hypervisor for other guests while this guest wanted to run.
    pub steal: u64,
}

impl CpuTimes {
    /// Parses the numbers after a `cpu` label; missing trailing columns
    /// (older kernels) are zero.
    fn parse(fields: &[&str]) -> Option<Self> {
        let v: Vec<u64> = fields
            .iter()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        (v.len() >= 4).then(|| CpuTimes {
            user: at(0),
            nice: at(1),
            system: at(2),
            idle: at(3),
            iowait: at(4),
            irq: at(5),
            softirq: at(6),
            steal: at(7),
        })
    }

    /// Time spent running tasks: user, nice and system.
    pub fn tasks(&self) -> u64 {
        self.user + self.nice + self.system
    }

    /// Every column: the machine's whole capacity over the period.
    pub fn total(&self) -> u64 {
        self.tasks() + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }

    /// Busy time (everything but idle and iowait), for utilisation.
    pub fn busy(&self) -> u64 {
        self.total() - self.idle - self.iowait
    }

    /// Field-wise `self - earlier`, saturating (a counter never goes back,
    /// but a CPU going offline can make a sum do so).
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// What `/proc/stat` says at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The `cpu` line: all CPUs together.
    pub total: CpuTimes,
    /// One entry per `cpuN` line.
    pub per_cpu: Vec<CpuTimes>,
    /// `procs_running`: runnable tasks right now, the reader included.
    pub procs_running: Option<u32>,
}

impl ProcStat {
    /// Parses the text of `/proc/stat`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut out = ProcStat::default();
        let mut saw_total = false;
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let Some(label) = fields.next() else { continue };
            let rest: Vec<&str> = fields.collect();
            if label == "cpu" {
                out.total = CpuTimes::parse(&rest)?;
                saw_total = true;
            } else if label.starts_with("cpu") && label[3..].bytes().all(|b| b.is_ascii_digit()) {
                out.per_cpu.push(CpuTimes::parse(&rest)?);
            } else if label == "procs_running" {
                out.procs_running = rest.first().and_then(|v| v.parse().ok());
            }
        }
        saw_total.then_some(out)
    }

    /// Reads `/proc/stat` now.
    pub fn read() -> Option<Self> {
        Self::parse(&fs::read_to_string("/proc/stat").ok()?)
    }
}

/// Clock ticks per second (`USER_HZ`) of the times in procfs.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// The fields of `/proc/PID/stat` that matter here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessTimes {
    /// Process group id.
    pub pgrp: i32,
    /// utime + stime of every thread, plus cutime + cstime of reaped
    /// children, in ticks.
    pub ticks: u64,
    /// The user-mode part of `ticks` (utime + cutime).
    pub user: u64,
    /// The kernel-mode part of `ticks` (stime + cstime).
    pub system: u64,
}

impl ProcessTimes {
    /// Parses one `/proc/PID/stat` line. The command name (field 2) may
    /// hold spaces and parentheses, so fields are counted after its last `)`.
    pub fn parse(line: &str) -> Option<Self> {
        let after = &line[line.rfind(')')? + 1..];
        let f: Vec<&str> = after.split_whitespace().collect();
        // After the name: state(3) ppid(4) pgrp(5) ... utime(14) stime(15) cutime(16) cstime(17).
        let num = |field: usize| f.get(field - 3).and_then(|v| v.parse::<u64>().ok());
        let (user, system) = (num(14)? + num(16)?, num(15)? + num(17)?);
        Some(ProcessTimes {
            pgrp: f.get(2)?.parse().ok()?,
            ticks: user + system,
            user,
            system,
        })
    }

    /// Reads `/proc/PID/stat` (`self` for this process).
    pub fn read(pid: &str) -> Option<Self> {
        Self::parse(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }
}

/// CPU ticks used by every live process in process group `pgid`
/// (their reaped children included).
pub fn group_ticks(pgid: i32) -> u64 {
    group(pgid).map(|(_, p)| p.ticks).sum()
}

/// What the live processes of group `pgid` have used so far: user and
/// kernel seconds (their reaped children included), and the largest peak
/// resident set (`VmHWM`) of any of them, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupUsage {
    /// User-mode CPU seconds.
    pub user_s: f64,
    /// Kernel-mode CPU seconds.
    pub system_s: f64,
    /// The largest of the processes' peak resident sets, bytes.
    pub peak_rss_bytes: Option<u64>,
}

impl GroupUsage {
    /// Reads group `pgid`'s usage now.
    pub fn read(pgid: i32) -> Self {
        let hz = ticks_per_second();
        let mut u = GroupUsage::default();
        for (pid, p) in group(pgid) {
            u.user_s += p.user as f64 / hz;
            u.system_s += p.system as f64 / hz;
            let peak = fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| vm_hwm(&s));
            u.peak_rss_bytes = u.peak_rss_bytes.max(peak);
        }
        u
    }
}

/// `VmHWM` of a `/proc/PID/status` text, in bytes.
fn vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The live processes of group `pgid`, each with its pid.
fn group(pgid: i32) -> impl Iterator<Item = (String, ProcessTimes)> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|pid| ProcessTimes::read(&pid).map(|p| (pid, p)))
        .filter(move |(_, p)| p.pgrp == pgid)
}

/// Whose CPU time is the benchmark's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// A worker and its children: the process group with this id.
    Group(i32),
    /// This process (a benchmark run in-process).
    ThisProcess,
    /// This process and the one that started it: a benchmark run
    /// in-process whose code runs in the parent (the pytest plugin's tests,
    /// which warpt drives over a socket).
    WithParent,
}

#[derive(Debug, Clone)]
struct Snapshot {
    at: std::time::Instant,
    stat: ProcStat,
    benchmark: u64,
    own: u64,
}

impl Snapshot {
    fn take(measured: Measured) -> Option<Self> {
        let own = ProcessTimes::read("self")?.ticks;
        let benchmark = match measured {
            Measured::Group(pgid) => group_ticks(pgid),
            Measured::ThisProcess => own,
            Measured::WithParent => {
                let parent = std::os::unix::process::parent_id().to_string();
                own + ProcessTimes::read(&parent).map_or(0, |p| p.ticks)
            }
        };
        Some(Snapshot {
            at: std::time::Instant::now(),
            stat: ProcStat::read()?,
            benchmark,
            own,
        })
    }
}

/// Interference accounting over one measurement window: a snapshot at the
/// start, run-queue samples while it lasts, a snapshot at the end.
#[derive(Debug, Clone)]
pub struct Window {
    measured: Measured,
    start: Snapshot,
    run_queue: Vec<u32>,
}

impl Window {
    /// Starts a window now; `None` where procfs cannot be read.
    pub fn start(measured: Measured) -> Option<Self> {
        Some(Window {
            measured,
            start: Snapshot::take(measured)?,
            run_queue: Vec::new(),
        })
    }

    /// Records the run-queue length now (call it every few hundred ms).
    pub fn sample_run_queue(&mut self) {
        if let Some(n) = ProcStat::read().and_then(|s| s.procs_running) {
            self.run_queue.push(n);
        }
    }

    /// Ends the window now and attributes its CPU time.
    pub fn finish(mut self) -> Option<Interference> {
        self.sample_run_queue();
        let end = Snapshot::take(self.measured)?;
        Some(attribute(&self.start, &end, &self.run_queue, self.measured))
    }
}

fn attribute(
    start: &Snapshot,
    end: &Snapshot,
    run_queue: &[u32],
    measured: Measured,
) -> Interference {
    let hz = ticks_per_second();
    let d = end.stat.total.since(&start.stat.total);
    let cpus = end.stat.per_cpu.len().max(1);
    let window_s = end.at.duration_since(start.at).as_secs_f64();
    let benchmark = end.benchmark.saturating_sub(start.benchmark);
    // This process's own time (the supervisor, the monitor) is neither the
    // benchmark's nor foreign; in-process it is the benchmark's.
    let own = match measured {
        Measured::Group(_) => end.own.saturating_sub(start.own),
        Measured::ThisProcess | Measured::WithParent => 0,
    };
    let foreign_ticks = d.tasks().saturating_sub(benchmark + own);
    let foreign_cpu_s = foreign_ticks as f64 / hz;
    let capacity = window_s * cpus as f64;
    Interference {
        window_s,
        cpus,
        steal_share: (d.total() > 0).then(|| d.steal as f64 / d.total() as f64),
        foreign_cpu_s: Some(foreign_cpu_s),
        foreign_cpu_share: (capacity > 0.0).then(|| (foreign_cpu_s / capacity).min(1.0)),
        benchmark_cpu_s: Some(benchmark as f64 / hz),
        run_queue_mean: (!run_queue.is_empty())
            .then(|| run_queue.iter().map(|&n| f64::from(n)).sum::<f64>() / run_queue.len() as f64),
        run_queue_max: run_queue.iter().copied().max(),
    }
}

/// CPU time other processes used over `period` from now, as a share of
/// the machine (for a warning before a run starts); `None` where procfs
/// cannot be read.
pub fn foreign_share_now(period: std::time::Duration) -> Option<f64> {
    let w = Window::start(Measured::ThisProcess)?;
    std::thread::sleep(period);
    w.finish()?.foreign_cpu_share
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  29455 10 4656 254888 1002 3 34 977 0 0
cpu0 14000 5 2300 127000 500 1 17 480 0 0
cpu1 15455 5 2356 127888 502 2 17 497 0 0
intr 1 2 3
ctxt 123
procs_running 3
procs_blocked 0
";

    #[test]
    fn parses_proc_stat() {
        let s = ProcStat::parse(STAT).expect("parses");
        assert_eq!(s.per_cpu.len(), 2);
        assert_eq!(s.procs_running, Some(3));
        assert_eq!(s.total.steal, 977);
        assert_eq!(s.total.tasks(), 29455 + 10 + 4656);
        assert_eq!(
            s.total.total(),
            29455 + 10 + 4656 + 254888 + 1002 + 3 + 34 + 977
        );
        assert!(ProcStat::parse("intr 1\n").is_none());
    }

    #[test]
    fn parses_process_stat_with_a_hostile_name() {
        let line =
            "4242 (a (b) c) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 7 3 20 0 1 0 100 0 0";
        let p = ProcessTimes::parse(line).expect("parses");
        assert_eq!(p.pgrp, 4242);
        assert_eq!(p.ticks, 250 + 50 + 7 + 3);
        assert_eq!((p.user, p.system), (250 + 7, 50 + 3));
        let me = ProcessTimes::read("self").expect("own stat");
        // SAFETY: getpgrp has no preconditions.
        assert_eq!(me.pgrp, unsafe { libc::getpgrp() });
    }

    #[test]
    fn reads_a_group_s_usage_and_peak() {
        assert_eq!(
            vm_hwm("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t1 kB\n"),
            Some(2 << 20)
        );
        assert_eq!(vm_hwm("Name:\tx\n"), None);
        // This test's own group: at least this process, which has a peak.
        // SAFETY: getpgrp has no preconditions.
        let u = GroupUsage::read(unsafe { libc::getpgrp() });
        assert!(u.peak_rss_bytes.is_some_and(|b| b > 0), "{u:?}");
        assert!(u.user_s >= 0.0 && u.system_s >= 0.0);
        assert_eq!(GroupUsage::read(-7), GroupUsage::default());
    }

    #[test]
    fn attributes_a_window() {
        let at = std::time::Instant::now();
        let start = Snapshot {
            at,
            stat: ProcStat::parse(STAT).expect("parses"),
            benchmark: 1000,
            own: 50,
        };
        let mut later = start.stat.clone();
        // 2 s on 2 CPUs at 100 Hz = 400 ticks: 200 benchmark, 10 own,
        // 100 foreign, 20 steal, the rest idle.
        later.total.user += 300;
        later.total.system += 10;
        later.total.steal += 20;
        later.total.idle += 70;
        let end = Snapshot {
            at: at + std::time::Duration::from_secs(2),
            stat: later,
            benchmark: 1200,
            own: 60,
        };
        let i = attribute(&start, &end, &[3, 4], Measured::Group(1));
        let hz = ticks_per_second();
        assert!((i.benchmark_cpu_s.unwrap_or(0.0) - 200.0 / hz).abs() < 1e-9);
        assert!((i.foreign_cpu_s.unwrap_or(0.0) - 100.0 / hz).abs() < 1e-9);
        assert!((i.steal_share.unwrap_or(0.0) - 20.0 / 400.0).abs() < 1e-9);
        assert_eq!(i.run_queue_max, Some(4));
        assert_eq!(i.run_queue_mean, Some(3.5));
        assert_eq!(i.cpus, 2);
    }
}
