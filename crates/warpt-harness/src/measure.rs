//! The sampling loop and its stopping rule.
//!
//! A benchmark declares the series it measures ([`SeriesDef`]: metric name,
//! unit, tags and how seconds become the metric's value) and hands `Measure`
//! a closure that performs one sample and writes the seconds of each
//! series' timed region into a slice (so STREAM's four kernels share one
//! loop, as in the original). `Measure` warms up, then samples until
//! - the minimum time has passed AND every series' 95% CI of the median is
//!   within the target relative half-width (`target_met`), or
//! - the maximum time has passed (`time_cap`), or
//! - the maximum number of samples was taken (`sample_cap`).
//!
//! Every sample is also reported as a progress event, so a supervisor can
//! keep the samples taken so far when it has to stop a benchmark.
//! Nothing in here runs inside a timed region: the closure times itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use warpt_model::{BenchmarkMetric, MetricStats, StopReason};

use crate::RegimeRecorder;
use crate::RunContext;
use crate::progress::{Progress, ProgressEvent};

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

/// How many times the minimum time sampling may run before `time_cap`.
pub const MAX_TIME_FACTOR: u32 = 3;

impl MeasurePolicy {
    /// The policy for one of `parts` equal, consecutive measurements that
    /// share the benchmark's duration and warm-up: each gets `1/parts` of
    /// both, and [`MAX_TIME_FACTOR`] times its minimum as its maximum.
    pub fn share_of(ctx: &RunContext, parts: usize) -> Self {
        let parts = parts.max(1) as u32;
        let min_time = ctx.duration / parts;
        MeasurePolicy {
            warmup: ctx.burnin / parts,
            min_time,
            max_time: (min_time * MAX_TIME_FACTOR).max(Duration::from_millis(1)),
            target_rel_ci: ctx.target_rel_ci,
            min_samples: 10,
            max_samples: 10_000,
        }
    }
}

pub use warpt_model::{Convert, SeriesDef};

/// The metric a series' values become (the statistics live here, the
/// series' identity in the model).
pub trait SeriesMetrics {
    /// The metric for `values` (already converted), with full statistics;
    /// the headline value is the median.
    fn metric(&self, values: &[f64], stop_reason: Option<StopReason>) -> BenchmarkMetric;
    /// The metric of per-event values too many to keep whole (per-I/O or
    /// per-message latencies): statistics over all of them, `samples`
    /// thinned to at most `keep` (see [`MetricStats::summarize_large`]).
    fn metric_of_events(
        &self,
        values: &[f64],
        keep: usize,
        stop_reason: Option<StopReason>,
    ) -> Option<BenchmarkMetric>;
}

impl SeriesMetrics for SeriesDef {
    fn metric(&self, values: &[f64], stop_reason: Option<StopReason>) -> BenchmarkMetric {
        let mut st = MetricStats::summarize(values);
        if let Some(st) = st.as_mut() {
            st.stop_reason = stop_reason;
        }
        BenchmarkMetric {
            name: self.name.clone(),
            value: st.as_ref().map_or(f64::NAN, |s| s.median),
            unit: self.unit.clone(),
            higher_is_better: self.higher_is_better,
            tags: self.tags.clone(),
            stats: st,
        }
    }

    fn metric_of_events(
        &self,
        values: &[f64],
        keep: usize,
        stop_reason: Option<StopReason>,
    ) -> Option<BenchmarkMetric> {
        let mut st = MetricStats::summarize_large(values, keep)?;
        st.stop_reason = stop_reason;
        Some(BenchmarkMetric {
            name: self.name.clone(),
            value: st.median,
            unit: self.unit.clone(),
            higher_is_better: self.higher_is_better,
            tags: self.tags.clone(),
            stats: Some(st),
        })
    }
}

/// The outcome of one measurement: a metric per series.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// One metric per declared series, in declaration order.
    pub metrics: Vec<BenchmarkMetric>,
    /// Why sampling stopped.
    pub stop_reason: StopReason,
    /// Wall time spent sampling (excluding warm-up).
    pub elapsed: Duration,
    /// Number of warm-up samples discarded.
    pub warmup_samples: usize,
}

/// Runs sampling loops, reports every sample, and keeps account of time.
pub struct Measure<'a> {
    progress: &'a dyn Progress,
    stop: Option<&'a AtomicBool>,
    warmup_total: Duration,
    measure_total: Duration,
    worst_stop: Option<StopReason>,
    next_key: usize,
    measuring: std::sync::Arc<AtomicBool>,
    notes: Vec<String>,
    regime: RegimeRecorder,
}

impl<'a> Measure<'a> {
    /// A measurer that reports to `progress`.
    pub fn new(progress: &'a dyn Progress) -> Self {
        Measure {
            progress,
            stop: None,
            warmup_total: Duration::ZERO,
            measure_total: Duration::ZERO,
            worst_stop: None,
            next_key: 0,
            measuring: Default::default(),
            notes: Vec::new(),
            regime: RegimeRecorder::default(),
        }
    }

    /// Also read the core's speed, as `probe` says, once measuring starts
    /// and after every series (see [`RegimeRecorder`]).
    pub fn with_clock_probe(mut self, probe: warpt_model::ClockProbe) -> Self {
        self.regime.clock_probe = Some(probe);
        self
    }

    /// The regime probes' readings, for a benchmark to add its own (a
    /// cache canary, a scaling check) or to read the clock's.
    pub fn regime(&mut self) -> &mut RegimeRecorder {
        &mut self.regime
    }

    /// What the regime probes read, taken once; `None` when nothing was probed.
    pub fn take_regime(&mut self) -> Option<warpt_model::RegimeProbes> {
        self.regime.take()
    }

    /// A flag that is set while a `run` takes counted samples and clear
    /// during its warm-up (and between runs), for a sampling closure that
    /// must tell the two apart (e.g. to act after N measured samples).
    pub fn measuring_flag(&self) -> std::sync::Arc<AtomicBool> {
        std::sync::Arc::clone(&self.measuring)
    }

    /// Also stop sampling (as at the time cap) as soon as `flag` is set.
    pub fn with_stop_flag(mut self, flag: &'a AtomicBool) -> Self {
        self.stop = Some(flag);
        self
    }

    /// Marks the start of a measurement the benchmark times itself (a load
    /// test whose length its own rules decide, recorded afterwards with
    /// [`record`](Self::record)), so the supervisor holds it to the
    /// measurement limit rather than the warm-up's.
    pub fn begin_measurement(&mut self) {
        self.progress
            .event(ProgressEvent::Stage { stage: "measure" });
    }

    /// Sets the limit of `stage` to `limit` in total, reckoned by the benchmark from its own
    /// work, and names the `part` of the work now running (shown in progress
    /// and in a timeout's message). The timeout multiplier still applies; a
    /// limit the user configured for the stage stands.
    pub fn limit_stage(&mut self, stage: crate::Stage, limit: Duration, part: &str) {
        self.progress.event(ProgressEvent::StageLimit {
            stage: stage.name(),
            seconds: limit.as_secs_f64(),
            part,
        });
    }

    /// Reports progress of a measurement the benchmark runs itself:
    /// `fraction` (0..=1) of it done, `samples` taken, for the series `label`.
    pub fn report_progress(&self, label: &str, fraction: f64, samples: usize) {
        self.progress.event(ProgressEvent::Measuring {
            label,
            fraction: fraction.clamp(0.0, 1.0),
            samples,
        });
    }

    /// What the measurement noticed that the result should say (a series
    /// whose one sample outlasted its share of the duration), taken once.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
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

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// [`Measure::run`] for one series of seconds: each call of `pass`
    /// timed on the wall clock. `pass` is handed the previous pass's
    /// result (to size the next pass by it); the last comes back with the
    /// measurement, each earlier one dropped outside the timed region.
    pub fn time<T>(
        &mut self,
        policy: &MeasurePolicy,
        label: &str,
        def: &SeriesDef,
        mut pass: impl FnMut(Option<&T>) -> T,
    ) -> (Measurement, Option<T>) {
        let mut last: Option<T> = None;
        let m = self.run(policy, label, std::slice::from_ref(def), |out| {
            let start = Instant::now();
            let result = pass(last.as_ref());
            out[0] = start.elapsed().as_secs_f64();
            last = Some(result);
        });
        (m, last)
    }

    /// Warms up, then samples the series `defs` with `sample` until the
    /// policy says stop. `sample` writes each series' seconds (or value,
    /// for [`Convert::Value`]) into its slot; a non-positive or non-finite
    /// time is a bug in the benchmark and panics.
    pub fn run(
        &mut self,
        policy: &MeasurePolicy,
        label: &str,
        defs: &[SeriesDef],
        mut sample: impl FnMut(&mut [f64]),
    ) -> Measurement {
        let (m, _) = self.run_fallible(policy, label, defs, |slot| {
            sample(slot);
            Ok::<(), std::convert::Infallible>(())
        });
        m
    }

    /// [`Measure::run`] for a sample that can fail (a user's function that
    /// raises): the first error stops sampling, that sample is not kept,
    /// and the samples before it are (stop reason `error`), with the error.
    pub fn run_fallible<E>(
        &mut self,
        policy: &MeasurePolicy,
        label: &str,
        defs: &[SeriesDef],
        sample: impl FnMut(&mut [f64]) -> Result<(), E>,
    ) -> (Measurement, Option<E>) {
        self.run_fallible_ahead(policy, label, defs, sample, |_| None)
    }

    /// [`Measure::run_fallible`] for a `sample` that starts the next
    /// sample before it returns this one (a request sent ahead to another
    /// process, so that process never waits for this one between
    /// samples). Once the policy has stopped, `ahead` hands over the
    /// samples already started, one per call (`None`: no more): they were
    /// measured like the rest and count in the series, unless sampling
    /// stopped at the sample cap, by an interrupt or by an error.
    pub fn run_fallible_ahead<E>(
        &mut self,
        policy: &MeasurePolicy,
        label: &str,
        defs: &[SeriesDef],
        mut sample: impl FnMut(&mut [f64]) -> Result<(), E>,
        mut ahead: impl FnMut(&mut [f64]) -> Option<Result<(), E>>,
    ) -> (Measurement, Option<E>) {
        assert!(!defs.is_empty(), "a measurement needs at least one series");
        let mut error = None;
        let mut slot = vec![0.0; defs.len()];

        self.progress
            .event(ProgressEvent::Stage { stage: "warmup" });
        let warm_start = Instant::now();
        let mut warmup_samples = 0;
        loop {
            if let Err(e) = sample(&mut slot) {
                error = Some(e);
                break;
            }
            warmup_samples += 1;
            if warm_start.elapsed() >= policy.warmup || self.stopped() {
                break;
            }
        }
        self.warmup_total += warm_start.elapsed();
        self.regime.first_clock();

        let first_key = self.begin(defs);
        self.measuring.store(true, Ordering::Relaxed);
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); defs.len()];
        let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); defs.len()];
        let start = Instant::now();
        let mut next_check = 1usize;
        let mut last_report = start;
        let stop_reason = loop {
            if error.is_some() {
                break StopReason::Error;
            }
            if let Err(e) = sample(&mut slot) {
                error = Some(e);
                break StopReason::Error;
            }
            self.keep(label, defs, &slot, first_key, &mut seconds, &mut values);
            let n = values[0].len();
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
                if seconds
                    .iter()
                    .all(|d| precision_met(d, policy.target_rel_ci))
                {
                    break StopReason::TargetMet;
                }
            }
            if elapsed >= policy.max_time || self.stopped() {
                break StopReason::TimeCap;
            }
            if n >= policy.max_samples {
                break StopReason::SampleCap;
            }
        };
        if matches!(stop_reason, StopReason::TargetMet | StopReason::TimeCap) && !self.stopped() {
            while let Some(taken) = ahead(&mut slot) {
                if let Err(e) = taken {
                    error = Some(e);
                    break;
                }
                self.keep(label, defs, &slot, first_key, &mut seconds, &mut values);
            }
        }
        self.measuring.store(false, Ordering::Relaxed);
        let elapsed = start.elapsed();
        self.regime.clock();
        if stop_reason == StopReason::TimeCap && values[0].len() == 1 && !self.stopped() {
            self.notes.push(format!(
                "'{label}': one sample took {:.3} s, more than this series' share of the \
                 duration ({:.3} s at most): measured with that one sample",
                elapsed.as_secs_f64(),
                policy.max_time.as_secs_f64()
            ));
        }
        let m = self.end(
            first_key,
            defs,
            &values,
            stop_reason,
            elapsed,
            warmup_samples,
        );
        (m, error)
    }

    /// Adds one sample (`slot`: a value per series) to the series.
    fn keep(
        &self,
        label: &str,
        defs: &[SeriesDef],
        slot: &[f64],
        first_key: usize,
        seconds: &mut [Vec<f64>],
        values: &mut [Vec<f64>],
    ) {
        for (s, &t) in slot.iter().enumerate() {
            assert!(
                t.is_finite() && (t > 0.0 || !defs[s].convert.is_time()),
                "sample {t} of series {s} in '{label}' is not a positive time or a finite value"
            );
            let v = defs[s].convert.apply(t);
            seconds[s].push(t);
            values[s].push(v);
            self.progress.event(ProgressEvent::Sample {
                key: first_key + s,
                value: v,
            });
        }
    }

    /// Records samples timed by an external tool (HPL's own timer): `rows[i]`
    /// holds sample `i`'s seconds, one per series; the first `warmup` rows
    /// are discarded as warm-up. They are reported like sampled ones; the
    /// stop reason is `sample_cap`, since the tool ran the number of samples
    /// it was asked for. `elapsed` is the tool's wall time.
    pub fn record(
        &mut self,
        defs: &[SeriesDef],
        rows: &[Vec<f64>],
        warmup: usize,
        elapsed: Duration,
    ) -> Measurement {
        let first_key = self.begin(defs);
        self.measuring.store(true, Ordering::Relaxed);
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); defs.len()];
        for row in rows.iter().skip(warmup) {
            for ((s, def), &t) in defs.iter().enumerate().zip(row) {
                let v = def.convert.apply(t);
                values[s].push(v);
                self.progress.event(ProgressEvent::Sample {
                    key: first_key + s,
                    value: v,
                });
            }
        }
        let warmup = warmup.min(rows.len());
        self.end(
            first_key,
            defs,
            &values,
            StopReason::SampleCap,
            elapsed,
            warmup,
        )
    }

    fn begin(&mut self, defs: &[SeriesDef]) -> usize {
        self.progress
            .event(ProgressEvent::Stage { stage: "measure" });
        let first_key = self.next_key;
        self.next_key += defs.len();
        for (i, def) in defs.iter().enumerate() {
            self.progress.event(ProgressEvent::SeriesStarted {
                key: first_key + i,
                def,
            });
        }
        first_key
    }

    fn end(
        &mut self,
        first_key: usize,
        defs: &[SeriesDef],
        values: &[Vec<f64>],
        stop_reason: StopReason,
        elapsed: Duration,
        warmup_samples: usize,
    ) -> Measurement {
        self.measure_total += elapsed;
        if self
            .worst_stop
            .is_none_or(|w| stop_reason.severity() > w.severity())
        {
            self.worst_stop = Some(stop_reason);
        }
        for i in 0..defs.len() {
            self.progress.event(ProgressEvent::SeriesFinished {
                key: first_key + i,
                stop_reason,
            });
        }
        Measurement {
            metrics: defs
                .iter()
                .zip(values)
                .map(|(d, v)| d.metric(v, Some(stop_reason)))
                .collect(),
            stop_reason,
            elapsed,
            warmup_samples,
        }
    }
}

/// Whether the 95% CI of the median of `samples` is within `target`
/// relative half-width.
fn precision_met(samples: &[f64], target: f64) -> bool {
    MetricStats::summarize(samples).is_some_and(|s| s.relative_half_width() <= target)
}

#[cfg(test)]
mod tests;
