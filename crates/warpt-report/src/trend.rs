//! Change points in a metric's history: where the series steps, by how
//! much, and how sure that is.
//!
//! The method is PELT (Killick, Fearnhead & Eckley 2012), the exact optimal
//! segmentation in linear expected time, with a Gaussian mean-shift cost on
//! the logarithms of the values (so a step is a ratio, the same for rates
//! and times) and a modified-BIC penalty of `3 sigma^2 ln n` per change. `sigma` is
//! estimated from the median absolute deviation of successive differences,
//! which a step moves once and noise moves every time: the penalty follows
//! the series' own noise without a threshold to tune. Each segment must
//! hold at least [`MIN_SEGMENT`] runs, and an isolated one-run spike is set
//! aside before the search, so one odd run is not a step. Each
//! change point is then confirmed with a t test of the two adjacent
//! segments' mean logs against that same sigma, with the degrees of freedom
//! of the differences it came from: a sigma from three differences is a
//! rough guess, and a normal quantile would call a step of a four-run
//! history certain.
//!
//! Why not asv's step detection or E-divisive: asv's is a regularised
//! piecewise-constant fit whose penalty is tuned for its own noise model,
//! and E-divisive needs permutation tests and many points per segment; PELT
//! with a noise-scaled penalty is exact, fast and needs no tuning. (The
//! `pelt` crate leaves the cost's scale and the penalty, the whole
//! statistical question here, to the caller; the search itself is short.)

use warpt_stats as stats;

/// Fewest runs in a segment.
pub const MIN_SEGMENT: usize = 2;

/// The method, as printed.
pub const METHOD: &str = "PELT, Gaussian mean-shift cost on log values, penalty 3 sigma^2 ln n \
     (modified BIC; sigma from the MAD of successive differences), isolated one-run spikes set \
     aside, segments of at least 2 runs, steps of at least 2 sigma, each with a t test \
     (n - 2 - steps degrees of freedom)";

/// A step in the series.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Index of the first point after the step.
    pub index: usize,
    /// Median of the segment before.
    pub before: f64,
    /// Median of the segment after.
    pub after: f64,
    /// `(after / before - 1) x 100`.
    pub change_pct: f64,
    /// Two-sided p-value of the t test of the segments' mean logs (see
    /// [`degrees_of_freedom`]).
    pub p_value: f64,
    /// `1 - p_value`.
    pub confidence: f64,
}

/// The penalty per change, in units of `sigma^2 ln n`: 3, the modified BIC
/// of Zhang & Siegmund (2007), which keeps flat noisy histories free of
/// steps where the plain BIC's 2 let one series in twenty through.
pub const PENALTY_FACTOR: f64 = 3.0;

/// A step smaller than this many sigmas (of one run's noise) is not
/// reported however long the segments: a nightly alert must be a change a
/// single run could show, as `benchmark compare`'s noise band requires.
pub const MIN_STEP_SIGMAS: f64 = 2.0;

/// An interior point further than this many sigmas from both neighbours,
/// in the same direction, while they agree with each other, is one odd run
/// (a host regime), not the start of a step: it is set to their mean
/// before the search.
pub const SPIKE_SIGMAS: f64 = 5.0;

/// Replaces isolated spikes of `y` (see [`SPIKE_SIGMAS`]).
fn despike(y: &mut [f64], limit: f64) {
    for i in 1..y.len().saturating_sub(1) {
        let (a, v, b) = (y[i - 1], y[i], y[i + 1]);
        if (v - a).abs() > limit
            && (v - b).abs() > limit
            && (v - a).signum() == (v - b).signum()
            && (a - b).abs() < limit / 2.0
        {
            y[i] = (a + b) / 2.0;
        }
    }
}

/// Noise of one run in a log series, from its successive differences (a
/// step moves one difference, noise moves all of them): the larger of the
/// robust estimate (1.4826 x MAD) and the standard deviation of the
/// differences without their largest tenth (scaled by 1/0.86 to be
/// consistent for normal noise), over sqrt(2). With a few dozen runs the
/// MAD alone often reads a third low, and a low sigma means spurious steps.
fn sigma(y: &[f64]) -> f64 {
    let d: Vec<f64> = y.windows(2).map(|w| w[1] - w[0]).collect();
    if d.is_empty() {
        return 0.0;
    }
    let m = stats::median(&d);
    let mut dev: Vec<f64> = d.iter().map(|x| (x - m).abs()).collect();
    let robust = 1.4826 * stats::median(&dev);
    dev.sort_by(f64::total_cmp);
    let keep = &dev[..dev.len() - dev.len() / 10];
    let trimmed = (keep.iter().map(|x| x * x).sum::<f64>() / keep.len() as f64).sqrt() / 0.86;
    robust.max(trimmed) / 2f64.sqrt()
}

/// The optimal change positions of `y` under `penalty` (PELT).
fn pelt(y: &[f64], penalty: f64) -> Vec<usize> {
    let n = y.len();
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, v) in y.iter().enumerate() {
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    let cost = |a: usize, b: usize| {
        let (sum, len) = (s1[b] - s1[a], (b - a) as f64);
        (s2[b] - s2[a] - sum * sum / len).max(0.0)
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut last = vec![0usize; n + 1];
    best[0] = -penalty;
    let mut candidates = vec![0usize];
    for t in MIN_SEGMENT..=n {
        let mut found: Option<(f64, usize)> = None;
        for &s in candidates.iter().filter(|&&s| t - s >= MIN_SEGMENT) {
            let f = best[s] + cost(s, t) + penalty;
            if found.is_none_or(|(b, _)| f < b) {
                found = Some((f, s));
            }
        }
        if let Some((f, s)) = found {
            best[t] = f;
            last[t] = s;
        }
        // Prune starts that can never be optimal again (K = 0 for this cost).
        candidates.retain(|&s| t - s < MIN_SEGMENT || best[s] + cost(s, t) <= best[t]);
        if t + MIN_SEGMENT <= n && best[t].is_finite() {
            candidates.push(t);
        }
    }
    let mut cuts = Vec::new();
    let mut t = n;
    while t > 0 {
        let s = last[t];
        if s > 0 {
            cuts.push(s);
        }
        t = s;
    }
    cuts.reverse();
    cuts
}

/// Degrees of freedom of the noise estimate of `n` runs with `steps`
/// change points: `n - 1` successive differences, less the `steps` that
/// cross a step, less one for their centre; at least 1.
pub fn degrees_of_freedom(n: usize, steps: usize) -> f64 {
    n.saturating_sub(2 + steps).max(1) as f64
}

/// The steps of `values` (positive numbers, oldest first) with their size
/// and confidence. Fewer than `2 x MIN_SEGMENT` values have none.
pub fn change_points(values: &[f64]) -> Vec<Step> {
    if values.len() < 2 * MIN_SEGMENT || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return Vec::new();
    }
    let mut y: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    // A perfectly flat stretch still has rounding-level noise.
    let sd = sigma(&y).max(1e-9);
    despike(&mut y, SPIKE_SIGMAS * sd);
    let n = y.len();
    let cuts = pelt(&y, PENALTY_FACTOR * sd * sd * (n as f64).ln());
    let df = degrees_of_freedom(n, cuts.len());
    let mut bounds = vec![0];
    bounds.extend(&cuts);
    bounds.push(n);
    cuts.iter()
        .enumerate()
        .filter_map(|(i, &at)| {
            let (a, b) = (&y[bounds[i]..at], &y[at..bounds[i + 2]]);
            let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
            let t =
                (mean(b) - mean(a)) / (sd * (1.0 / a.len() as f64 + 1.0 / b.len() as f64).sqrt());
            let p = stats::t_two_sided(t, df);
            let before = stats::median(&values[bounds[i]..at]);
            let after = stats::median(&values[at..bounds[i + 2]]);
            ((after / before).ln().abs() >= MIN_STEP_SIGMAS * sd).then_some(Step {
                index: at,
                before,
                after,
                change_pct: (after / before - 1.0) * 100.0,
                p_value: p,
                confidence: 1.0 - p,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1): splitmix64 of `i` (successive
    /// values independent, unlike a Weyl sequence).
    fn noise(i: usize) -> f64 {
        let mut z = (i as u64)
            .wrapping_add(1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    #[test]
    fn a_planted_step_is_found_at_its_run_with_its_size() {
        let v: Vec<f64> = (0..20)
            .map(|i| if i < 12 { 100.0 } else { 90.0 } * (1.0 + 0.01 * noise(i)))
            .collect();
        let steps = change_points(&v);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].index, 12);
        assert!((steps[0].change_pct + 10.0).abs() < 1.5, "{steps:?}");
        assert!(steps[0].confidence > 0.999, "{steps:?}");
    }

    #[test]
    fn a_flat_noisy_history_has_no_steps() {
        let bad = (0..200)
            .filter(|seed| {
                let v: Vec<f64> = (0..40)
                    .map(|i| 100.0 * (1.0 + 0.03 * noise(i + 1000 * seed)))
                    .collect();
                !change_points(&v).is_empty()
            })
            .count();
        // 1 of these 200 (a stretch of low runs in uniform ±3% noise) has
        // one: a false alarm rate of 0.5% per 40-run history.
        assert!(bad <= 2, "{bad} of 200 flat series had a step");
    }

    #[test]
    fn two_steps_and_a_lone_outlier() {
        let mut v: Vec<f64> = (0..30)
            .map(|i| {
                let level = match i {
                    0..10 => 100.0,
                    10..20 => 120.0,
                    _ => 95.0,
                };
                level * (1.0 + 0.01 * noise(i + 77))
            })
            .collect();
        v[5] = 60.0; // one odd run: not a step (segments hold at least 2)
        let idx: Vec<usize> = change_points(&v).iter().map(|s| s.index).collect();
        assert_eq!(idx, [10, 20]);
        assert!(change_points(&[1.0, 2.0, 3.0]).is_empty());
    }

    #[test]
    fn a_step_in_four_runs_is_found_but_not_called_certain() {
        // Two steady runs, then two 0.8% slower: the step is there, but a
        // noise level from three differences cannot make it near-certain.
        let v = [20.01, 20.03, 20.17, 20.18];
        let steps = change_points(&v);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].index, 2);
        assert!(steps[0].confidence < 0.95, "{steps:?}");
        // The same step and noise over twenty runs is.
        let long: Vec<f64> = (0..20)
            .map(|i| if i < 10 { 20.02 } else { 20.175 } + 0.01 * noise(i))
            .collect();
        let steps = change_points(&long);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert!(steps[0].confidence > 0.999, "{steps:?}");
        assert_eq!(degrees_of_freedom(4, 1), 1.0);
        assert_eq!(degrees_of_freedom(20, 1), 17.0);
    }
}
