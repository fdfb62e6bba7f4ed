//! The maximum-throughput search: the highest request rate at which a
//! step of load still passes (its goodput meets the SLOs). From a first
//! rate it doubles until a step fails (or halves until one passes), then
//! bisects between the highest pass and the lowest failure until they are
//! within a tolerance. It assumes what servers do: past a rate that
//! fails, every higher one fails too.

/// One step of the search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The rate tried, requests per second.
    pub rate: f64,
    /// Whether the step passed.
    pub passed: bool,
}

/// The search's ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Stop when the lowest failure is within this fraction above the
    /// highest pass.
    pub tolerance: f64,
    /// Most steps.
    pub max_steps: usize,
    /// Give up halving below this rate.
    pub min_rate: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            tolerance: 0.05,
            max_steps: 12,
            min_rate: 1e-3,
        }
    }
}

/// Searches from `start` requests per second with `step` (true: the rate
/// passed). Returns the highest rate that passed (`None`: none did) and
/// every step in the order run. An error from `step` ends the search.
pub fn search<E>(
    start: f64,
    limits: Limits,
    mut step: impl FnMut(f64) -> Result<bool, E>,
) -> Result<(Option<f64>, Vec<Step>), E> {
    let mut steps = Vec::new();
    let (mut pass, mut fail): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = start.max(limits.min_rate);
    while steps.len() < limits.max_steps {
        let passed = step(rate)?;
        steps.push(Step { rate, passed });
        if passed {
            pass = Some(pass.map_or(rate, |p| p.max(rate)));
        } else {
            fail = Some(fail.map_or(rate, |f| f.min(rate)));
        }
        rate = match (pass, fail) {
            (Some(p), None) => p * 2.0,
            (None, Some(f)) if f / 2.0 < limits.min_rate => break,
            (None, Some(f)) => f / 2.0,
            (Some(p), Some(f)) if f <= p * (1.0 + limits.tolerance) => break,
            (Some(p), Some(f)) => (p + f) / 2.0,
            (None, None) => break,
        };
    }
    Ok((pass, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(capacity: f64, start: f64, limits: Limits) -> (Option<f64>, Vec<Step>) {
        search::<()>(start, limits, |r| Ok(r <= capacity)).unwrap()
    }

    #[test]
    fn finds_the_capacity_from_below_and_from_above() {
        for start in [1.0, 37.0, 5000.0] {
            let (best, steps) = run(123.0, start, Limits::default());
            let best = best.unwrap();
            assert!((123.0 / 1.05..=123.0).contains(&best), "{start}: {best}");
            assert!(steps.len() <= 12);
            // Every step below the answer passed, every one above failed.
            for s in &steps {
                assert_eq!(s.passed, s.rate <= 123.0);
            }
        }
    }

    #[test]
    fn stops_at_its_step_limit_and_reports_no_pass() {
        let limits = Limits {
            max_steps: 3,
            ..Limits::default()
        };
        let (best, steps) = run(1e9, 1.0, limits);
        assert_eq!(best, Some(4.0));
        assert_eq!(steps.len(), 3);
        let (best, steps) = run(0.0, 1.0, Limits::default());
        assert_eq!(best, None);
        assert!(steps.iter().all(|s| !s.passed));
        assert!(steps.last().unwrap().rate >= 1e-3);
        let e = search(1.0, Limits::default(), |_| Err::<bool, _>("boom"));
        assert_eq!(e, Err("boom"));
    }
}
