//! Interference detection: what else used the machine while a benchmark
//! measured, and how that grades the result.
//!
//! The figures come from CPU time accounting over the measurement window
//! (see [`warpt_system::procstat`]): the hypervisor's steal time, the CPU
//! time of processes other than the benchmark's and warpt's own, and the
//! run queue. A load average would still hold the previous benchmark's
//! load; these are measured over the window itself.

use warpt_model::{Interference, STEAL_PREFIX};
use warpt_system::procstat::{Measured, Window};

use crate::limits::Stage;

/// Steal above this share of all CPU time makes a result `noisy`.
pub const STEAL_NOISY: f64 = 0.02;
/// Steal above this share makes it `unreliable`.
pub const STEAL_UNRELIABLE: f64 = 0.10;
/// Other processes' CPU time above this share of the machine makes a result `noisy`.
pub const FOREIGN_NOISY: f64 = 0.05;
/// Above this share it is `unreliable`.
pub const FOREIGN_UNRELIABLE: f64 = 0.25;
/// Less CPU time than this (seconds, five 100 Hz ticks) is never graded:
/// over a short window one tick of accounting is already a large share.
pub const MIN_GRADED_S: f64 = 0.05;

/// The accounting of one benchmark's measurement window, driven by its
/// stage changes: opened when measurement first begins, closed at
/// validation (or when the benchmark ends some other way).
#[derive(Debug, Default)]
pub enum Probe {
    /// Measurement has not begun.
    #[default]
    Waiting,
    /// Measuring.
    Open(Window),
    /// Closed, with the figures (none where procfs is unreadable).
    Closed(Option<Interference>),
}

impl Probe {
    /// Follows a stage change of the benchmark whose CPU time is `measured`.
    pub fn on_stage(&mut self, stage: Stage, measured: Measured) {
        match (stage, &*self) {
            (Stage::Measure, Probe::Waiting) => {
                *self = match Window::start(measured) {
                    Some(w) => Probe::Open(w),
                    None => Probe::Closed(None),
                }
            }
            (Stage::Validate, Probe::Open(_)) => self.close(),
            _ => {}
        }
    }

    /// Samples the run queue if the window is open.
    pub fn sample(&mut self) {
        if let Probe::Open(w) = self {
            w.sample_run_queue();
        }
    }

    /// Closes the window if it is open.
    pub fn close(&mut self) {
        if matches!(self, Probe::Open(_))
            && let Probe::Open(w) = std::mem::take(self)
        {
            *self = Probe::Closed(w.finish());
        }
    }

    /// The figures, closing the window first if needed.
    pub fn finish(mut self) -> Option<Interference> {
        self.close();
        match self {
            Probe::Closed(i) => i,
            _ => None,
        }
    }
}

/// Quality reasons from a window's figures: `(noisy, unreliable)`. Each
/// reason starts with the name of what was seen (`foreign_cpu`, `steal`),
/// so scripts can match it; other processes' before the hypervisor's steal
/// (a comparison of one run a side weighs steal, and a regime, by what
/// they can explain, but holds back on anything else: see
/// `warpt_harness::quality`'s order of reasons).
pub fn grade(i: &Interference) -> (Vec<String>, Vec<String>) {
    let mut noisy = Vec::new();
    let mut unreliable = Vec::new();
    let capacity = i.window_s * i.cpus as f64;
    if let (Some(share), Some(secs)) = (
        i.foreign_cpu_share,
        i.foreign_cpu_s.filter(|s| *s >= MIN_GRADED_S),
    ) {
        let queue = i
            .run_queue_mean
            .map(|q| format!("; run queue {q:.1} on average"))
            .unwrap_or_default();
        let msg = format!(
            "foreign_cpu: other processes used {:.0}% of the {} CPUs during measurement \
             ({secs:.2} CPU-s in {:.1} s{queue})",
            share * 100.0,
            i.cpus,
            i.window_s
        );
        if share > FOREIGN_UNRELIABLE {
            unreliable.push(msg);
        } else if share > FOREIGN_NOISY {
            noisy.push(msg);
        }
    }
    if let Some(steal) = i.steal_share.filter(|s| s * capacity >= MIN_GRADED_S) {
        let msg = format!(
            "{STEAL_PREFIX}the hypervisor took {:.1}% of CPU time during measurement ({:.1} s window)",
            steal * 100.0,
            i.window_s
        );
        if steal > STEAL_UNRELIABLE {
            unreliable.push(msg);
        } else if steal > STEAL_NOISY {
            noisy.push(msg);
        }
    }
    (noisy, unreliable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_window_keeps_its_figures() {
        let mut p = Probe::default();
        p.on_stage(Stage::Warmup, Measured::ThisProcess);
        assert!(matches!(p, Probe::Waiting));
        p.on_stage(Stage::Measure, Measured::ThisProcess);
        p.sample();
        p.on_stage(Stage::Validate, Measured::ThisProcess);
        p.close();
        let i = p.finish().expect("figures on a Linux machine");
        assert!(i.cpus >= 1 && i.run_queue_max.is_some(), "{i:?}");
    }

    #[test]
    fn grades_by_share() {
        let quiet = Interference {
            window_s: 2.0,
            cpus: 2,
            steal_share: Some(0.001),
            foreign_cpu_s: Some(0.02),
            foreign_cpu_share: Some(0.005),
            ..Interference::default()
        };
        assert_eq!(grade(&quiet), (vec![], vec![]));
        let busy = Interference {
            steal_share: Some(0.05),
            foreign_cpu_s: Some(2.0),
            foreign_cpu_share: Some(0.5),
            run_queue_mean: Some(3.5),
            ..quiet.clone()
        };
        let (noisy, unreliable) = grade(&busy);
        assert!(noisy[0].starts_with("steal: "), "{noisy:?}");
        assert!(unreliable[0].starts_with("foreign_cpu: "), "{unreliable:?}");
        assert!(unreliable[0].contains("50%") && unreliable[0].contains("run queue 3.5"));
    }
}
