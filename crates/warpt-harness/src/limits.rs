//! Stage time limits: defaults, per-benchmark and configured overrides, and
//! the multiplier for slow machines; and the whole suite's limit.

use std::time::{Duration, Instant};

use warpt_model::StageLimits;

use crate::MAX_TIME_FACTOR;

/// Default limit of the setup stage (includes starting the worker).
pub const SETUP_LIMIT: Duration = Duration::from_secs(30);
/// Default limit of the warm-up stage, on top of the requested warm-up.
pub const WARMUP_MARGIN: Duration = Duration::from_secs(15);
/// Default margin of the measurement stage beyond the longest time the
/// stopping rule may sample ([`MAX_TIME_FACTOR`] x the duration).
pub const MEASURE_MARGIN: Duration = Duration::from_secs(30);
/// Default limit of the validation stage.
pub const VALIDATE_LIMIT: Duration = Duration::from_secs(30);

/// Default limit of a whole suite run (seed 002's 4 hours): past it the
/// benchmark running is stopped and the rest are not started, each a
/// `timeout` result; what finished is kept.
pub const SUITE_LIMIT: Duration = Duration::from_secs(4 * 3600);

/// A suite run's time limit, counted from when the run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuiteLimit {
    /// The limit, for messages.
    pub limit: Duration,
    /// When it passes.
    pub deadline: Instant,
}

impl SuiteLimit {
    /// A limit of `limit` from now.
    pub fn starting_now(limit: Duration) -> Self {
        SuiteLimit {
            limit,
            deadline: Instant::now() + limit,
        }
    }

    /// Whether it has passed.
    pub fn passed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// `--suite-timeout 14400 s`, for messages.
    pub fn describe(&self) -> String {
        format!("--suite-timeout {} s", self.limit.as_secs_f64())
    }
}

/// The effective limit of each stage for one benchmark run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EffectiveLimits {
    /// Setup.
    pub setup: Duration,
    /// Warm-up (all series together).
    pub warmup: Duration,
    /// Measurement (all series together).
    pub measure: Duration,
    /// Validation.
    pub validate: Duration,
    /// The timeout multiplier the limits were scaled by.
    multiplier: f64,
    /// The limits the user configured, which a benchmark's own announcement
    /// does not replace.
    configured: StageLimits,
}

impl EffectiveLimits {
    /// Defaults for a benchmark measuring for `duration` after `burnin` of
    /// warm-up, overridden first by the benchmark's own `spec_limits`, then
    /// by `configured` ones, and finally all scaled by `multiplier`.
    pub fn new(
        duration: Duration,
        burnin: Duration,
        spec_limits: StageLimits,
        configured: StageLimits,
        multiplier: f64,
    ) -> Self {
        let limits = spec_limits.overridden_by(configured);
        let pick = |set: Option<f64>, default: Duration| {
            set.map(Duration::from_secs_f64).unwrap_or(default)
        };
        let scale = |d: Duration| d.mul_f64(multiplier.max(0.0));
        EffectiveLimits {
            setup: scale(pick(limits.setup, SETUP_LIMIT)),
            warmup: scale(pick(limits.warmup, burnin + WARMUP_MARGIN)),
            measure: scale(pick(
                limits.measure,
                duration * MAX_TIME_FACTOR + MEASURE_MARGIN,
            )),
            validate: scale(pick(limits.validate, VALIDATE_LIMIT)),
            multiplier: multiplier.max(0.0),
            configured,
        }
    }

    /// Sets `stage`'s limit to `seconds` (scaled by the multiplier) because
    /// the benchmark reckoned it from its own work, unless the user configured
    /// that stage's limit, which stands. Returns whether the limit changed.
    pub fn announce(&mut self, stage: Stage, seconds: f64) -> bool {
        let configured = match stage {
            Stage::Setup => self.configured.setup,
            Stage::Warmup => self.configured.warmup,
            Stage::Measure => self.configured.measure,
            Stage::Validate => self.configured.validate,
        };
        if configured.is_some() || !seconds.is_finite() || seconds <= 0.0 {
            return false;
        }
        let limit = Duration::from_secs_f64(seconds).mul_f64(self.multiplier);
        let slot = match stage {
            Stage::Setup => &mut self.setup,
            Stage::Warmup => &mut self.warmup,
            Stage::Measure => &mut self.measure,
            Stage::Validate => &mut self.validate,
        };
        *slot = limit;
        true
    }

    /// The limit of the stage called `stage`.
    pub fn of(&self, stage: Stage) -> Duration {
        match stage {
            Stage::Setup => self.setup,
            Stage::Warmup => self.warmup,
            Stage::Measure => self.measure,
            Stage::Validate => self.validate,
        }
    }
}

/// A stage's limit a benchmark reckons from the work it will do (chains
/// that follow the cache size, arrays, files, a matrix of order N), so the
/// supervisor stops what is stuck, not what is big. A limit the user
/// configured for the stage stands; the timeout multiplier still applies.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkLimit {
    /// The stage.
    pub stage: Stage,
    /// Its total time limit.
    pub limit: Duration,
    /// The work and the arithmetic behind the limit, for the progress
    /// display and a timeout's message.
    pub part: String,
}

impl WorkLimit {
    /// Setup: the default ([`SETUP_LIMIT`]) plus `work`, what preparing
    /// takes at a deliberately low floor rate, described by `part`.
    pub fn setup(work: Duration, part: impl Into<String>) -> Self {
        WorkLimit {
            stage: Stage::Setup,
            limit: SETUP_LIMIT + work,
            part: part.into(),
        }
    }

    /// Warm-up: the default (the burn-in plus [`WARMUP_MARGIN`]) plus
    /// `work` at a floor rate.
    pub fn warmup(burnin: Duration, work: Duration, part: impl Into<String>) -> Self {
        WorkLimit {
            stage: Stage::Warmup,
            limit: burnin + WARMUP_MARGIN + work,
            part: part.into(),
        }
    }

    /// Measurement: the sampling budget ([`MAX_TIME_FACTOR`] x the duration
    /// plus [`MEASURE_MARGIN`]) plus `work` the benchmark does between or
    /// inside its samples beyond that budget, at a floor rate.
    pub fn measure(duration: Duration, work: Duration, part: impl Into<String>) -> Self {
        WorkLimit {
            stage: Stage::Measure,
            limit: duration * MAX_TIME_FACTOR + MEASURE_MARGIN + work,
            part: part.into(),
        }
    }
}

/// Seconds `units` of work take at `per_second` (a floor rate), saturating.
pub fn at_floor_rate(units: f64, per_second: f64) -> Duration {
    Duration::try_from_secs_f64(units / per_second).unwrap_or(Duration::MAX)
}

/// The watched stages of a benchmark run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Preparation.
    Setup,
    /// Warm-up.
    Warmup,
    /// Measurement.
    Measure,
    /// Validation.
    Validate,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 4] = [Stage::Setup, Stage::Warmup, Stage::Measure, Stage::Validate];

    /// The stage's name in events and results.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::Warmup => "warmup",
            Stage::Measure => "measure",
            Stage::Validate => "validate",
        }
    }

    /// The stage called `name`.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_limit_is_scaled_and_a_configured_one_stands() {
        let secs = Duration::from_secs;
        let conf = StageLimits {
            measure: Some(20.0),
            ..StageLimits::default()
        };
        let mut l = EffectiveLimits::new(secs(4), secs(1), StageLimits::default(), conf, 2.0);
        assert!(l.announce(Stage::Warmup, 100.0));
        assert_eq!(l.warmup, secs(200));
        assert!(!l.announce(Stage::Measure, 100.0));
        assert_eq!(l.measure, secs(40));
        assert!(!l.announce(Stage::Setup, f64::NAN));
        assert!(!l.announce(Stage::Setup, 0.0));
        assert_eq!(l.setup, secs(60));
    }

    #[test]
    fn defaults_overrides_and_multiplier() {
        let secs = Duration::from_secs;
        let l = EffectiveLimits::new(
            secs(4),
            secs(1),
            StageLimits::default(),
            StageLimits::default(),
            1.0,
        );
        assert_eq!(
            (l.setup, l.warmup, l.measure, l.validate),
            (secs(30), secs(16), secs(42), secs(30))
        );
        let spec = StageLimits {
            setup: Some(120.0),
            measure: Some(10.0),
            ..StageLimits::default()
        };
        let conf = StageLimits {
            measure: Some(20.0),
            ..StageLimits::default()
        };
        let l = EffectiveLimits::new(secs(4), secs(1), spec, conf, 0.5);
        assert_eq!(
            (l.setup, l.measure, l.validate),
            (secs(60), secs(10), secs(15))
        );
        assert_eq!(Stage::from_name("warmup"), Some(Stage::Warmup));
        assert_eq!(l.of(Stage::Warmup), Duration::from_millis(8000));
    }
}
