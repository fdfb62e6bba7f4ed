//! The tests behind a comparison: Mann-Whitney U, Welch's t, the paired t
//! and Wilcoxon signed-rank tests, Hodges-Lehmann estimates of a shift, a
//! bootstrap CI of the ratio of medians, Benjamini-Hochberg adjustment, and
//! the robust spread of a noise profile.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use statrs::distribution::{ChiSquared, ContinuousCDF, StudentsT};

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

/// Mid-ranks (1-based, ties share their average rank) of `a` followed by `b`.
fn ranks(a: &[f64], b: &[f64]) -> (Vec<f64>, bool) {
    let mut all: Vec<(f64, usize)> = a.iter().chain(b).copied().zip(0..).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut r = vec![0.0; all.len()];
    let mut ties = false;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        ties |= j > i;
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for k in &all[i..=j] {
            r[k.1] = avg;
        }
        i = j + 1;
    }
    (r, ties)
}

/// How many arrangements of `n1` + `n2` distinct values give each U, for
/// the exact null distribution (counts of U = 0..=n1*n2).
fn u_counts(n1: usize, n2: usize) -> Vec<f64> {
    // f[i][j][u]: arrangements of i and j values with statistic u;
    // f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u).
    let max = n1 * n2;
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n2 + 1];
    for row in prev.iter_mut() {
        row[0] = 1.0;
    }
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for j in 1..=n2 {
            for u in 0..=i * j {
                let take = if u >= j { prev[j][u - j] } else { 0.0 };
                cur[j][u] = take + cur[j - 1][u];
            }
        }
        prev = cur;
    }
    prev[n2].clone()
}

/// Two-sided Mann-Whitney U test of `a` against `b`: the p-value. Exact
/// when there are no ties and n1 * n2 <= 400, otherwise the normal
/// approximation with tie correction and continuity correction.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return f64::NAN;
    }
    let (r, ties) = ranks(a, b);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let mean = (n1 * n2) as f64 / 2.0;
    if !ties && n1 * n2 <= 400 {
        let counts = u_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        let u = u1.min((n1 * n2) as f64 - u1).round() as usize;
        let tail: f64 = counts[..=u].iter().sum::<f64>() / total;
        return (2.0 * tail).min(1.0);
    }
    let n = (n1 + n2) as f64;
    let mut tie_term = 0.0;
    let mut sorted: Vec<f64> = a.iter().chain(b).copied().collect();
    sorted.sort_by(f64::total_cmp);
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let var = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u1 - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// The smallest two-sided p-value the exact Mann-Whitney test can give for
/// samples of `n1` and `n2` distinct values: 2 / C(n1 + n2, n1). With 3
/// against 3 it is 0.1, so the rank test can never reject at 5%.
pub fn mann_whitney_floor(n1: usize, n2: usize) -> f64 {
    let (n, k) = (n1 + n2, n1.min(n2));
    let mut c = 1.0f64;
    for i in 0..k {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// The mean and the sample variance (n - 1 denominator; 0 below two values).
pub(crate) fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// Two-sided p-value of Student's t statistic `t` with `df` degrees of freedom.
pub(crate) fn t_two_sided(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { 1.0 } else { 0.0 };
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.sf(t.abs())).min(1.0),
        Err(_) => f64::NAN,
    }
}

/// Welch's two-sample t test (unequal variances): the two-sided p-value.
/// NaN with fewer than two values on a side.
pub fn welch_t(a: &[f64], b: &[f64]) -> f64 {
    if a.len() < 2 || b.len() < 2 {
        return f64::NAN;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let se = (sa + sb).sqrt();
    if se == 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let df =
        (sa + sb).powi(2) / (sa.powi(2) / (a.len() - 1) as f64 + sb.powi(2) / (b.len() - 1) as f64);
    t_two_sided((ma - mb) / se, df)
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

/// The paired (one-sample) t test of differences `d` against 0: the
/// two-sided p-value. NaN with fewer than two differences.
pub fn paired_t(d: &[f64]) -> f64 {
    if d.len() < 2 {
        return f64::NAN;
    }
    let (m, v) = mean_var(d);
    let se = (v / d.len() as f64).sqrt();
    if se == 0.0 {
        return if m == 0.0 { 1.0 } else { 0.0 };
    }
    t_two_sided(m / se, (d.len() - 1) as f64)
}

/// The Wilcoxon signed-rank test of differences `d` against 0: the
/// two-sided p-value. Zeros are dropped (Wilcoxon's convention); exact
/// without ties up to 30 differences, otherwise the normal approximation
/// with tie and continuity corrections.
pub fn signed_rank(d: &[f64]) -> f64 {
    let nz: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let n = nz.len();
    if n == 0 {
        return 1.0;
    }
    let abs: Vec<f64> = nz.iter().map(|x| x.abs()).collect();
    let (r, ties) = ranks(&abs, &[]);
    let w_plus: f64 = r
        .iter()
        .zip(&nz)
        .filter(|(_, x)| **x > 0.0)
        .map(|(r, _)| r)
        .sum();
    let total = (n * (n + 1)) as f64 / 2.0;
    if !ties && n <= 30 {
        // counts[w]: subsets of {1..n} summing to w.
        let max = n * (n + 1) / 2;
        let mut counts = vec![0.0f64; max + 1];
        counts[0] = 1.0;
        for k in 1..=n {
            for w in (k..=max).rev() {
                counts[w] += counts[w - k];
            }
        }
        let all: f64 = counts.iter().sum();
        let w = w_plus.min(total - w_plus).round() as usize;
        let tail: f64 = counts[..=w].iter().sum::<f64>() / all;
        return (2.0 * tail).min(1.0);
    }
    let mean = total / 2.0;
    let mut var = (n * (n + 1) * (2 * n + 1)) as f64 / 24.0;
    let mut sorted = abs.clone();
    sorted.sort_by(f64::total_cmp);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        var -= (t * t * t - t) / 48.0;
        i = j + 1;
    }
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((w_plus - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// Robust coefficient of variation: 1.4826 x MAD / |median| (for normal
/// data, an estimate of sd / mean that one wild value cannot drag). NaN
/// for an empty slice or a zero median.
pub fn robust_cv(v: &[f64]) -> f64 {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&dev) / m.abs()
}

/// Classical coefficient of variation: sample standard deviation over
/// |mean|; NaN below two values.
pub fn cv(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return f64::NAN;
    }
    let (m, var) = mean_var(v);
    var.sqrt() / m.abs()
}

/// How much larger the true spread may be than one estimated from `n`
/// values: `sqrt((n - 1) / chi2_{alpha; n - 1})`, the one-sided upper
/// `1 - alpha` confidence factor of a standard deviation (normal data).
/// 1 below two values (nothing to widen).
pub fn spread_upper_factor(n: usize, alpha: f64) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let dof = (n - 1) as f64;
    ChiSquared::new(dof)
        .map(|c| (dof / c.inverse_cdf(alpha)).sqrt())
        .unwrap_or(1.0)
}

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

/// The standard normal survival function P(Z > z), from erfc.
/// Upper tail of the standard normal distribution.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// erfc(x) with relative error below 1.2e-7 (Numerical Recipes' Chebyshev fit).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
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
    if base.is_empty() || current.is_empty() {
        return None;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut pick = |v: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        for _ in 0..v.len() {
            buf.push(v[(rng.next_u64() % v.len() as u64) as usize]);
        }
        median(buf)
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

/// Benjamini-Hochberg adjusted p-values (q-values), in the input's order;
/// NaN inputs (no test) stay NaN and do not count.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_finite()).collect();
    let m = idx.len() as f64;
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut q = vec![f64::NAN; p.len()];
    let mut running = 1.0f64;
    for (rank, &i) in idx.iter().enumerate().rev() {
        running = running.min(p[i] * m / (rank + 1) as f64);
        q[i] = running.min(1.0);
    }
    q
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
    fn spread_factor_matches_chi_square_tables() {
        // chi2 quantiles at 0.10: 1.0636 (4 dof), 4.1682 (9 dof).
        assert!((spread_upper_factor(5, 0.10) - (4.0f64 / 1.063_623).sqrt()).abs() < 1e-4);
        assert!((spread_upper_factor(10, 0.10) - (9.0f64 / 4.168_159).sqrt()).abs() < 1e-4);
        assert_eq!(spread_upper_factor(1, 0.10), 1.0);
    }

    #[test]
    fn mann_whitney_matches_reference_values() {
        // Exact: complete separation of 4 vs 4 gives p = 2/70.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        // U = 2 for 5 vs 5: P(U <= 2) = (1 + 1 + 2) / C(10, 5), doubled
        // (scipy.stats.mannwhitneyu(..., method='exact') gives 0.031746).
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.5, 6.0, 7.0, 8.0, 9.0]);
        assert!((p - 8.0 / 252.0).abs() < 1e-12, "{p}");
        // Identical samples: no evidence at all.
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        assert!((mann_whitney(&a, &a) - 1.0).abs() < 0.05);
        // Normal approximation with ties: scipy asymptotic, use_continuity=True
        // for [1,1,2,2,3,3]*5 vs [2,2,3,3,4,4]*5 -> p = 0.000263 (within 5%).
        let x: Vec<f64> = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0].repeat(5);
        let y: Vec<f64> = [2.0, 2.0, 3.0, 3.0, 4.0, 4.0].repeat(5);
        let p = mann_whitney(&x, &y);
        assert!(p < 0.001 && p > 0.0001, "{p}");
    }

    #[test]
    fn t_tests_match_reference_values() {
        // scipy 1.17 stats.ttest_ind([1,2,3,4,5], [3,4,5,6,7.5], equal_var=False)
        // -> t = -1.99323, df = 7.9222, p = 0.0817161.
        let p = welch_t(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.0, 4.0, 5.0, 6.0, 7.5]);
        assert!((p - 0.0817161).abs() < 1e-6, "{p}");
        // stats.ttest_1samp([0.5, 1.2, 0.8, 1.1, 0.3], 0) -> p = 0.0104251.
        let p = paired_t(&[0.5, 1.2, 0.8, 1.1, 0.3]);
        assert!((p - 0.0104251).abs() < 1e-6, "{p}");
        assert!(welch_t(&[1.0], &[2.0, 3.0]).is_nan());
        assert_eq!(paired_t(&[0.0, 0.0, 0.0]), 1.0);
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
    fn signed_rank_matches_reference_values() {
        // All six differences positive: p = 2 / 2^6 (scipy.stats.wilcoxon).
        let p = signed_rank(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
        assert!((p - 2.0 / 64.0).abs() < 1e-12, "{p}");
        // [1, -2, 3, 4, 5]: W- = 2, P(W <= 2) = 3/32, two-sided 0.1875.
        let p = signed_rank(&[1.0, -2.0, 3.0, 4.0, 5.0]);
        assert!((p - 0.1875).abs() < 1e-12, "{p}");
    }

    #[test]
    fn floors_and_spreads() {
        assert!((mann_whitney_floor(3, 3) - 0.1).abs() < 1e-12);
        assert!((mann_whitney_floor(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert!((mann_whitney_floor(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        // MAD of [98, 99, 100, 101, 150] is 1: one wild value does not count.
        let r = robust_cv(&[98.0, 99.0, 100.0, 101.0, 150.0]);
        assert!((r - 0.014826).abs() < 1e-9, "{r}");
        assert!(cv(&[98.0, 99.0, 100.0, 101.0, 150.0]) > 0.2);
        let (lo, hi) = bootstrap_paired_ci(&[0.05f64.ln_1p(); 8], 200, 1).unwrap();
        assert!((lo - 1.05).abs() < 1e-12 && (hi - 1.05).abs() < 1e-12);
    }

    #[test]
    fn bh_adjusts_like_the_textbook() {
        // p = 0.01, 0.04, 0.03, 0.005 -> q = 0.02, 0.04, 0.04, 0.02
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005, f64::NAN]);
        let want = [0.02, 0.04, 0.04, 0.02];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
        assert!(q[4].is_nan());
    }

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
}
