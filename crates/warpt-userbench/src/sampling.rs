//! How a benchmark asks to be sampled, in its `load` reply's `config`:
//! pytest-benchmark's marker settings and `pedantic` rounds, which the
//! pytest plugin passes on (docs/python.md), or the same keys from a
//! harness file's `get_config()`.
//!
//! - `min_rounds`: fewest samples (the stopping rule may not stop sooner);
//! - `max_time`: seconds the measurement may take at most (its minimum is
//!   cut to it);
//! - `warmup`: `false` for no warm-up beyond the one sample warpt always
//!   discards;
//! - `pedantic`: `{rounds, iterations, warmup_rounds}`, exactly `rounds`
//!   samples of `iterations` calls after `warmup_rounds` unrecorded ones
//!   (at least one), no stopping rule.

use std::time::Duration;

use serde_json::Value;
use warpt_harness::MeasurePolicy;

/// Most rounds or samples a benchmark may ask for.
const MAX_ROUNDS: u64 = 1_000_000;

/// pytest-benchmark's `pedantic(rounds=, iterations=, warmup_rounds=)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pedantic {
    /// Samples, exactly.
    pub rounds: usize,
    /// Calls per sample.
    pub iterations: u64,
    /// Unrecorded rounds before the first sample.
    pub warmup_rounds: usize,
}

/// What a benchmark's config says about its sampling.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    /// Fewest samples.
    pub min_rounds: Option<usize>,
    /// Longest measurement.
    pub max_time: Option<Duration>,
    /// `Some(false)`: no warm-up beyond one discarded sample.
    pub warmup: Option<bool>,
    /// Fixed rounds instead of the stopping rule.
    pub pedantic: Option<Pedantic>,
}

fn count(v: &Value, key: &str, min: u64) -> Result<Option<u64>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => match x.as_u64() {
            Some(n) if (min..=MAX_ROUNDS).contains(&n) => Ok(Some(n)),
            _ => Err(format!(
                "'{key}' must be a whole number from {min} to {MAX_ROUNDS}, not {x}"
            )),
        },
    }
}

impl Sampling {
    /// The sampling `config` (a load reply's) asks for; a value of the
    /// wrong type or range is refused, naming its key.
    pub fn from_config(config: &Value) -> Result<Self, String> {
        let max_time = match config.get("max_time") {
            None | Some(Value::Null) => None,
            Some(x) => match x.as_f64() {
                Some(s) if s > 0.0 && s <= 86_400.0 => Some(Duration::from_secs_f64(s)),
                _ => return Err(format!("'max_time' must be seconds above 0, not {x}")),
            },
        };
        let warmup = match config.get("warmup") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(x) => return Err(format!("'warmup' must be true or false, not {x}")),
        };
        let pedantic = match config.get("pedantic") {
            None | Some(Value::Null) => None,
            Some(p) => Some(Pedantic {
                rounds: count(p, "rounds", 1)?.unwrap_or(1) as usize,
                iterations: count(p, "iterations", 1)?.unwrap_or(1),
                warmup_rounds: count(p, "warmup_rounds", 0)?.unwrap_or(0) as usize,
            }),
        };
        Ok(Sampling {
            min_rounds: count(config, "min_rounds", 1)?.map(|n| n as usize),
            max_time,
            warmup,
            pedantic,
        })
    }

    /// `base` as this sampling changes it.
    pub fn policy(&self, base: MeasurePolicy) -> MeasurePolicy {
        let mut p = base;
        if let Some(ped) = self.pedantic {
            p.warmup = Duration::ZERO;
            p.min_time = Duration::ZERO;
            // Only the count stops it.
            p.max_time = Duration::from_secs(365 * 86_400);
            p.min_samples = ped.rounds;
            p.max_samples = ped.rounds;
            return p;
        }
        if let Some(n) = self.min_rounds {
            p.min_samples = p.min_samples.max(n);
            p.max_samples = p.max_samples.max(n);
        }
        if let Some(t) = self.max_time {
            p.max_time = t;
            p.min_time = p.min_time.min(t);
        }
        if self.warmup == Some(false) {
            p.warmup = Duration::ZERO;
        }
        p
    }

    /// Unrecorded rounds to run before the measurement's own warm-up
    /// sample (pedantic's `warmup_rounds` beyond the first).
    pub fn extra_warmup_rounds(&self) -> usize {
        self.pedantic
            .map_or(0, |p| p.warmup_rounds.saturating_sub(1))
    }

    /// Calls per sample when the benchmark fixes them (pedantic).
    pub fn fixed_calls(&self) -> Option<u64> {
        self.pedantic.map(|p| p.iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> MeasurePolicy {
        MeasurePolicy {
            warmup: Duration::from_secs(1),
            min_time: Duration::from_secs(2),
            max_time: Duration::from_secs(6),
            target_rel_ci: 0.01,
            min_samples: 10,
            max_samples: 10_000,
        }
    }

    #[test]
    fn no_settings_change_nothing() {
        let s = Sampling::from_config(&json!({"other": 1})).expect("valid");
        assert_eq!(s, Sampling::default());
        assert_eq!(s.policy(base()), base());
        assert_eq!(s.fixed_calls(), None);
    }

    #[test]
    fn the_marker_settings_bound_the_stopping_rule() {
        let s = Sampling::from_config(&json!({"min_rounds": 50, "max_time": 0.5, "warmup": false}))
            .expect("valid");
        let p = s.policy(base());
        assert_eq!(p.min_samples, 50);
        assert_eq!(p.max_time, Duration::from_millis(500));
        assert_eq!(p.min_time, Duration::from_millis(500));
        assert_eq!(p.warmup, Duration::ZERO);
        assert_eq!(p.target_rel_ci, 0.01);
    }

    #[test]
    fn pedantic_fixes_rounds_and_calls() {
        let s = Sampling::from_config(
            &json!({"pedantic": {"rounds": 7, "iterations": 3, "warmup_rounds": 4}}),
        )
        .expect("valid");
        let p = s.policy(base());
        assert_eq!((p.min_samples, p.max_samples), (7, 7));
        assert_eq!(p.min_time, Duration::ZERO);
        assert_eq!(s.fixed_calls(), Some(3));
        assert_eq!(s.extra_warmup_rounds(), 3);
    }

    #[test]
    fn bad_values_are_refused_by_name() {
        for (config, key) in [
            (json!({"min_rounds": 0}), "min_rounds"),
            (json!({"min_rounds": "5"}), "min_rounds"),
            (json!({"max_time": -1}), "max_time"),
            (json!({"warmup": 1}), "warmup"),
            (json!({"pedantic": {"rounds": 0}}), "rounds"),
            (json!({"pedantic": {"iterations": 2.5}}), "iterations"),
        ] {
            let e = Sampling::from_config(&config).expect_err("refused");
            assert!(e.contains(key), "{config}: {e}");
        }
    }
}
