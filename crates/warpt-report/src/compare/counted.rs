//! Counted metrics ([`warpt_model::COUNTED_UNITS`]: executed instructions,
//! cache misses, cachegrind's estimated cycles) are judged without a noise
//! band or a test. A repeat of unchanged code counts the same (exactly,
//! under cachegrind; to a few hundred instructions in millions from a
//! hardware counter), whatever the host was doing, so steal, other guests
//! and host regimes do not reach them and a change of the code shows
//! however small. The band is the larger of `--count-threshold` and
//! [`SPREAD_K`] times the widest relative spread either side's counts
//! showed: a count that moves between repeats (a hardware counter, a
//! program whose work depends on timing) widens it by its own movement.

use warpt_model::BenchmarkMetric;

/// The default `--count-threshold`, percent: the smallest change of a
/// counted metric called a change. An A/A of identical builds counts
/// identical instructions, but the environment (its size moves the
/// stack, the dynamic loader's work) can move a short program's count by
/// a few hundred instructions; 0.1% keeps a 0.5% change in executed work
/// well outside.
pub const DEFAULT_COUNT_THRESHOLD_PCT: f64 = 0.1;

/// The band's multiple of the counts' own spread.
pub const SPREAD_K: f64 = 2.0;

/// One side's widest relative spread, (max - min) / median, over its
/// counted runs (the samples of each run) and its trial medians.
pub fn spread(trial_values: &[f64], m: &BenchmarkMetric) -> f64 {
    let (lo, hi) = trial_values
        .iter()
        .copied()
        .chain(m.stats.iter().flat_map(|s| [s.min, s.max]))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi > lo && m.value != 0.0 {
        (hi - lo) / m.value.abs()
    } else {
        0.0
    }
}

/// The band, percent: the larger of `threshold_pct` and [`SPREAD_K`] x
/// the wider of the two sides' spreads.
pub fn band_pct(base_spread: f64, current_spread: f64, threshold_pct: f64) -> f64 {
    (SPREAD_K * base_spread.max(current_spread) * 100.0).max(threshold_pct)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(values: &[f64]) -> BenchmarkMetric {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut m = BenchmarkMetric::single(
            "instructions",
            sorted[sorted.len() / 2],
            "instructions",
            false,
        );
        m.stats = Some(warpt_model::MetricStats {
            n: values.len(),
            mean: m.value,
            median: m.value,
            std: 0.0,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            p25: m.value,
            p50: m.value,
            p75: m.value,
            p90: m.value,
            p95: m.value,
            p99: m.value,
            p999: None,
            ci95_low: sorted[0],
            ci95_high: sorted[sorted.len() - 1],
            outliers: 0,
            stop_reason: None,
            samples: values.to_vec(),
            samples_stride: None,
            percentiles: Default::default(),
        });
        m
    }

    #[test]
    fn identical_counts_have_no_spread_and_the_threshold_is_the_band() {
        let m = counts(&[1e6, 1e6, 1e6]);
        assert_eq!(spread(&[1e6], &m), 0.0);
        assert_eq!(band_pct(0.0, 0.0, DEFAULT_COUNT_THRESHOLD_PCT), 0.1);
    }

    #[test]
    fn counts_that_move_widen_the_band_by_their_own_movement() {
        // A hardware counter: 1,000 instructions of 1,000,000 between repeats.
        let m = counts(&[1_000_000.0, 1_000_500.0, 1_001_000.0]);
        let s = spread(&[1_000_500.0], &m);
        assert!((s - 0.001).abs() < 1e-6, "{s}");
        assert!((band_pct(0.0, s, 0.1) - 0.2).abs() < 1e-3);
        // Trial medians that moved count too.
        let t = spread(
            &[1_000_000.0, 1_020_000.0, 1_010_000.0],
            &counts(&[1_010_000.0]),
        );
        assert!((t - 0.0198).abs() < 1e-3, "{t}");
    }
}
