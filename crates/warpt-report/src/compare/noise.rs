//! The noise band: how much a metric moves between runs of unchanged code
//! on this machine, and the practical threshold a comparison derives from it.
//!
//! A run's own confidence interval says how well that run knows its median;
//! it says nothing of how far the next run will land. On a cloud VM the
//! second is often ten times the first. A comparison therefore widens its
//! threshold to
//!
//! `k x spread x u(m) x sqrt((1/n_base + 1/n_current) / 2)`
//!
//! where `spread` is the run-to-run coefficient of variation of whole-run
//! medians (from `warpt noise`, else from the stored history), `u(m)` the
//! factor by which the true spread may exceed one estimated from `m` runs
//! (upper 90% confidence bound), and `n` the runs (trials) on each side:
//! one run a side gets `k x spread x u(m)`, and the band narrows as trials
//! are added.
//!
//! Trials are runs of unchanged code too: when each side holds at least
//! [`MIN_POOLED_TRIALS`], their spread joins the stored one ([`with_trials`],
//! variances pooled by degrees of freedom), so a profile taken in a noisy
//! hour does not hold the band wide for ever, and a side noisier than the
//! profile widens it.

use std::collections::BTreeMap;

use serde::Serialize;
use warpt_model::{BenchmarkSuiteRun, NoiseEntry, Params};

use warpt_stats as stats;

/// The multiple of the run-to-run spread inside which a change is noise.
///
/// The difference of two single runs has a standard deviation of
/// sqrt(2) x spread, so k = 4 puts the band at 2.8 of those (a two-sided
/// 0.5% tail for normal noise), leaving room for the heavier tails of a
/// cloud VM. Checked with A/A comparisons by `scripts/bench-aa` (figures in
/// docs/compare.md).
pub const NOISE_K: f64 = 4.0;

/// The confidence with which the band covers the true spread: the spread
/// estimate is scaled to its upper `1 - SPREAD_ALPHA` bound.
pub const SPREAD_ALPHA: f64 = 0.10;

/// Where a metric's run-to-run spread came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseSource {
    /// A profile measured by `warpt noise` on this machine.
    Profile,
    /// Earlier stored runs of the same benchmark on this machine.
    History,
    /// Given on the command line (`--assume-noise`).
    Assumed,
    /// Not stored anywhere: the compared trials' own spread (at least 3
    /// a side; paired trials, the spread of their per-round ratios). See
    /// [`from_trials`].
    Trials,
    /// Not known.
    Unknown,
    /// A counted metric: the spread of the counts themselves (see
    /// [`super::counted`]).
    Counts,
}

impl NoiseSource {
    /// The lowercase name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            NoiseSource::Profile => "profile",
            NoiseSource::History => "history",
            NoiseSource::Assumed => "assumed",
            NoiseSource::Trials => "trials",
            NoiseSource::Unknown => "unknown",
            NoiseSource::Counts => "counts",
        }
    }
}

/// A metric's run-to-run spread on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Coefficient of variation of whole-run medians (0.02 = 2%): the
    /// larger of the robust (MAD) and the classical estimate, so neither one
    /// odd run nor a lucky middle hides the spread.
    pub cv: f64,
    /// Where it came from.
    pub source: NoiseSource,
    /// Runs it was measured over (0 when assumed: taken as exact),
    /// the compared trials included when they were pooled in.
    pub runs: usize,
    /// Compared trials (both sides) whose spread was pooled in; 0 when
    /// the spread is the stored one alone.
    pub pooled_trials: usize,
}

/// The metric a noise estimate is asked for.
#[derive(Debug, Clone, Copy)]
pub struct MetricRef<'a> {
    /// Suite.
    pub suite: &'a str,
    /// Benchmark.
    pub benchmark: &'a str,
    /// Metric name.
    pub metric: &'a str,
    /// Metric tags.
    pub tags: &'a BTreeMap<String, String>,
    /// The benchmark's effective parameters in the current run.
    pub params: &'a Params,
    /// Fingerprint of the machine the current run measured.
    pub fingerprint: Option<&'a str>,
}

/// Where a comparison finds each metric's noise (the CLI looks in the store).
pub trait NoiseLookup {
    /// The spread of `metric` on its machine, if known.
    fn noise(&self, metric: &MetricRef<'_>) -> Option<Noise>;
}

/// Knows no noise: single-run comparisons become `inconclusive` beyond the threshold.
pub struct NoNoise;

impl NoiseLookup for NoNoise {
    fn noise(&self, _: &MetricRef<'_>) -> Option<Noise> {
        None
    }
}

/// The same spread for every metric (`--assume-noise PCT`).
pub struct AssumedNoise(pub f64);

impl NoiseLookup for AssumedNoise {
    fn noise(&self, _: &MetricRef<'_>) -> Option<Noise> {
        Some(Noise {
            cv: self.0,
            source: NoiseSource::Assumed,
            runs: 0,
            pooled_trials: 0,
        })
    }
}

/// The noise part of the band, percent:
/// `k x cv x u(runs) x sqrt((1/nb + 1/nc) / 2)`.
pub fn band_pct(noise: &Noise, k: f64, n_base: usize, n_current: usize) -> f64 {
    let scale = ((1.0 / n_base.max(1) as f64 + 1.0 / n_current.max(1) as f64) / 2.0).sqrt();
    let upper = stats::spread_upper_factor(noise.runs, SPREAD_ALPHA);
    k * noise.cv * upper * scale * 100.0
}

/// The larger of the robust and the classical CV of `values` (NaN when
/// neither is finite).
fn spread(robust: f64, classical: f64) -> f64 {
    match (robust.is_finite(), classical.is_finite()) {
        (true, true) => robust.max(classical),
        (true, false) => robust,
        (false, true) => classical,
        (false, false) => f64::NAN,
    }
}

/// The noise a stored profile entry gives.
pub fn from_profile(e: &NoiseEntry) -> Noise {
    Noise {
        cv: spread(e.cv, e.cv_sd.unwrap_or(f64::NAN)),
        source: NoiseSource::Profile,
        runs: e.trials,
        pooled_trials: 0,
    }
}

/// Fewest stored runs from which the history gives a spread.
pub const MIN_HISTORY_RUNS: usize = 5;

/// The spread of `values` (whole-run medians) as history noise, when there
/// are at least [`MIN_HISTORY_RUNS`].
pub fn from_history(values: &[f64]) -> Option<Noise> {
    if values.len() < MIN_HISTORY_RUNS {
        return None;
    }
    let cv = spread(stats::robust_cv(values), stats::cv(values));
    cv.is_finite().then_some(Noise {
        cv,
        source: NoiseSource::History,
        runs: values.len(),
        pooled_trials: 0,
    })
}

/// Fewest trials on each side before their spread joins the stored one.
pub const MIN_POOLED_TRIALS: usize = 3;

/// `noise` with the spread of the compared trials pooled in, when each side
/// holds at least [`MIN_POOLED_TRIALS`] and the spread was measured (not
/// assumed: an assumed spread is taken as exact).
///
/// Each side's spread is the standard deviation of the logarithms of its
/// trial medians (the CV for small spreads, over n - 1 degrees of freedom);
/// the stored spread counts with `runs - 1`. The pooled variance is their
/// degree-of-freedom weighted mean, and `runs` becomes one more than the
/// degrees of freedom, so `u(m)` tightens as evidence accrues. A quiet
/// comparison narrows a band a noisy profile left wide; noisy sides widen it.
pub fn with_trials(noise: &Noise, base: &[f64], current: &[f64]) -> Noise {
    let assumed = noise.source == NoiseSource::Assumed || noise.runs < 2;
    if assumed || base.len() < MIN_POOLED_TRIALS || current.len() < MIN_POOLED_TRIALS {
        return noise.clone();
    }
    let stored_dof = (noise.runs - 1) as f64;
    let mut sum = stored_dof * noise.cv * noise.cv;
    let mut dof = stored_dof;
    for side in [base, current] {
        let logs: Vec<f64> = side.iter().map(|v| v.ln()).collect();
        let side_dof = (logs.len() - 1) as f64;
        let (_, var) = stats::mean_var(&logs);
        if !var.is_finite() {
            return noise.clone();
        }
        sum += side_dof * var;
        dof += side_dof;
    }
    Noise {
        cv: (sum / dof).sqrt(),
        source: noise.source,
        runs: dof as usize + 1,
        pooled_trials: base.len() + current.len(),
    }
}

/// The spread of the compared trials themselves, when nothing stored says
/// how far this machine moves between runs: with at least
/// [`MIN_POOLED_TRIALS`] a side, unpaired, the pooled variance of each
/// side's log trial medians (over nb + nc - 2 degrees of freedom); paired
/// (interleaved rounds, or the duet's couples), the per-pair log ratios
/// `d`, whose variance is twice one side's, so the spread is sd(d) / sqrt(2)
/// over len(d) - 1 degrees of freedom.
///
/// Returns the noise and the runs a side to narrow its band by
/// ([`band_pct`]): the trials, or for pairs the number of pairs. A
/// comparison then claims `~` only inside what its own trials can resolve,
/// and a metric that moves 20% between rounds of unchanged code is not
/// called `inconclusive` for failing to pin itself down to 1%.
pub fn from_trials(
    base: &[f64],
    current: &[f64],
    paired: Option<&[f64]>,
) -> Option<(Noise, usize, usize)> {
    let trials = base.len() + current.len();
    if let Some(d) = paired {
        if d.len() < MIN_POOLED_TRIALS {
            return None;
        }
        let (_, var) = stats::mean_var(d);
        let cv = (var / 2.0).sqrt();
        return cv.is_finite().then_some((
            Noise {
                cv,
                source: NoiseSource::Trials,
                runs: d.len(),
                pooled_trials: trials,
            },
            d.len(),
            d.len(),
        ));
    }
    if base.len() < MIN_POOLED_TRIALS || current.len() < MIN_POOLED_TRIALS {
        return None;
    }
    let (mut sum, mut dof) = (0.0, 0.0);
    for side in [base, current] {
        let logs: Vec<f64> = side.iter().map(|v| v.ln()).collect();
        let (_, var) = stats::mean_var(&logs);
        sum += (logs.len() - 1) as f64 * var;
        dof += (logs.len() - 1) as f64;
    }
    let cv = (sum / dof).sqrt();
    cv.is_finite().then_some((
        Noise {
            cv,
            source: NoiseSource::Trials,
            runs: dof as usize + 1,
            pooled_trials: trials,
        },
        base.len(),
        current.len(),
    ))
}

/// What one `warpt noise` run measured: the profiled metrics, and those it
/// could not profile.
#[derive(Debug, Default)]
pub struct Profile {
    /// One entry per metric with at least three undisturbed trials.
    pub entries: Vec<NoiseEntry>,
    /// Metrics left out, so the user knows which comparisons stay "noise unknown".
    pub unprofiled: Vec<Unprofiled>,
}

/// A metric `warpt noise` could not profile: too few undisturbed trials
/// measured it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unprofiled {
    /// `suite/benchmark`.
    pub benchmark: String,
    /// The metric's name.
    pub metric: String,
    /// The metric's tags.
    pub tags: std::collections::BTreeMap<String, String>,
    /// Trials that measured it undisturbed.
    pub undisturbed: usize,
    /// Trials of the benchmark in the run.
    pub trials: usize,
}

/// A noise profile from a run with trials (`warpt noise`): per metric, the
/// spread of the medians of the undisturbed trials (those the machine
/// visibly disturbed are what `compare` calls inconclusive, not noise).
/// Metrics that fewer than three undisturbed trials measured are left out.
pub fn profile(run: &BenchmarkSuiteRun) -> Profile {
    let mut out = Profile::default();
    let duration_s = run.manifest.as_ref().and_then(|m| m.config.duration_s);
    for (position, agg) in run.benchmarks.iter().enumerate() {
        let trials = warpt_model::results_at(&run.trials, position);
        for m in &agg.metrics {
            let found: Vec<&warpt_model::BenchmarkMetric> = trials
                .iter()
                .filter(|r| r.undisturbed())
                .filter_map(|r| {
                    r.metrics
                        .iter()
                        .find(|x| x.name == m.name && x.tags == m.tags)
                })
                .filter(|x| x.value.is_finite())
                .collect();
            if found.len() < 3 {
                out.unprofiled.push(Unprofiled {
                    benchmark: format!("{}/{}", agg.spec.id.suite, agg.spec.id.name),
                    metric: m.name.clone(),
                    tags: m.tags.clone(),
                    undisturbed: found.len(),
                    trials: trials.len(),
                });
                continue;
            }
            let values: Vec<f64> = found.iter().map(|x| x.value).collect();
            let within: Vec<f64> = found
                .iter()
                .filter_map(|x| x.stats.as_ref().map(|s| s.relative_half_width()))
                .filter(|h| h.is_finite())
                .collect();
            let cv = stats::robust_cv(&values);
            if !cv.is_finite() {
                continue;
            }
            let cv_sd = stats::cv(&values);
            out.entries.push(NoiseEntry {
                cv_sd: cv_sd.is_finite().then_some(cv_sd),
                within_ci: (!within.is_empty()).then(|| stats::median(&within)),
                duration_s,
                run_id: Some(run.id.clone()),
                ..NoiseEntry::of(agg, m, values.len(), stats::median(&values), cv)
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_scales_with_trials() {
        let n = Noise {
            cv: 0.02,
            source: NoiseSource::Profile,
            runs: 5,
            pooled_trials: 0,
        };
        let u = stats::spread_upper_factor(5, SPREAD_ALPHA);
        assert!((u - 1.939).abs() < 1e-3, "{u}");
        assert!((band_pct(&n, 4.0, 1, 1) - 8.0 * u).abs() < 1e-9);
        assert!((band_pct(&n, 4.0, 4, 4) - 4.0 * u).abs() < 1e-9);
        let assumed = Noise { runs: 0, ..n };
        assert!((band_pct(&assumed, 4.0, 1, 1) - 8.0).abs() < 1e-9);
        assert!(from_history(&[1.0, 1.0, 1.0, 1.0]).is_none());
        // Robust CV 1.4826%, classical 1.58%: the larger is the spread.
        let h = from_history(&[100.0, 98.0, 102.0, 101.0, 99.0]).map(|n| n.cv);
        let classical = stats::cv(&[100.0, 98.0, 102.0, 101.0, 99.0]);
        assert!((classical - 0.015811).abs() < 1e-6, "{classical}");
        assert_eq!(h, Some(classical));
    }

    #[test]
    fn trials_pool_with_the_stored_spread() {
        let profile = Noise {
            cv: 0.02,
            source: NoiseSource::Profile,
            runs: 5,
            pooled_trials: 0,
        };
        // Quiet trials: 4 stored dof at 2%, 8 trial dof at ~0 -> sqrt(4/12) x 2%.
        let flat = [100.0; 5];
        let pooled = with_trials(&profile, &flat, &flat);
        assert!(
            (pooled.cv - 0.02 * (4.0f64 / 12.0).sqrt()).abs() < 1e-12,
            "{pooled:?}"
        );
        assert_eq!((pooled.runs, pooled.pooled_trials), (13, 10));
        assert!(band_pct(&pooled, 4.0, 5, 5) < band_pct(&profile, 4.0, 5, 5) / 2.0);
        // Noisy trials widen it: each side's log spread ~10%.
        let noisy = [90.0, 100.0, 110.0, 95.0, 105.0];
        assert!(with_trials(&profile, &noisy, &noisy).cv > 0.05);
        // Too few trials a side, or an assumed spread: unchanged.
        assert_eq!(with_trials(&profile, &flat[..2], &flat), profile);
        let assumed = Noise {
            source: NoiseSource::Assumed,
            runs: 0,
            ..profile.clone()
        };
        assert_eq!(with_trials(&assumed, &flat, &flat), assumed);
    }
}
