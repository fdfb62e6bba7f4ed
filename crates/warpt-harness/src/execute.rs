//! The stages of one benchmark run, as the worker process (or the caller,
//! in-process) executes them, and a clock that times those stages.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use warpt_model::{
    BenchmarkMetric, ParamValue, RunStatus, StageError, StageRecord, StageStatus, StopReason,
    Validation, Watchdog,
};

use crate::limits::{EffectiveLimits, Stage};
use crate::progress::{Progress, ProgressEvent};
use crate::{Benchmark, BenchmarkError, Measure, RunContext};

/// What a benchmark produced, from its own point of view (the process
/// around it adds timing, resources and the verdict on crashes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// `passed`, `failed` or `skipped`.
    pub status: RunStatus,
    /// Why it failed or was skipped.
    pub error_message: Option<String>,
    /// The metrics.
    pub metrics: Vec<BenchmarkMetric>,
    /// Benchmark-specific facts.
    pub details: BTreeMap<String, ParamValue>,
    /// Caveats.
    pub warnings: Vec<String>,
    /// The worst stop reason over its series.
    pub stop_reason: Option<StopReason>,
    /// The check of the answer.
    pub validation: Option<Validation>,
    /// What the regime probes read while it measured.
    #[serde(default)]
    pub regime: Option<warpt_model::RegimeProbes>,
    /// Every error, with its stage (empty for a skip).
    #[serde(default)]
    pub errors: Vec<StageError>,
}

impl Outcome {
    /// A stage that passed with nothing to report (a probe's).
    pub(crate) fn passed() -> Outcome {
        Outcome {
            status: RunStatus::Passed,
            error_message: None,
            metrics: Vec::new(),
            details: BTreeMap::new(),
            warnings: Vec::new(),
            stop_reason: None,
            validation: None,
            regime: None,
            errors: Vec::new(),
        }
    }

    /// `e`, met in `stage`, as the outcome.
    pub(crate) fn from_error(e: BenchmarkError, stage: &str) -> Outcome {
        let errors = match &e {
            BenchmarkError::Skipped(_) => Vec::new(),
            other => vec![other.at_stage(stage)],
        };
        let (status, msg) = match e {
            BenchmarkError::Skipped(reason) => (RunStatus::Skipped, reason),
            other => (RunStatus::Failed, other.to_string()),
        };
        Outcome {
            status,
            errors,
            error_message: Some(msg),
            ..Outcome::passed()
        }
    }

    /// Moves what the benchmark produced into `result` (status, metrics,
    /// details, warnings, validation, regime probes).
    pub fn apply_to(self, result: &mut warpt_model::BenchmarkRunResult) {
        result.set_status(self.status);
        result.error_message = self.error_message;
        result.metrics = self.metrics;
        result.details = self.details;
        result.warnings = self.warnings;
        result.stop_reason = self.stop_reason;
        result.validation = self.validation;
        result.regime = self.regime;
        result.errors = self.errors;
    }
}

/// Runs prepare, measure and validate, reporting stages to `progress`.
/// Errors become an outcome; panics are the caller's to catch.
pub fn execute(
    bench: &mut dyn Benchmark,
    ctx: &RunContext,
    progress: &dyn Progress,
    stop: Option<&AtomicBool>,
) -> Outcome {
    progress.event(ProgressEvent::Stage { stage: "setup" });
    let announce = |l: &crate::WorkLimit| {
        progress.event(ProgressEvent::StageLimit {
            stage: l.stage.name(),
            seconds: l.limit.as_secs_f64(),
            part: &l.part,
        })
    };
    if let Some(l) = bench.setup_limit(ctx) {
        announce(&l);
    }
    if let Err(e) = bench.prepare(ctx) {
        return Outcome::from_error(e, "setup");
    }
    for l in bench.work_limits(ctx) {
        announce(&l);
    }
    // Work a benchmark does before its first sample counts as warm-up.
    progress.event(ProgressEvent::Stage { stage: "warmup" });
    let mut measure = Measure::new(progress);
    if let Some(flag) = stop {
        measure = measure.with_stop_flag(flag);
    }
    if let Some(probe) = ctx.clock_probe {
        measure = measure.with_clock_probe(probe);
    }
    let measured = match bench.measure(ctx, &mut measure) {
        Ok(m) => m,
        Err(e) => {
            let mut o = Outcome::from_error(e, "measure");
            o.errors.extend(bench.take_errors());
            return o;
        }
    };
    progress.event(ProgressEvent::Stage { stage: "validate" });
    let validation = bench.validate(ctx);
    let errors = bench.take_errors();
    let error_message = match errors.first() {
        Some(e) => Some(format!("{}: {}", e.stage, e.message)),
        None => (!validation.passed).then(|| format!("validation failed: {}", validation.message)),
    };
    Outcome {
        status: if validation.passed && errors.is_empty() {
            RunStatus::Passed
        } else {
            RunStatus::Failed
        },
        error_message,
        metrics: measured.metrics,
        details: measured.details.into_iter().collect(),
        warnings: measured
            .warnings
            .into_iter()
            .chain(measure.take_notes())
            .collect(),
        stop_reason: measure.stop_reason(),
        validation: Some(validation),
        regime: measure.take_regime(),
        errors,
    }
}

/// Accumulates the time spent in each stage as stage changes arrive.
#[derive(Debug, Default)]
pub struct StageClock {
    current: Option<(Stage, Instant)>,
    totals: HashMap<Stage, Duration>,
    window: (Option<jiff::Timestamp>, Option<jiff::Timestamp>),
}

impl StageClock {
    /// A clock with no stage entered.
    pub fn new() -> Self {
        StageClock::default()
    }

    /// Enters `stage` at `at`, closing the stage before it.
    pub fn enter(&mut self, stage: Stage, at: Instant) {
        self.close(at);
        self.current = Some((stage, at));
        self.totals.entry(stage).or_default();
        if stage == Stage::Measure && self.window.0.is_none() {
            self.window.0 = Some(jiff::Timestamp::now());
        }
    }

    /// Closes the current stage at `at`.
    pub fn close(&mut self, at: Instant) {
        if let Some((stage, since)) = self.current.take() {
            *self.totals.entry(stage).or_default() += at.saturating_duration_since(since);
            if stage == Stage::Measure {
                self.window.1 = Some(jiff::Timestamp::now());
            }
        }
    }

    /// From the first moment of measurement to the end of the last
    /// measurement segment (wall clock), once measurement has ended.
    pub fn measure_window(&self) -> Option<(jiff::Timestamp, jiff::Timestamp)> {
        match self.window {
            (Some(a), Some(b)) if b >= a => Some((a, b)),
            _ => None,
        }
    }

    /// The stage in progress.
    pub fn current(&self) -> Option<Stage> {
        self.current.map(|(s, _)| s)
    }

    /// Total time in `stage` up to `now`, including the open segment.
    pub fn total(&self, stage: Stage, now: Instant) -> Duration {
        let base = self.totals.get(&stage).copied().unwrap_or_default();
        match self.current {
            Some((s, since)) if s == stage => base + now.saturating_duration_since(since),
            _ => base,
        }
    }

    /// The watchdog record: every entered stage `completed` except
    /// `ended_in`, which gets `end_status`; stages never entered `skipped`.
    pub fn watchdog(
        &self,
        now: Instant,
        limits: Option<&EffectiveLimits>,
        ended_in: Option<(Stage, StageStatus)>,
    ) -> Watchdog {
        let record = |stage: Stage| {
            let entered = self.totals.contains_key(&stage);
            let status = match ended_in {
                Some((s, st)) if s == stage => st,
                _ if entered => StageStatus::Completed,
                _ => StageStatus::Skipped,
            };
            Some(StageRecord {
                status,
                duration_s: self.total(stage, now).as_secs_f64(),
                limit_s: limits.map(|l| l.of(stage).as_secs_f64()),
            })
        };
        Watchdog {
            setup: record(Stage::Setup),
            warmup: record(Stage::Warmup),
            measure: record(Stage::Measure),
            validate: record(Stage::Validate),
        }
    }
}

/// Forwards events to `inner`, times the stages they announce and
/// accounts the measurement window's CPU time (in-process runs).
pub struct ClockedProgress<'a> {
    inner: &'a dyn Progress,
    /// The stage clock, updated on every stage event.
    pub clock: Mutex<StageClock>,
    /// Interference accounting of the measurement window.
    pub probe: Mutex<crate::interference::Probe>,
    /// Whose CPU time is the benchmark's (this process, or with its parent).
    measured: warpt_system::procstat::Measured,
}

impl<'a> ClockedProgress<'a> {
    /// Wraps `inner`, for a benchmark whose CPU time is `measured`'s.
    pub fn new(inner: &'a dyn Progress, measured: warpt_system::procstat::Measured) -> Self {
        ClockedProgress {
            inner,
            clock: Mutex::new(StageClock::new()),
            probe: Mutex::new(crate::interference::Probe::default()),
            measured,
        }
    }
}

impl Progress for ClockedProgress<'_> {
    fn event(&self, event: ProgressEvent<'_>) {
        if let ProgressEvent::Stage { stage } = &event
            && let Some(stage) = Stage::from_name(stage)
            && let Ok(mut clock) = self.clock.lock()
        {
            clock.enter(stage, Instant::now());
            if let Ok(mut probe) = self.probe.lock() {
                probe.on_stage(stage, self.measured);
            }
        }
        self.inner.event(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_accumulates_revisited_stages() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut c = StageClock::new();
        c.enter(Stage::Setup, t0);
        c.enter(Stage::Warmup, t0 + ms(10));
        c.enter(Stage::Measure, t0 + ms(15));
        c.enter(Stage::Warmup, t0 + ms(40));
        c.enter(Stage::Measure, t0 + ms(42));
        assert_eq!(c.total(Stage::Warmup, t0 + ms(50)), ms(7));
        assert_eq!(c.total(Stage::Measure, t0 + ms(50)), ms(33));
        let w = c.watchdog(
            t0 + ms(50),
            None,
            Some((Stage::Measure, StageStatus::Timeout)),
        );
        assert_eq!(w.setup.unwrap().status, StageStatus::Completed);
        assert_eq!(w.measure.as_ref().unwrap().status, StageStatus::Timeout);
        assert_eq!(w.validate.unwrap().status, StageStatus::Skipped);
    }
}
