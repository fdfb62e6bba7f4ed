//! Percentile-bootstrap intervals of a ratio: of two samples' medians (or
//! any statistic), and of paired log ratios' median; seeded, so a
//! comparison is reproducible.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::location::median;

/// The sorted resampled statistics of a percentile bootstrap: its
/// intervals at any coverage come from one set of resamples (a 95% CI for
/// a test of difference, a 90% CI for the two one-sided tests of
/// equivalence at 5%).
#[derive(Debug, Clone, PartialEq)]
pub struct Bootstrap {
    sorted: Vec<f64>,
}

impl Bootstrap {
    /// The resampled statistics, sorted; `None` when none is finite.
    fn new(mut stats: Vec<f64>) -> Option<Bootstrap> {
        stats.retain(|v| v.is_finite());
        stats.sort_by(f64::total_cmp);
        (!stats.is_empty()).then_some(Bootstrap { sorted: stats })
    }

    /// The central percentile interval holding `coverage` (0.95 for a
    /// 95% CI) of the resampled statistics.
    pub fn interval(&self, coverage: f64) -> (f64, f64) {
        let tail = (1.0 - coverage) / 2.0;
        let last = self.sorted.len() - 1;
        let at = |q: f64| self.sorted[((q * last as f64).round() as usize).min(last)];
        (at(tail), at(1.0 - tail))
    }
}

/// The percentile bootstrap of exp(median(d)): for paired log ratios `d`,
/// the typical ratio current / base, from `rounds` resamples with a fixed
/// seed (so a comparison is reproducible).
pub fn bootstrap_paired(d: &[f64], rounds: usize, seed: u64) -> Option<Bootstrap> {
    if d.is_empty() {
        return None;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut buf = Vec::with_capacity(d.len());
    Bootstrap::new(
        (0..rounds)
            .map(|_| {
                buf.clear();
                for _ in 0..d.len() {
                    buf.push(d[(rng.next_u64() % d.len() as u64) as usize]);
                }
                median(&buf).exp()
            })
            .collect(),
    )
}

/// A percentile-bootstrap 95% CI of exp(median(d)) (see [`bootstrap_paired`]).
pub fn bootstrap_paired_ci(d: &[f64], rounds: usize, seed: u64) -> Option<(f64, f64)> {
    bootstrap_paired(d, rounds, seed).map(|b| b.interval(0.95))
}

/// The percentile bootstrap of median(current) / median(base), from
/// `rounds` resamples of each side with a fixed seed (so a comparison is
/// reproducible).
pub fn bootstrap_ratio(
    base: &[f64],
    current: &[f64],
    rounds: usize,
    seed: u64,
) -> Option<Bootstrap> {
    bootstrap_ratio_by(base, current, rounds, seed, median)
}

/// The percentile bootstrap of statistic(current) / statistic(base) (the
/// mean, for hyperfine's "times faster"), resampling each side in turn.
pub fn bootstrap_ratio_by(
    base: &[f64],
    current: &[f64],
    rounds: usize,
    seed: u64,
    statistic: fn(&[f64]) -> f64,
) -> Option<Bootstrap> {
    if base.is_empty() || current.is_empty() {
        return None;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut pick = |v: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        for _ in 0..v.len() {
            buf.push(v[(rng.next_u64() % v.len() as u64) as usize]);
        }
        statistic(buf)
    };
    let (mut bb, mut cb) = (Vec::new(), Vec::new());
    Bootstrap::new(
        (0..rounds)
            .map(|_| {
                let b = pick(base, &mut bb);
                let c = pick(current, &mut cb);
                c / b
            })
            .collect(),
    )
}

/// A percentile-bootstrap 95% CI of median(current) / median(base) (see
/// [`bootstrap_ratio`]).
pub fn bootstrap_ratio_ci(
    base: &[f64],
    current: &[f64],
    rounds: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    bootstrap_ratio(base, current, rounds, seed).map(|b| b.interval(0.95))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_brackets_the_true_ratio() {
        let base: Vec<f64> = (0..40).map(|i| 100.0 + (i % 7) as f64).collect();
        let cur: Vec<f64> = base.iter().map(|v| v * 1.1).collect();
        let (lo, hi) = bootstrap_ratio_ci(&base, &cur, 2000, 1).unwrap();
        assert!(
            lo <= 1.1 + 1e-9 && hi >= 1.1 - 1e-9 && lo > 1.0,
            "{lo} {hi}"
        );
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }

    #[test]
    fn a_narrower_coverage_is_a_narrower_interval() {
        // 0..=100 resampled as is: the 95% interval is [2.5, 97.5] rounded
        // to ranks, the 90% one [5, 95].
        let b = Bootstrap::new((0..=100).rev().map(f64::from).collect()).unwrap();
        assert_eq!(b.interval(0.95), (3.0, 98.0));
        assert_eq!(b.interval(0.90), (5.0, 95.0));
        assert!(Bootstrap::new(vec![f64::NAN]).is_none());
    }

    #[test]
    fn identical_pairs_give_a_point_interval() {
        let (lo, hi) = bootstrap_paired_ci(&[0.05f64.ln_1p(); 8], 200, 1).unwrap();
        assert!((lo - 1.05).abs() < 1e-12 && (hi - 1.05).abs() < 1e-12);
    }

    #[test]
    fn any_statistic_can_be_the_ratio() {
        let fast: Vec<f64> = (0..30).map(|i| 1.0 + (i % 5) as f64 * 0.01).collect();
        let slow: Vec<f64> = fast.iter().map(|v| v * 2.0).collect();
        let (lo, hi) = bootstrap_ratio_by(&fast, &slow, 500, 3, crate::mean)
            .unwrap()
            .interval(0.95);
        assert!(lo <= 2.0 + 1e-9 && hi >= 2.0 - 1e-9, "{lo} {hi}");
        assert!(bootstrap_ratio_by(&[], &slow, 500, 3, crate::mean).is_none());
    }
}
