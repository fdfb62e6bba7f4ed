//! Rank tests: Mann-Whitney U (two samples) and the Wilcoxon signed-rank
//! test (paired differences), exact for small samples without ties.

use crate::normal::normal_sf;

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn signed_rank_matches_reference_values() {
        // All six differences positive: p = 2 / 2^6 (scipy.stats.wilcoxon).
        let p = signed_rank(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
        assert!((p - 2.0 / 64.0).abs() < 1e-12, "{p}");
        // [1, -2, 3, 4, 5]: W- = 2, P(W <= 2) = 3/32, two-sided 0.1875.
        let p = signed_rank(&[1.0, -2.0, 3.0, 4.0, 5.0]);
        assert!((p - 0.1875).abs() < 1e-12, "{p}");
    }

    #[test]
    fn the_exact_floor_of_mann_whitney() {
        assert!((mann_whitney_floor(3, 3) - 0.1).abs() < 1e-12);
        assert!((mann_whitney_floor(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert!((mann_whitney_floor(5, 5) - 2.0 / 252.0).abs() < 1e-12);
    }
}
