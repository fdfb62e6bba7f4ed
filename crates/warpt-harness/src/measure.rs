//! The sampling loop and its stopping rule.
//!
//! A benchmark hands `Measure` a closure that performs one sample and writes
//! the seconds of its timed region(s) into a slice (one slot per series, so
//! STREAM's four kernels share one loop as in the original). `Measure` warms
//! up, then samples until
//! - the minimum time has passed AND every series' 95% CI of the median is
//!   within the target relative half-width (`target_met`), or
//! - the maximum time has passed (`time_cap`), or
//! - the maximum number of samples was taken (`sample_cap`).
//!
//! Nothing in here runs inside a timed region: the closure times itself.

use std::time::{Duration, Instant};

use warpt_model::{BenchmarkMetric, StopReason};

use crate::RunContext;
use crate::progress::{Progress, ProgressEvent};
use crate::stats;

/// The limits of one measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasurePolicy {
    /// Warm-up time; at least one warm-up sample is always taken and discarded.
    pub warmup: Duration,
    /// Sampling continues at least this long.
    pub min_time: Duration,
    /// Sampling never continues past this.
    pub max_time: Duration,
    /// Target relative half-width of the median's 95% CI (0.01 = ±1%).
    pub target_rel_ci: f64,
    /// Fewest samples that may satisfy the target.
    pub min_samples: usize,
    /// Most samples kept.
    pub max_samples: usize,
}

impl MeasurePolicy {
    /// The policy for one of `parts` equal, consecutive measurements that
    /// share the benchmark's duration: each gets `duration / parts` as its
    /// minimum and three times that as its maximum.
    pub fn share_of(ctx: &RunContext, parts: usize) -> Self {
        let parts = parts.max(1) as u32;
        let min_time = ctx.duration / parts;
        MeasurePolicy {
            warmup: ctx.burnin / parts,
            min_time,
            max_time: (min_time * 3).max(Duration::from_millis(1)),
            target_rel_ci: ctx.target_rel_ci,
            min_samples: 10,
            max_samples: 10_000,
        }
    }
}

/// The samples of one measurement, in seconds, one vector per series.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// `series[s][i]`: seconds of series `s` in sample `i`.
    pub series: Vec<Vec<f64>>,
    /// Why sampling stopped.
    pub stop_reason: StopReason,
    /// Wall time spent sampling (excluding warm-up).
    pub elapsed: Duration,
    /// Number of warm-up samples discarded.
    pub warmup_samples: usize,
}

impl Measurement {
    /// A metric for series `s` whose samples are `transform(seconds)`, e.g.
    /// `|t| flops / t / 1e9`. The headline value is the median.
    pub fn metric(
        &self,
        s: usize,
        name: &str,
        unit: &str,
        higher_is_better: bool,
        tags: &[(&str, String)],
        transform: impl Fn(f64) -> f64,
    ) -> BenchmarkMetric {
        let values: Vec<f64> = self.series[s].iter().map(|&t| transform(t)).collect();
        let mut st = stats::summarize(&values);
        if let Some(st) = st.as_mut() {
            st.stop_reason = Some(self.stop_reason);
        }
        BenchmarkMetric {
            name: name.to_string(),
            value: st.as_ref().map_or(f64::NAN, |s| s.median),
            unit: unit.to_string(),
            higher_is_better,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            stats: st,
        }
    }
}

/// Runs sampling loops and keeps account of the time they took.
pub struct Measure<'a> {
    progress: &'a dyn Progress,
    warmup_total: Duration,
    measure_total: Duration,
    worst_stop: Option<StopReason>,
}

impl<'a> Measure<'a> {
    /// A measurer that reports to `progress`.
    pub fn new(progress: &'a dyn Progress) -> Self {
        Measure {
            progress,
            warmup_total: Duration::ZERO,
            measure_total: Duration::ZERO,
            worst_stop: None,
        }
    }

    /// Total warm-up time across every `run` so far.
    pub fn warmup_time(&self) -> Duration {
        self.warmup_total
    }

    /// Total sampling time across every `run` so far.
    pub fn measure_time(&self) -> Duration {
        self.measure_total
    }

    /// The worst stop reason across every `run` so far.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.worst_stop
    }

    /// Warms up, then samples `series` series with `sample` until the policy
    /// says stop. `sample` writes each series' seconds into its slice; a
    /// non-positive or non-finite time is a bug in the benchmark and panics.
    pub fn run(
        &mut self,
        policy: &MeasurePolicy,
        label: &str,
        series: usize,
        mut sample: impl FnMut(&mut [f64]),
    ) -> Measurement {
        let series = series.max(1);
        let mut slot = vec![0.0; series];

        self.progress
            .event(ProgressEvent::Stage { stage: "warmup" });
        let warm_start = Instant::now();
        let mut warmup_samples = 0;
        loop {
            sample(&mut slot);
            warmup_samples += 1;
            if warm_start.elapsed() >= policy.warmup {
                break;
            }
        }
        self.warmup_total += warm_start.elapsed();

        self.progress
            .event(ProgressEvent::Stage { stage: "measure" });
        let mut data: Vec<Vec<f64>> = vec![Vec::new(); series];
        let start = Instant::now();
        let mut next_check = 1usize;
        let mut last_report = start;
        let stop_reason = loop {
            sample(&mut slot);
            for (s, &t) in slot.iter().enumerate() {
                assert!(
                    t.is_finite() && t > 0.0,
                    "sample time {t} s of series {s} in '{label}' is not positive"
                );
                data[s].push(t);
            }
            let n = data[0].len();
            let elapsed = start.elapsed();
            if last_report.elapsed() >= Duration::from_millis(100) {
                last_report = Instant::now();
                let fraction = if policy.min_time.is_zero() {
                    1.0
                } else {
                    (elapsed.as_secs_f64() / policy.min_time.as_secs_f64()).min(1.0)
                };
                self.progress.event(ProgressEvent::Measuring {
                    label,
                    fraction,
                    samples: n,
                });
            }
            if elapsed >= policy.min_time && n >= policy.min_samples && n >= next_check {
                // Checking costs a sort per series; space checks out as n grows.
                next_check = n + (n / 50).max(1);
                if data.iter().all(|d| precision_met(d, policy.target_rel_ci)) {
                    break StopReason::TargetMet;
                }
            }
            if elapsed >= policy.max_time {
                break StopReason::TimeCap;
            }
            if n >= policy.max_samples {
                break StopReason::SampleCap;
            }
        };
        let elapsed = start.elapsed();
        self.measure_total += elapsed;
        if self
            .worst_stop
            .is_none_or(|w| stop_reason.severity() > w.severity())
        {
            self.worst_stop = Some(stop_reason);
        }
        Measurement {
            series: data,
            stop_reason,
            elapsed,
            warmup_samples,
        }
    }
}

/// Whether the 95% CI of the median of `samples` is within `target`
/// relative half-width.
fn precision_met(samples: &[f64], target: f64) -> bool {
    stats::summarize(samples).is_some_and(|s| s.relative_half_width() <= target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    fn policy(min_ms: u64, max_ms: u64, max_samples: usize) -> MeasurePolicy {
        MeasurePolicy {
            warmup: Duration::ZERO,
            min_time: Duration::from_millis(min_ms),
            max_time: Duration::from_millis(max_ms),
            target_rel_ci: 0.01,
            min_samples: 10,
            max_samples,
        }
    }

    #[test]
    fn constant_samples_meet_the_target_after_min_time() {
        let mut m = Measure::new(&NoProgress);
        let mut calls = 0;
        let r = m.run(&policy(20, 10_000, 1_000_000), "const", 2, |out| {
            calls += 1;
            std::thread::sleep(Duration::from_micros(200));
            out[0] = 1.0;
            out[1] = 2.0;
        });
        assert_eq!(r.stop_reason, StopReason::TargetMet);
        assert!(r.elapsed >= Duration::from_millis(20));
        assert_eq!(r.series.len(), 2);
        assert_eq!(
            r.warmup_samples, 1,
            "one warm-up sample is always discarded"
        );
        assert_eq!(calls, r.series[0].len() + 1);
        assert_eq!(m.stop_reason(), Some(StopReason::TargetMet));
    }

    #[test]
    fn noisy_samples_hit_the_sample_cap_or_the_time_cap() {
        // Alternating 1 and 3: the median's CI never narrows to 1%.
        let mut m = Measure::new(&NoProgress);
        let mut i = 0u64;
        let mut noisy = |out: &mut [f64]| {
            i += 1;
            out[0] = if i.is_multiple_of(2) { 1.0 } else { 3.0 };
        };
        let r = m.run(&policy(0, 60_000, 500), "noisy", 1, &mut noisy);
        assert_eq!(r.stop_reason, StopReason::SampleCap);
        assert_eq!(r.series[0].len(), 500);
        let r = m.run(&policy(0, 30, usize::MAX), "noisy", 1, |out| {
            std::thread::sleep(Duration::from_micros(100));
            noisy(out)
        });
        assert_eq!(r.stop_reason, StopReason::TimeCap);
        assert!(r.elapsed >= Duration::from_millis(30));
        assert_eq!(
            m.stop_reason(),
            Some(StopReason::TimeCap),
            "worst reason is kept"
        );
    }

    #[test]
    fn metric_transforms_seconds_and_reports_the_median() {
        let meas = Measurement {
            series: vec![vec![1.0, 2.0, 4.0]],
            stop_reason: StopReason::TimeCap,
            elapsed: Duration::from_secs(7),
            warmup_samples: 1,
        };
        let m = meas.metric(0, "rate", "op/s", true, &[("k", "v".into())], |t| 8.0 / t);
        assert_eq!(m.value, 4.0);
        let st = m.stats.unwrap();
        assert_eq!(st.samples, vec![8.0, 4.0, 2.0]);
        assert_eq!(st.stop_reason, Some(StopReason::TimeCap));
        assert_eq!(m.tags.get("k").map(String::as_str), Some("v"));
    }
}
