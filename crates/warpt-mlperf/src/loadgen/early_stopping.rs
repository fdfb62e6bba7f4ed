//! LoadGen's early-stopping estimate, computed as `early_stopping.cc` does.
//!
//! With `h` queries under a latency and `t` over it, the odds of seeing `t`
//! or fewer overlatency queries if the true percentile were exactly `p` are
//! the binomial CDF, `BetaRegularized[p, h, 1 + t]`. The run may claim the
//! `p`-th percentile is at most the latency of its `t`-th slowest query when
//! those odds are at most `1 - confidence`. The arithmetic (the series for
//! the hypergeometric function, its tolerance, the bracketed binary search
//! and its cache) follows LoadGen's line for line, so the thresholds agree
//! to the query.

use std::collections::BTreeMap;

/// The confidence LoadGen uses for every early-stopping decision.
pub const CONFIDENCE: f64 = 0.99;
/// LoadGen's tolerance `d` (zero since v2.0).
pub const TOLERANCE: f64 = 0.0;

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9): relative error below 1e-15 for
    // x > 0, which is all LoadGen's arguments (positive integers) need.
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

fn lbeta(x: i64, y: i64) -> f64 {
    ln_gamma(x as f64) + ln_gamma(y as f64) - ln_gamma((x + y) as f64)
}

/// The Gaussian hypergeometric function 2F1(1, b; c; x) by its series.
fn hypergeometric_2f1_a1(b: i64, c: i64, x: f64) -> f64 {
    let tolerance = 1.0 / (1u64 << 33) as f64;
    let (mut term, mut result) = (1.0f64, 1.0f64);
    let mut i = 0i64;
    while term.abs() > tolerance {
        term *= (b + i) as f64 * x / (c + i) as f64;
        result += term;
        i += 1;
    }
    result
}

/// The regularized incomplete beta function I_x(a, b).
fn beta_regularized(x: f64, a: i64, b: i64) -> f64 {
    (a as f64 * x.ln() + (b - 1) as f64 * (1.0 - x).ln() - lbeta(a, b)).exp() / a as f64
        * hypergeometric_2f1_a1(1 - b, 1 + a, x / (x - 1.0))
}

/// The odds of `t` or fewer overlatency queries among `h + t`.
pub fn odds(h: i64, t: i64, p: f64, d: f64) -> f64 {
    beta_regularized(p - d, h, 1 + t)
}

fn find_min_passing(mut min_h: i64, max_h: i64, t: i64, p: f64, d: f64, c: f64) -> i64 {
    let mut count = max_h - min_h;
    while count > 0 {
        let step = count / 2;
        let h = min_h + step;
        if odds(h, t, p, d) < 1.0 - c {
            count = step;
        } else {
            min_h = h + 1;
            count -= step + 1;
        }
    }
    min_h
}

/// LoadGen's `MinPassingQueriesFinder`: the fewest queries under the
/// latency (`h`) that, beside `t` over it, prove the `p`-th percentile
/// with confidence `c`; answers are cached per `(p, d, c)` and later
/// searches are bracketed from earlier answers, as in LoadGen.
#[derive(Debug, Default)]
pub struct MinPassingQueries {
    caches: Vec<(CacheKey, BTreeMap<i64, i64>)>,
}

/// The bits of `(p, d, c)`: one cache per percentile, tolerance and confidence.
type CacheKey = (u64, u64, u64);

impl MinPassingQueries {
    /// The minimum `h` for `t` overlatency queries.
    pub fn find(&mut self, t: i64, p: f64, d: f64, c: f64) -> i64 {
        let key = (p.to_bits(), d.to_bits(), c.to_bits());
        let pos = match self.caches.iter().position(|(k, _)| *k == key) {
            Some(pos) => pos,
            None => {
                self.caches.push((key, BTreeMap::new()));
                self.caches.len() - 1
            }
        };
        let cache = &mut self.caches[pos].1;
        if let Some(&h) = cache.get(&t) {
            return h;
        }
        let (mut x0, mut y0, mut x1) = (-1i64, 0i64, 0i64);
        let mut y1 = ((1.0 - c).ln() / (p - d).ln()).ceil() as i64;
        // The entries below t, nearest first (LoadGen walks back from
        // lower_bound(t)).
        let mut below = cache.range(..t).rev();
        if let Some((&x, &y)) = below.next() {
            (x1, y1) = (x, y);
            if let Some((&x, &y)) = below.next() {
                (x0, y0) = (x, y);
            }
        }
        let min_slope = (p - d) / (1.0 - p + d);
        // LoadGen multiplies here (not divides); kept so brackets match.
        let max_slope = ((y1 - y0) * (x1 - x0)) as f64;
        let min_h = ((t - x1) as f64 * min_slope + y1 as f64) as i64;
        let max_h = ((t - x1) as f64 * max_slope + y1 as f64 + 1.0) as i64;
        let h = find_min_passing(min_h, max_h, t, p, d, c);
        cache.insert(t, h);
        h
    }
}

/// The early-stopping estimate of a latency percentile from `n` sorted
/// latencies, as SingleStream and MultiStream report it.
#[derive(Debug, Clone, PartialEq)]
pub enum Estimate {
    /// Too few queries: at least `needed` are required.
    TooFew {
        /// Queries required before any estimate exists.
        needed: i64,
    },
    /// The estimate: the latency at sorted position `n - t`, after
    /// discarding `t - 1` of the slowest queries.
    Found {
        /// Queries required before any estimate exists (`h_min + 1`).
        needed: i64,
        /// How many of the slowest queries are discarded (`t - 1`).
        discarded: i64,
        /// Index into the sorted latencies of the estimate.
        index: usize,
    },
}

/// The early-stopping estimate of the `percentile` latency for `queries`
/// queries (LoadGen's SingleStream / MultiStream loop).
pub fn percentile_estimate(
    finder: &mut MinPassingQueries,
    queries: i64,
    percentile: f64,
) -> Estimate {
    let h_min = finder.find(1, percentile, TOLERANCE, CONFIDENCE);
    if queries < h_min + 1 {
        return Estimate::TooFew { needed: h_min + 1 };
    }
    let mut t = 1;
    for i in 2..queries + 1 {
        let h = finder.find(i, percentile, TOLERANCE, CONFIDENCE);
        if queries < h + i {
            t = i - 1;
            break;
        }
    }
    Estimate::Found {
        needed: h_min + 1,
        discarded: t - 1,
        index: (queries - t) as usize,
    }
}

/// Server's early-stopping test: with `over` of `queries` over the latency
/// bound, `Ok(())` when the `percentile` bound is proven, or `Err(more)`
/// with the queries still needed (if every one of them were under it).
pub fn server_check(
    finder: &mut MinPassingQueries,
    queries: i64,
    over: i64,
    percentile: f64,
) -> Result<(), i64> {
    let h = finder.find(over, percentile, TOLERANCE, CONFIDENCE);
    if queries >= h + over {
        Ok(())
    } else {
        Err(h + over - queries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut f = 1.0f64;
        for n in 1..30 {
            assert!(
                (ln_gamma(n as f64) - f.ln()).abs() < 1e-12 * f.ln().max(1.0),
                "n={n}"
            );
            f *= n as f64;
        }
    }

    #[test]
    fn odds_is_the_binomial_cdf() {
        // P(X <= t) for X ~ Binomial(h + t, 1 - p), summed directly.
        for (h, t, p) in [(50i64, 2i64, 0.9f64), (300, 5, 0.99), (20, 0, 0.9)] {
            let n = h + t;
            let q = 1.0 - p;
            let mut cdf = 0.0;
            for k in 0..=t {
                let mut c = 1.0f64;
                for j in 0..k {
                    c *= (n - j) as f64 / (j + 1) as f64;
                }
                cdf += c * q.powi(k as i32) * p.powi((n - k) as i32);
            }
            let o = odds(h, t, p, 0.0);
            assert!((o - cdf).abs() < 1e-9, "h={h} t={t}: {o} vs {cdf}");
        }
    }

    #[test]
    fn thresholds_match_loadgen() {
        let mut f = MinPassingQueries::default();
        // t = 0: 0.9^h <= 0.01 -> h = 44 (and LoadGen's own logs say "at least 64
        // queries" for t = 1 at p90, and 459 / 662 for p99 below).
        assert_eq!(f.find(0, 0.9, 0.0, 0.99), 44);
        assert_eq!(f.find(1, 0.9, 0.0, 0.99), 63);
        assert_eq!(f.find(0, 0.99, 0.0, 0.99), 459);
        assert_eq!(f.find(1, 0.99, 0.0, 0.99), 661);
    }
}
