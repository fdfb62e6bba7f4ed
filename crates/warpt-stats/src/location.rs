//! Where values sit: the median, the mean and variance, type-7
//! percentiles, the Hodges-Lehmann estimates of a shift, and a duet's
//! couples of paired log ratios.

/// The arithmetic mean of `v` (NaN when empty).
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The mean and the sample variance (n - 1 denominator; 0 below two values).
pub fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// The median of `v` (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The `q`-quantile (0..=1) of ascending, non-empty `sorted`, linearly
/// interpolated between order statistics (Hyndman & Fan type 7, the default
/// of R and NumPy).
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    debug_assert!(n > 0 && (0.0..=1.0).contains(&q));
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The Hodges-Lehmann estimate of the shift from `a` to `b`: the median of
/// every difference `b[j] - a[i]` (NaN when either is empty). It goes with
/// the Mann-Whitney test, and one outlying value moves it far less than it
/// moves a difference of medians of five.
pub fn hodges_lehmann_shift(a: &[f64], b: &[f64]) -> f64 {
    let d: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| y - x))
        .collect();
    median(&d)
}

/// The Hodges-Lehmann estimate of the centre of paired differences `d`: the
/// median of every Walsh average `(d[i] + d[j]) / 2`, i <= j (NaN when
/// empty). It goes with the signed-rank test.
pub fn hodges_lehmann_center(d: &[f64]) -> f64 {
    let walsh: Vec<f64> = (0..d.len())
        .flat_map(|i| (i..d.len()).map(move |j| (d[i] + d[j]) / 2.0))
        .collect();
    median(&walsh)
}

/// The mean of each two consecutive per-pair log ratios of a duet: pair
/// `2k` ran with the CPU halves one way and `2k + 1` the other, so their
/// mean cancels a fixed difference between the halves. An odd last one is
/// left out.
pub fn couples(log_ratios: &[f64]) -> Vec<f64> {
    log_ratios
        .chunks_exact(2)
        .map(|two| (two[0] + two[1]) / 2.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hodges_lehmann_estimates_resist_one_outlier() {
        // Base 100 with one slow trial; current 2% above: the estimate
        // stays at the 2% the other trials show.
        let base = [100.0, 100.1, 99.9, 100.0, 107.7];
        let current = [102.0, 102.1, 101.9, 102.0, 102.05];
        let hl = hodges_lehmann_shift(&base, &current);
        assert!((hl - 2.0).abs() < 0.15, "{hl}");
        assert!(hodges_lehmann_shift(&[], &current).is_nan());
        // Walsh averages of 1, 2, 3, 100, sorted: 1, 1.5, 2, 2, 2.5, 3, 50.5, 51, 51.5, 100.
        assert_eq!(hodges_lehmann_center(&[1.0, 2.0, 3.0, 100.0]), 2.75);
        assert_eq!(hodges_lehmann_center(&[0.5]), 0.5);
    }

    #[test]
    fn couples_cancel_a_fixed_difference_between_the_halves() {
        // B 3% slower; the first half 8% faster, B on it every other pair.
        let d: Vec<f64> = (0..6)
            .map(|i| 1.03f64.ln() + if i % 2 == 0 { 0.08 } else { -0.08 })
            .collect();
        let c = couples(&d);
        assert_eq!(c.len(), 3);
        for v in c {
            assert!((v - 1.03f64.ln()).abs() < 1e-12);
        }
        assert_eq!(couples(&d[..5]).len(), 2);
    }

    #[test]
    fn means_medians_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
        assert_eq!(
            mean_var(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
            (5.0, 32.0 / 7.0)
        );
        // numpy.percentile(range(1, 11), 90) = 9.1.
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((percentile_sorted(&xs, 0.9) - 9.1).abs() < 1e-12);
    }
}
