//! `warpt benchmark compare`: every metric of two runs matched and judged.
//!
//! Metrics match by (suite, benchmark, metric name, tags). What can be
//! claimed depends on what each side holds (see [`evidence`]): paired
//! trials from an interleaved A/B, trial medians from `--repeat`, or one
//! run a side. The p-values of all tested metrics are adjusted with
//! Benjamini-Hochberg (the false discovery rate is kept at `alpha`).
//!
//! A metric is `improved` or `regressed` only when the evidence says the
//! sides differ *and* the change is outside the band: the larger of
//! `--threshold` and the [`noise`] band (k x the machine's run-to-run
//! spread, narrowed by the number of trials; on one run a side widened by
//! what a host regime or a difference in the hypervisor's steal can
//! explain). It is `inconclusive` when either side's result did not pass
//! or is unreliable (for anything but a regime or steal), or when one run a
//! side shows a change beyond the threshold but the machine's noise is
//! unknown: a single run cannot tell a change of the code from the next
//! run landing elsewhere. Otherwise it is `~`.

pub mod counted;
pub mod evidence;
pub mod noise;
mod regime;
mod steal;
mod verdict;

use std::collections::BTreeMap;

use serde::Serialize;
use warpt_model::{BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun, RunStatus};

pub use counted::DEFAULT_COUNT_THRESHOLD_PCT;
use evidence::Kind;
pub use evidence::Pairing;
pub use noise::{MetricRef, NOISE_K, Noise, NoiseLookup, NoiseSource};
pub use verdict::{BYTES_RESOLUTION, REGIME_REACH_MARGIN};
use verdict::{Conditions, judge, unusable};
use warpt_stats as stats;

/// How a comparison judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Changes smaller than this many percent are `~` whatever the test says.
    pub threshold_pct: f64,
    /// False discovery rate.
    pub alpha: f64,
    /// The noise band is this many times the run-to-run spread.
    pub noise_k: f64,
    /// How trial i of each side relates: separate runs, the same round
    /// (interleaved A/B), or the same time (duet).
    pub pairing: Pairing,
    /// Changes of a counted metric (instructions) smaller than this many
    /// percent are `~` (see [`counted`]).
    pub count_threshold_pct: f64,
}

/// The default `--threshold`, percent: the smallest change called a
/// regression or an improvement (criterion's noise threshold). The noise
/// band widens it wherever the machine moves more between runs.
pub const DEFAULT_THRESHOLD_PCT: f64 = 1.0;

impl Default for Options {
    fn default() -> Self {
        Options {
            threshold_pct: DEFAULT_THRESHOLD_PCT,
            alpha: 0.05,
            noise_k: NOISE_K,
            pairing: Pairing::None,
            count_threshold_pct: counted::DEFAULT_COUNT_THRESHOLD_PCT,
        }
    }
}

/// The judgement on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Better, significantly and beyond the band.
    #[serde(rename = "improved")]
    Improved,
    /// Worse, significantly and beyond the band.
    #[serde(rename = "regressed")]
    Regressed,
    /// No change beyond the band.
    #[serde(rename = "~")]
    Unchanged,
    /// Too noisy to tell (see the metric's `reason`).
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

impl Verdict {
    /// `improved`, `regressed`, `~` or `inconclusive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Unchanged => "~",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One side's figure for a metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Median (the metric's value; over trials, the median of trial medians).
    pub median: f64,
    /// 95% CI of the median, when known.
    pub ci95: Option<(f64, f64)>,
    /// Samples behind it (trials, for a run with trials).
    pub n: usize,
    /// Runs (trials) behind it: 1 for a single run.
    pub trials: usize,
}

/// One matched metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricComparison {
    /// Suite.
    pub suite: String,
    /// Benchmark.
    pub benchmark: String,
    /// Metric name.
    pub metric: String,
    /// Metric tags.
    pub tags: BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// The baseline.
    pub base: Figure,
    /// The run compared with it.
    pub current: Figure,
    /// (current - base) / base, percent.
    pub change_pct: f64,
    /// How many times faster current is: base / current for times,
    /// current / base for rates.
    pub speedup: f64,
    /// Two-sided p-value of the test in `method`.
    pub p_value: Option<f64>,
    /// Benjamini-Hochberg adjusted p-value.
    pub q_value: Option<f64>,
    /// Bootstrap 95% CI of current / base (medians, or paired ratios).
    pub ratio_ci95: Option<(f64, f64)>,
    /// The test: `signed-rank (paired trials)`, `paired-t (paired trials)`,
    /// `mann-whitney (trials)`, `welch-t (trials)`, `mann-whitney (samples)`,
    /// `ci-overlap` or `noise band`.
    pub method: String,
    /// Run-to-run spread of the metric on this machine (CV of whole-run
    /// medians, see [`noise::Noise::cv`]), percent.
    pub noise_cv_pct: Option<f64>,
    /// Where the spread came from: `profile`, `history`, `assumed`, `unknown`.
    pub noise_source: NoiseSource,
    /// Compared trials (both sides) whose spread was pooled with the
    /// stored one (at least 3 a side, see [`noise::with_trials`]); 0 when
    /// the stored spread stands alone.
    pub noise_pooled_trials: usize,
    /// The noise band, percent: k x spread x its upper-bound factor,
    /// narrowed by the trials on each side; `null` when the noise is unknown.
    pub noise_band_pct: Option<f64>,
    /// The practical threshold applied: the larger of `--threshold` and the
    /// noise band, plus `regime_shift_pct` when a host regime reached the
    /// metric.
    pub band_pct: f64,
    /// One run a side, or unpaired trials: the host regimes that reached
    /// this metric (the probes' reasons, each starting with the side and
    /// `regime: `), and on one run a side the hypervisor's steal where it
    /// graded a side unreliable (`steal: `, both sides' shares); none when
    /// the probes differed by less than a regime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regime: Option<String>,
    /// One run a side, or unpaired trials (each side's trials' readings
    /// together): how far the difference between the two sides' regime
    /// probes (clock, FP throughput, scaling, cache and bandwidth canaries)
    /// can move the metric, percent, below the regime thresholds too, plus
    /// what the difference in steal can (see `regime`); the band is widened
    /// by it (see [`warpt_model::RegimeShift`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regime_shift_pct: Option<f64>,
    /// The judgement.
    pub verdict: Verdict,
    /// Why the verdict is `inconclusive` (which side, and why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How far past the threshold a `~`'s band may reach before more trials
/// are worth their time: gzip's quiet A/A bands of 1.0–1.3% (5 pairs,
/// threshold 1%) stay resolved, where extending every one tripled the time
/// of an unchanged comparison; the noisy hour's 3–4% do not.
pub const UNRESOLVED_BAND: f64 = 1.5;

impl MetricComparison {
    /// Whether more trials could sharpen this verdict: `inconclusive`; or
    /// `~` inside a band the trials' own spread widened past
    /// [`UNRESOLVED_BAND`] times `threshold_pct` (a change of one and a half
    /// times the threshold would have been called `~` too), unless it is a
    /// byte count whose band cannot reach a change of memory's granularity
    /// ([`BYTES_RESOLUTION`]; below it the count is `~` whatever the
    /// trials: gzip's `peak_rss_bytes`, `~` within ±3–10% of a few MiB,
    /// asked for 15 rounds in every comparison).
    ///
    /// A wide band is not projected forward: five rounds estimate a spread
    /// poorly, and one disturbed round made a quiet gzip A/A's band ±9%
    /// where the next ten rounds might bring it to ±1%.
    pub fn unresolved(&self, threshold_pct: f64) -> bool {
        match self.verdict {
            Verdict::Inconclusive => true,
            Verdict::Unchanged => {
                let Some(band) = self.noise_band_pct else {
                    return false;
                };
                let bytes_matter = self.unit != "B"
                    || band / 100.0 * self.base.median.abs().max(self.current.median.abs())
                        >= BYTES_RESOLUTION;
                self.noise_source == NoiseSource::Trials
                    && band > UNRESOLVED_BAND * threshold_pct
                    && bytes_matter
            }
            Verdict::Improved | Verdict::Regressed => false,
        }
    }

    /// `suite/benchmark metric{tags}`.
    pub fn label(&self) -> String {
        format!(
            "{}/{} {} {}",
            self.suite,
            self.benchmark,
            self.metric,
            warpt_model::tag_label(&self.tags)
        )
        .trim_end()
        .to_string()
    }
}

/// How many metrics got each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// `improved`.
    pub improved: usize,
    /// `regressed`.
    pub regressed: usize,
    /// `~`.
    pub unchanged: usize,
    /// `inconclusive`.
    pub inconclusive: usize,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// What the baseline is (file or run id).
    pub base: String,
    /// What is compared with it.
    pub current: String,
    /// The threshold, percent.
    pub threshold_pct: f64,
    /// The threshold of counted metrics, percent.
    pub count_threshold_pct: f64,
    /// The false discovery rate.
    pub alpha: f64,
    /// The noise band's multiple of the run-to-run spread.
    pub noise_k: f64,
    /// Whether trials were paired (interleaved A/B, or duet).
    pub paired: bool,
    /// Whether the pairs ran at the same time (`--duet`).
    pub duet: bool,
    /// Runs (trials) on each side: base, current.
    pub trials: (usize, usize),
    /// Verdict counts.
    pub counts: Counts,
    /// Every matched metric.
    pub metrics: Vec<MetricComparison>,
    /// Metrics only in the baseline.
    pub only_base: Vec<String>,
    /// Metrics only in the current run.
    pub only_current: Vec<String>,
    /// Differences between the two runs' machines and settings.
    pub warnings: Vec<String>,
}

impl Comparison {
    /// Whether any metric regressed.
    pub fn regressed(&self) -> bool {
        self.counts.regressed > 0
    }

    /// Whether any metric is inconclusive.
    pub fn inconclusive(&self) -> bool {
        self.counts.inconclusive > 0
    }

    /// The metrics more trials could sharpen
    /// ([`MetricComparison::unresolved`]), each as `label: what` (an
    /// inconclusive one with its reason, so the user sees why more rounds
    /// run: a side the host disturbed, a band the trials could not narrow).
    pub fn unresolved(&self) -> Vec<String> {
        self.metrics
            .iter()
            .filter(|m| m.unresolved(self.threshold_pct))
            .map(|m| match m.verdict {
                Verdict::Inconclusive => match &m.reason {
                    Some(why) => format!("{}: inconclusive, {why}", m.label()),
                    None => format!("{}: inconclusive", m.label()),
                },
                _ => format!(
                    "{}: ~ within the trials' band of ±{:.1}%",
                    m.label(),
                    m.noise_band_pct.unwrap_or(m.band_pct)
                ),
            })
            .collect()
    }

    /// How many metrics had a test with a p-value (the BH family size).
    pub fn tested(&self) -> usize {
        self.metrics.iter().filter(|m| m.p_value.is_some()).count()
    }
}

type Key = (String, String, String, BTreeMap<String, String>);

/// Every metric of a run's (aggregate) results with the result it belongs to.
fn metrics_of(run: &BenchmarkSuiteRun) -> Vec<(Key, &BenchmarkRunResult, &BenchmarkMetric)> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for r in &run.benchmarks {
        for m in &r.metrics {
            let key = (
                r.spec.id.suite.clone(),
                r.spec.id.name.clone(),
                m.name.clone(),
                m.tags.clone(),
            );
            if seen.insert(key.clone()) {
                out.push((key, r, m));
            }
        }
    }
    out
}

/// A metric's whole-run medians, one per undisturbed trial that measured
/// it (every passed one when fewer than half were undisturbed, as the
/// harness's aggregation does; see
/// [`warpt_model::BenchmarkRunResult::undisturbed`]), with the trial's
/// number; a single run gives its own value. With `paired` every passed
/// trial: the pairing is the defence against the host, and leaving out
/// each side's disturbed trials apart broke pairs (six rounds of a 5x
/// slowdown kept two pairs on a stolen-from guest, p = 0.053).
fn trial_values(run: &BenchmarkSuiteRun, key: &Key, value: f64, paired: bool) -> Vec<(u32, f64)> {
    if run.trials.is_empty() {
        return vec![(1, value)];
    }
    let found: Vec<(u32, &BenchmarkRunResult, f64)> = run
        .trials
        .iter()
        .filter_map(|t| {
            t.benchmarks
                .iter()
                .filter(|r| r.spec.id.suite == key.0 && r.spec.id.name == key.1)
                .find_map(|r| {
                    r.metrics
                        .iter()
                        .find(|m| m.name == key.2 && m.tags == key.3)
                        .map(|m| (t.index, r, m.value))
                })
        })
        .filter(|(_, _, v)| v.is_finite() && *v != 0.0)
        .collect();
    let undisturbed = found.iter().filter(|(_, r, _)| r.undisturbed()).count();
    let all = paired || undisturbed == 0 || undisturbed * 2 < found.len();
    found
        .into_iter()
        .filter(|(_, r, _)| {
            if all {
                r.status == RunStatus::Passed
            } else {
                r.undisturbed()
            }
        })
        .map(|(i, _, v)| (i, v))
        .collect()
}

fn label(key: &Key) -> String {
    let tags: Vec<String> = key.3.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}/{} {} {}", key.0, key.1, key.2, tags.join(","))
        .trim_end()
        .to_string()
}

fn figure(m: &BenchmarkMetric, trials: usize) -> Figure {
    Figure {
        median: m.value,
        ci95: m.stats.as_ref().map(|s| (s.ci95_low, s.ci95_high)),
        n: m.stats.as_ref().map_or(0, |s| s.n),
        trials,
    }
}

fn is_debug(run: &BenchmarkSuiteRun) -> bool {
    run.manifest
        .as_ref()
        .is_some_and(|m| m.build_profile == "debug")
}

/// What differs between the two runs' machines and settings.
pub fn differences(base: &BenchmarkSuiteRun, current: &BenchmarkSuiteRun) -> Vec<String> {
    let mut out = Vec::new();
    let mut diff = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{what}: {a} -> {b}"));
        }
    };
    if let (Some(a), Some(b)) = (&base.system, &current.system) {
        diff("machine fingerprint", a.fingerprint(), b.fingerprint());
        diff("host", a.os.hostname.clone(), b.os.hostname.clone());
        diff("CPU", a.cpu.model.clone(), b.cpu.model.clone());
        diff(
            "logical CPUs",
            a.cpu.logical_cores.to_string(),
            b.cpu.logical_cores.to_string(),
        );
        diff(
            "memory GiB",
            format!("{:.0}", a.memory.total_bytes as f64 / 1073741824.0),
            format!("{:.0}", b.memory.total_bytes as f64 / 1073741824.0),
        );
        diff("OS", a.os.name.clone(), b.os.name.clone());
        diff("kernel", a.os.kernel.clone(), b.os.kernel.clone());
    }
    if let (Some(a), Some(b)) = (&base.manifest, &current.manifest) {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        diff("warpt", a.warpt_version.clone(), b.warpt_version.clone());
        diff("build", a.build_profile.clone(), b.build_profile.clone());
        diff("governor", opt(&a.governor), opt(&b.governor));
        diff("SMT", opt(&a.smt), opt(&b.smt));
        diff("microcode", opt(&a.microcode), opt(&b.microcode));
        diff("seed", a.seed.to_string(), b.seed.to_string());
        diff(
            "git commit",
            a.git.as_ref().map_or("-".into(), |g| g.commit.clone()),
            b.git.as_ref().map_or("-".into(), |g| g.commit.clone()),
        );
    }
    for r in &current.benchmarks {
        // A sweep holds several results of one benchmark: one with the
        // same parameters is its counterpart; without one, the first of
        // that benchmark says which parameters moved.
        let same_id = || base.benchmarks.iter().filter(|b| b.spec.id == r.spec.id);
        if !same_id().any(|b| b.params == r.params)
            && let Some(b) = same_id().next()
        {
            let keys: Vec<&str> = b
                .params
                .keys()
                .chain(r.params.keys().filter(|k| !b.params.contains_key(*k)))
                .filter(|k| b.params.get(*k) != r.params.get(*k))
                .map(String::as_str)
                .collect();
            out.push(format!(
                "{}: parameters differ ({})",
                r.spec.id,
                keys.join(", ")
            ));
        }
        if r.status != warpt_model::RunStatus::Passed {
            out.push(format!(
                "{} is {} in the current run",
                r.spec.id,
                r.status.as_str()
            ));
        }
    }
    out
}

/// Compares `current` with `base`, taking each metric's run-to-run spread
/// from `noise`.
pub fn compare(
    base: &BenchmarkSuiteRun,
    base_label: &str,
    current: &BenchmarkSuiteRun,
    current_label: &str,
    options: &Options,
    noise: &dyn NoiseLookup,
) -> Comparison {
    let base_metrics = metrics_of(base);
    let current_metrics = metrics_of(current);
    let fingerprint = current.system.as_ref().map(|s| s.fingerprint());
    let mut metrics = Vec::new();
    let mut judged = Vec::new();
    let mut only_current = Vec::new();
    let debug = (is_debug(base), is_debug(current));
    for (key, cur_r, cur) in &current_metrics {
        let Some((_, old_r, old)) = base_metrics.iter().find(|(k, _, _)| k == key) else {
            only_current.push(label(key));
            continue;
        };
        let paired = options.pairing != Pairing::None;
        let mut tb = trial_values(base, key, old.value, paired);
        let mut tc = trial_values(current, key, cur.value, paired);
        if paired {
            // Pair by round: keep the trials both sides measured.
            tb.retain(|(i, _)| tc.iter().any(|(j, _)| i == j));
            tc.retain(|(j, _)| tb.iter().any(|(i, _)| i == j));
        }
        if options.pairing == Pairing::Duet {
            // And by couple (rounds 1-2, 3-4, ...): both of its rounds.
            let couple = |i: u32| (i.saturating_sub(1)) / 2;
            let whole = |t: &[(u32, f64)], i: u32| {
                t.iter().filter(|(j, _)| couple(*j) == couple(i)).count() == 2
            };
            let keep: Vec<u32> = tb
                .iter()
                .map(|(i, _)| *i)
                .filter(|&i| whole(&tb, i))
                .collect();
            tb.retain(|(i, _)| keep.contains(i));
            tc.retain(|(i, _)| keep.contains(i));
        }
        let (vb, vc): (Vec<f64>, Vec<f64>) = (
            tb.iter().map(|(_, v)| *v).collect(),
            tc.iter().map(|(_, v)| *v).collect(),
        );
        let counted = old.is_counted() && cur.is_counted();
        let ev = if counted {
            evidence::Evidence::counted()
        } else {
            evidence::gather(&vb, &vc, options.pairing, old, cur, options.alpha)
        };
        // Equal medians are no change, also when both are zero (an error
        // metric of an exact result). Across trials the Hodges-Lehmann
        // estimate is the change: one outlying trial barely moves it.
        let ratio = match ev.estimate {
            _ if cur.value == old.value => 1.0,
            Some(r) => r,
            None => cur.value / old.value,
        };
        let (change, speedup) = (
            ratio - 1.0,
            if cur.higher_is_better {
                ratio
            } else {
                1.0 / ratio
            },
        );
        // The baseline's parameters first: when the change under test is a
        // parameter, the profile was measured with the baseline's.
        let lookup = |params| {
            noise.noise(&MetricRef {
                suite: &key.0,
                benchmark: &key.1,
                metric: &key.2,
                tags: &key.3,
                params,
                fingerprint: fingerprint.as_deref(),
            })
        };
        let found = if counted {
            None
        } else {
            lookup(&old_r.params)
                .or_else(|| lookup(&cur_r.params))
                .map(|n| noise::with_trials(&n, &vb, &vc))
        };
        let mut noise_band = found
            .as_ref()
            .map(|n| noise::band_pct(n, options.noise_k, vb.len(), vc.len()));
        // Nothing stored: trials say how far their own runs move.
        let found = match found {
            None if matches!(ev.kind, Kind::Trials | Kind::Paired) => {
                let d = (ev.kind == Kind::Paired)
                    .then(|| evidence::pair_logs(&vb, &vc, options.pairing));
                noise::from_trials(&vb, &vc, d.as_deref()).map(|(n, nb, nc)| {
                    noise_band = Some(noise::band_pct(&n, options.noise_k, nb, nc));
                    n
                })
            }
            found => found,
        };
        // A counted metric's (spread, band): the counts' own movement.
        let count_spread = counted.then(|| {
            let (sb, sc) = (counted::spread(&vb, old), counted::spread(&vc, cur));
            (
                sb.max(sc),
                counted::band_pct(sb, sc, options.count_threshold_pct),
            )
        });
        // One run a side cannot tell a code change from a host regime that
        // differs between the runs or moved within one, where it reaches:
        // the band widens by what the regime can explain; so do unpaired
        // trials, whose regimes may differ from trial to trial.
        let single = tb.len() <= 1 && tc.len() <= 1 && !counted;
        let side = |run, result, used| regime::Side { run, result, used };
        let regime = regime::shift(
            &side(base, old_r, &tb),
            &side(current, cur_r, &tc),
            key,
            ev.kind,
        );
        // So does the hypervisor's steal where it graded a side unreliable:
        // what differed between the runs widens the band, and only what
        // can explain the change's direction holds back its verdict (see
        // [`steal`]).
        let stolen = (single && matches!(ev.kind, Kind::Samples | Kind::Band))
            .then(|| steal::shift(old_r, cur_r))
            .flatten();
        let regime_reach = regime.as_ref().map(|r| r.shift);
        let reach = match &stolen {
            Some(s) => Some(regime_reach.unwrap_or(0.0) + s.toward(speedup < 1.0)),
            None => regime_reach,
        };
        let regime = match (regime, stolen) {
            (Some(mut r), Some(s)) => {
                r.reasons.push(s.reason.clone());
                r.shift += s.reach();
                Some(r)
            }
            (r, None) => r,
            (None, Some(s)) => Some(warpt_model::RegimeShift {
                reasons: vec![s.reason.clone()],
                shift: s.reach(),
            }),
        };
        let held = if ev.kind == Kind::Paired || cur.value == old.value {
            Conditions::Waived
        } else if single {
            Conditions::RegimeJudged
        } else {
            Conditions::Held
        };
        let unusable = [
            unusable("base", old_r, old, tb.len(), debug, held),
            unusable("current", cur_r, cur, tc.len(), (debug.1, debug.0), held),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
        let shift_pct = regime.as_ref().map(|r| r.shift * 100.0);
        metrics.push(MetricComparison {
            suite: key.0.clone(),
            benchmark: key.1.clone(),
            metric: key.2.clone(),
            tags: key.3.clone(),
            unit: cur.unit.clone(),
            higher_is_better: cur.higher_is_better,
            base: figure(old, tb.len().max(1)),
            current: figure(cur, tc.len().max(1)),
            change_pct: change * 100.0,
            speedup,
            p_value: ev.p,
            q_value: None,
            ratio_ci95: ev.ratio_ci,
            method: ev.method.into(),
            noise_cv_pct: match count_spread {
                Some((spread, _)) => Some(spread * 100.0),
                None => found.as_ref().map(|n| n.cv * 100.0),
            },
            noise_source: match (count_spread, &found) {
                (Some(_), _) => NoiseSource::Counts,
                (None, Some(n)) => n.source,
                (None, None) => NoiseSource::Unknown,
            },
            noise_pooled_trials: found.as_ref().map_or(0, |n| n.pooled_trials),
            noise_band_pct: count_spread.map(|(_, band)| band).or(noise_band),
            band_pct: match count_spread {
                Some((_, band)) => band,
                None => {
                    noise_band.map_or(options.threshold_pct, |b| b.max(options.threshold_pct))
                        + shift_pct.unwrap_or(0.0)
                }
            },
            regime: regime
                .map(|r| r.reasons.join("; "))
                .filter(|r| !r.is_empty()),
            regime_shift_pct: shift_pct,
            verdict: Verdict::Unchanged,
            reason: (!unusable.is_empty()).then(|| unusable.join("; ")),
        });
        judged.push((ev, reach.map(|r| r * 100.0)));
    }
    let ps: Vec<f64> = metrics
        .iter()
        .map(|m| m.p_value.unwrap_or(f64::NAN))
        .collect();
    let qs = stats::benjamini_hochberg(&ps);
    let mut counts = Counts::default();
    for ((m, q), (ev, reach)) in metrics.iter_mut().zip(qs).zip(judged) {
        m.q_value = q.is_finite().then_some(q);
        m.verdict = judge(m, &ev, reach, options);
        match m.verdict {
            Verdict::Improved => counts.improved += 1,
            Verdict::Regressed => counts.regressed += 1,
            Verdict::Unchanged => counts.unchanged += 1,
            Verdict::Inconclusive => counts.inconclusive += 1,
        }
    }
    let only_base = base_metrics
        .iter()
        .filter(|(k, _, _)| !current_metrics.iter().any(|(c, _, _)| c == k))
        .map(|(k, _, _)| label(k))
        .collect();
    Comparison {
        base: base_label.to_string(),
        current: current_label.to_string(),
        threshold_pct: options.threshold_pct,
        count_threshold_pct: options.count_threshold_pct,
        alpha: options.alpha,
        noise_k: options.noise_k,
        paired: options.pairing != Pairing::None,
        duet: options.pairing == Pairing::Duet,
        trials: (base.trial_count(), current.trial_count()),
        counts,
        metrics,
        only_base,
        only_current,
        warnings: differences(base, current),
    }
}
