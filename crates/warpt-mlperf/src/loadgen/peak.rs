//! LoadGen's FindPeakPerformance for the Server scenario: from a target
//! QPS that meets the latency bound, widen the upper bound by
//! `1 + step` until it fails, then bisect until the bounds agree to
//! `decimals` decimal places. Only the performance constraint steers the
//! search, as in LoadGen; the final lower bound's run is the result.

use super::settings::TestSettings;
use super::summary::Summary;

/// One run of the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// The target QPS tried.
    pub target_qps: f64,
    /// Whether its latency bound held.
    pub met: bool,
}

/// The outcome of a search.
#[derive(Debug)]
pub struct PeakSearch {
    /// The highest QPS whose run met the bound (the starting QPS's run
    /// when even that failed, with `found` false).
    pub peak: Summary,
    /// Whether the starting QPS met the bound (else there is no peak).
    pub found: bool,
    /// Every run, in order.
    pub trials: Vec<Trial>,
}

/// LoadGen's `IsFinished`: the bounds agree to `decimals` places.
pub fn finished(lower: f64, upper: f64, decimals: u32) -> bool {
    let scale = 10f64.powi(decimals as i32);
    (lower * scale).floor() + 1.0 >= (upper * scale).floor()
}

/// Searches the peak, calling `run` once per trial.
pub fn find_peak(
    base: &TestSettings,
    mut run: impl FnMut(&TestSettings) -> Result<Summary, String>,
) -> Result<PeakSearch, String> {
    let mut trials = Vec::new();
    let mut at = |qps: f64, trials: &mut Vec<Trial>| -> Result<Summary, String> {
        let mut s = base.clone();
        s.target_qps = qps;
        let summary = run(&s)?;
        trials.push(Trial {
            target_qps: qps,
            met: summary.perf_constraints.met,
        });
        Ok(summary)
    };
    let mut lower = at(base.target_qps, &mut trials)?;
    if !lower.perf_constraints.met {
        return Ok(PeakSearch {
            peak: lower,
            found: false,
            trials,
        });
    }
    // Widen.
    let mut upper = loop {
        let qps = lower.settings.target_qps * (1.0 + base.find_peak_step);
        let s = at(qps, &mut trials)?;
        if s.perf_constraints.met {
            lower = s;
        } else {
            break s;
        }
    };
    // Bisect.
    while !finished(
        lower.settings.target_qps,
        upper.settings.target_qps,
        base.find_peak_decimals,
    ) {
        let (l, u) = (lower.settings.target_qps, upper.settings.target_qps);
        let m = at(l + (u - l) / 2.0, &mut trials)?;
        if m.perf_constraints.met {
            lower = m;
        } else {
            upper = m;
        }
    }
    Ok(PeakSearch {
        peak: lower,
        found: true,
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_finish_at_the_requested_precision() {
        assert!(finished(100.0, 100.1, 1));
        assert!(!finished(100.0, 100.2, 1));
        assert!(finished(812.34, 812.99, 0));
    }
}
