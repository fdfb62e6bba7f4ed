//! Repetitions of a plan (`--repeat N`): the order each repetition runs
//! the plan in, and the aggregate of a benchmark's results over them.
//!
//! Between runs a cloud machine moves by far more than a run's own
//! confidence interval says, so the run, not the sample, is the unit of
//! replication. Each repetition runs every planned benchmark once, in a
//! seeded random order (drift and order effects spread over every
//! benchmark instead of landing on whichever runs last); the aggregate
//! metric's value is the median of the trial medians and its statistics
//! are those of the trial medians.

use std::collections::BTreeMap;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_model::{
    BenchmarkMetric, BenchmarkRunResult, MetricStats, ParamValue, Quality, Resources, RunStatus,
    Trial, Validation, results_at,
};

/// The plan positions `0..n` in the order repetition `trial` (1-based)
/// runs them: a Fisher-Yates shuffle seeded by the run's seed and the
/// repetition, so a replay runs the same orders.
pub fn trial_order(n: usize, seed: u64, trial: u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng =
        Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7269_616c_5f6f_7264 ^ u64::from(trial));
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// Fewest trials of a benchmark for holding each to the others' regime.
const REGIME_QUORUM: usize = 3;

/// Marks every trial of a benchmark whose core speed (clock, FP throughput)
/// read a different regime than most of its trials (see [`warpt_model::RegimeProbes::speed_apart`]):
/// its conditions become unreliable with the reason, so the aggregate
/// leaves it out as it leaves out a trial that measured interference. A
/// whole trial in another regime has no swing of its own to show.
pub fn mark_regimes_across_trials(trials: &mut [Trial], planned: usize) {
    for position in 0..planned {
        for (t, i, why) in odd_speeds(trials, position) {
            let r = &mut trials[t].benchmarks[i];
            r.quality = Some(Quality::Unreliable);
            r.measurement_quality = Some(Quality::Unreliable);
            r.quality_reasons.insert(0, why);
        }
    }
}

/// (trial, index in it, reason) of each passed result at plan `position`
/// whose core speed is apart from the consensus of at least [`REGIME_QUORUM`].
fn odd_speeds(trials: &[Trial], position: usize) -> Vec<(usize, usize, String)> {
    let at: Vec<(usize, usize, &warpt_model::RegimeProbes)> = trials
        .iter()
        .enumerate()
        .filter_map(|(t, trial)| {
            let i = trial.order.iter().position(|&p| p == position)?;
            let r = trial.benchmarks.get(i)?;
            let probes = r
                .regime
                .as_ref()
                .filter(|_| r.status == RunStatus::Passed)?;
            Some((t, i, probes))
        })
        .collect();
    if at.len() < REGIME_QUORUM {
        return Vec::new();
    }
    let probes: Vec<&warpt_model::RegimeProbes> = at.iter().map(|(_, _, p)| *p).collect();
    let most = warpt_model::RegimeProbes::consensus(&probes);
    at.into_iter()
        .filter_map(|(t, i, p)| {
            let why =
                warpt_model::RegimeProbes::speed_apart(&most, p, ("other trials", "this trial"))?;
            Some((t, i, why))
        })
        .collect()
}

/// The aggregates of `trials` for a plan of `planned` benchmarks: one
/// result per plan position that ran in at least one trial.
pub fn aggregate_trials(trials: &[Trial], planned: usize) -> Vec<BenchmarkRunResult> {
    (0..planned)
        .filter_map(|p| aggregate(&results_at(trials, p)))
        .collect()
}

fn status_rank(s: RunStatus) -> u8 {
    match s {
        RunStatus::Passed => 0,
        RunStatus::Skipped => 1,
        RunStatus::Failed => 2,
        RunStatus::Timeout => 3,
        RunStatus::Crashed => 4,
    }
}

fn quality_rank(q: Option<Quality>) -> u8 {
    match q {
        None | Some(Quality::Good) => 0,
        Some(Quality::Noisy) => 1,
        Some(Quality::Unreliable) => 2,
    }
}

/// One benchmark's results over several trials as one result.
///
/// The status and validation are the worst of any trial (a wrong answer in
/// one trial is a wrong answer). The metrics summarise the *undisturbed*
/// trials (see [`BenchmarkRunResult::undisturbed`]): per metric, the median
/// of their medians and the statistics of those medians (`n` = trials). A
/// trial whose measurement was unreliable (measured interference, severe
/// throttling, a wildly spread median) is left out and named in
/// `quality_reasons`; when more than half are, all are used and the
/// aggregate is `unreliable`. `None` for no trials.
pub fn aggregate(results: &[&BenchmarkRunResult]) -> Option<BenchmarkRunResult> {
    let first = results.first()?;
    let mut out = BenchmarkRunResult::new(
        first.spec.clone(),
        first.params.clone(),
        RunStatus::Passed,
        first.start_time,
    );
    out.end_time = results.iter().map(|r| r.end_time).max()?;
    let worst = results
        .iter()
        .enumerate()
        .max_by_key(|(_, r)| status_rank(r.status))
        .map(|(i, r)| (i + 1, *r))?;
    out.set_status(worst.1.status);
    out.error_message = worst
        .1
        .error_message
        .as_ref()
        .map(|m| format!("trial {}: {m}", worst.0));
    out.interrupted = results.iter().any(|r| r.interrupted);

    let numbered: Vec<(usize, &BenchmarkRunResult)> = results
        .iter()
        .enumerate()
        .map(|(i, r)| (i + 1, *r))
        .collect();
    let undisturbed: Vec<(usize, &BenchmarkRunResult)> = numbered
        .iter()
        .copied()
        .filter(|(_, r)| r.undisturbed())
        .collect();
    let enough = !undisturbed.is_empty() && undisturbed.len() * 2 >= results.len();
    let used = if enough { &undisturbed } else { &numbered };

    // Metrics in the order the first trial that measured them lists them.
    let mut keys: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for (_, r) in used {
        for m in &r.metrics {
            let k = (m.name.clone(), m.tags.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    for (name, tags) in keys {
        let found: Vec<&BenchmarkMetric> = used
            .iter()
            .filter_map(|(_, r)| r.metrics.iter().find(|m| m.name == name && m.tags == tags))
            .filter(|m| m.value.is_finite())
            .collect();
        let Some(model) = found.first() else { continue };
        let values: Vec<f64> = found.iter().map(|m| m.value).collect();
        let mut st = MetricStats::summarize(&values);
        if let Some(st) = st.as_mut() {
            st.stop_reason = found
                .iter()
                .filter_map(|m| m.stats.as_ref().and_then(|s| s.stop_reason))
                .max_by_key(|r| r.severity());
        }
        out.metrics.push(BenchmarkMetric {
            name,
            value: st.as_ref().map_or(f64::NAN, |s| s.median),
            unit: model.unit.clone(),
            higher_is_better: model.higher_is_better,
            tags,
            stats: st,
        });
    }
    out.stop_reason = results
        .iter()
        .filter_map(|r| r.stop_reason)
        .max_by_key(|r| r.severity());

    let failed = numbered
        .iter()
        .find(|(_, r)| r.validation.as_ref().is_some_and(|v| !v.passed));
    out.validation = match failed {
        Some((i, r)) => r
            .validation
            .as_ref()
            .map(|v| Validation::fail(format!("trial {i}: {}", v.message))),
        None => first.validation.as_ref().map(|v| {
            Validation::pass(format!(
                "each of {} trials validated; trial 1: {}",
                results.len(),
                v.message
            ))
        }),
    };
    out.details = used
        .iter()
        .map(|(_, r)| *r)
        .find(|r| r.status == RunStatus::Passed)
        .unwrap_or(first)
        .details
        .clone();
    out.details
        .insert("trials".into(), ParamValue::Int(results.len() as i64));
    out.details
        .insert("trials_used".into(), ParamValue::Int(used.len() as i64));
    for r in results {
        for w in &r.warnings {
            if !out.warnings.contains(w) {
                out.warnings.push(w.clone());
            }
        }
    }
    grade(&mut out, &numbered, used, enough);
    out.resources = Some(sum_resources(results));
    Some(out)
}

/// The aggregate's quality: the worst of the trials it used, and why.
fn grade(
    out: &mut BenchmarkRunResult,
    all: &[(usize, &BenchmarkRunResult)],
    used: &[(usize, &BenchmarkRunResult)],
    enough: bool,
) {
    let worst = |q: fn(&BenchmarkRunResult) -> Option<Quality>| match used
        .iter()
        .map(|(_, r)| quality_rank(q(r)))
        .max()
        .unwrap_or(0)
    {
        0 => Quality::Good,
        1 => Quality::Noisy,
        _ => Quality::Unreliable,
    };
    out.quality = Some(worst(|r| r.quality));
    out.measurement_quality = Some(worst(|r| r.measurement_quality.or(r.quality)));
    if !enough {
        let undisturbed = all.iter().filter(|(_, r)| r.undisturbed()).count();
        // The first disturbed trial's cause, so that a verdict quoting
        // this reason alone still says what disturbed the host.
        let cause = all
            .iter()
            .filter(|(_, r)| !r.undisturbed())
            .find_map(|(i, r)| {
                // A trial that is itself an aggregate (`--repeat` inside a
                // trial) names its own trials' causes after its summary.
                r.quality_reasons
                    .iter()
                    .find(|w| {
                        w.as_str() != warpt_model::DEBUG_BUILD_REASON && !w.starts_with("only ")
                    })
                    .map(|w| {
                        let w = w.strip_prefix("trial ").map_or(w.as_str(), |rest| {
                            rest.split_once(": ").map_or(w.as_str(), |(_, why)| why)
                        });
                        format!(" (trial {i}: {w})")
                    })
            })
            .unwrap_or_default();
        out.quality = Some(Quality::Unreliable);
        out.measurement_quality = Some(Quality::Unreliable);
        out.quality_reasons.push(format!(
            "only {undisturbed} of {} trials were undisturbed{cause}: the aggregate uses them all",
            all.len()
        ));
    }
    for (i, r) in all {
        let left_out = !used.iter().any(|(j, _)| j == i);
        if left_out {
            let why = r
                .quality_reasons
                .iter()
                .find(|w| w.as_str() != warpt_model::DEBUG_BUILD_REASON)
                .cloned()
                .unwrap_or_else(|| format!("it {}", r.status));
            out.quality_reasons
                .push(format!("trial {i} left out of the aggregate: {why}"));
        } else {
            out.quality_reasons.extend(
                r.quality_reasons
                    .iter()
                    .map(|why| format!("trial {i}: {why}")),
            );
        }
    }
}

fn sum_resources(results: &[&BenchmarkRunResult]) -> Resources {
    let all: Vec<&Resources> = results
        .iter()
        .filter_map(|r| r.resources.as_ref())
        .collect();
    let sum = |f: fn(&Resources) -> Option<f64>| {
        let v: Vec<f64> = all.iter().filter_map(|r| f(r)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    Resources {
        peak_rss_bytes: all.iter().filter_map(|r| r.peak_rss_bytes).max(),
        cpu_user_s: sum(|r| r.cpu_user_s),
        cpu_sys_s: sum(|r| r.cpu_sys_s),
        energy_j: sum(|r| r.energy_j),
        gpu_memory_peak_bytes: all.iter().filter_map(|r| r.gpu_memory_peak_bytes).max(),
        // Each trial's own notes once (why energy_j is absent, and how to
        // read it), after what the sums are.
        notes: std::iter::once("the sum over every trial (peak RSS: the largest)".to_string())
            .chain(all.iter().flat_map(|r| r.notes.iter().cloned()))
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn result(value: f64, quality: Quality) -> BenchmarkRunResult {
        let mut r = crate::quality::tests::result();
        r.metrics.push(BenchmarkMetric {
            name: "rate".into(),
            value,
            unit: "1/s".into(),
            higher_is_better: true,
            tags: Default::default(),
            stats: MetricStats::summarize(&[value * 0.99, value, value * 1.01]),
        });
        r.validation = Some(Validation::pass("ok"));
        r.quality = Some(quality);
        if quality != Quality::Good {
            r.quality_reasons.push("foreign_cpu: busy".into());
        }
        r
    }

    #[test]
    fn orders_are_permutations_that_differ_between_trials() {
        let a = trial_order(8, 42, 1);
        let b = trial_order(8, 42, 2);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        assert_ne!(a, b);
        assert_eq!(a, trial_order(8, 42, 1));
    }

    #[test]
    fn aggregates_trial_medians_and_the_worst_quality() {
        let rs = [
            result(100.0, Quality::Good),
            result(90.0, Quality::Noisy),
            result(104.0, Quality::Good),
        ];
        let refs: Vec<&BenchmarkRunResult> = rs.iter().collect();
        let agg = aggregate(&refs).unwrap();
        let m = &agg.metrics[0];
        assert_eq!(m.value, 100.0);
        let st = m.stats.as_ref().unwrap();
        assert_eq!((st.n, st.min, st.max), (3, 90.0, 104.0));
        assert_eq!(st.samples, vec![100.0, 90.0, 104.0]);
        assert_eq!(agg.quality, Some(Quality::Noisy));
        assert_eq!(agg.quality_reasons, vec!["trial 2: foreign_cpu: busy"]);
        assert!(agg.validation.unwrap().passed);
        assert_eq!(agg.details["trials"], ParamValue::Int(3));
    }

    #[test]
    fn a_disturbed_trial_is_left_out_and_named() {
        let rs = [
            result(100.0, Quality::Good),
            result(60.0, Quality::Unreliable),
            result(104.0, Quality::Good),
        ];
        let refs: Vec<&BenchmarkRunResult> = rs.iter().collect();
        let agg = aggregate(&refs).unwrap();
        let st = agg.metrics[0].stats.as_ref().unwrap();
        assert_eq!(st.samples, vec![100.0, 104.0]);
        assert_eq!(agg.quality, Some(Quality::Good));
        assert_eq!(
            agg.quality_reasons,
            vec!["trial 2 left out of the aggregate: foreign_cpu: busy"]
        );
        assert_eq!(agg.details["trials_used"], ParamValue::Int(2));
        // Most trials disturbed: all are used, and the aggregate says so.
        let rs = [
            result(100.0, Quality::Unreliable),
            result(60.0, Quality::Unreliable),
            result(104.0, Quality::Good),
        ];
        let refs: Vec<&BenchmarkRunResult> = rs.iter().collect();
        let agg = aggregate(&refs).unwrap();
        assert_eq!(agg.metrics[0].stats.as_ref().unwrap().n, 3);
        assert_eq!(agg.quality, Some(Quality::Unreliable));
        assert_eq!(
            agg.quality_reasons[0],
            "only 1 of 3 trials were undisturbed (trial 1: foreign_cpu: busy): \
             the aggregate uses them all"
        );
    }

    #[test]
    fn finds_results_by_plan_position_in_shuffled_trials() {
        let mut x = result(1.0, Quality::Good);
        x.spec.id = warpt_model::BenchmarkId::new("s", "x");
        let y = result(2.0, Quality::Good);
        let trials = vec![
            Trial {
                index: 1,
                start_time: None,
                end_time: None,
                order: vec![1, 0],
                benchmarks: vec![y.clone(), x.clone()],
            },
            Trial {
                index: 2,
                start_time: None,
                end_time: None,
                order: vec![0],
                benchmarks: vec![x.clone()],
            },
        ];
        let agg = aggregate_trials(&trials, 2);
        assert_eq!(agg.len(), 2);
        assert_eq!(agg[0].spec.id.name, "x");
        assert_eq!(agg[0].metrics[0].stats.as_ref().unwrap().n, 2);
        assert_eq!(agg[1].metrics[0].stats.as_ref().unwrap().n, 1);
    }

    #[test]
    fn a_trial_in_another_regime_than_its_siblings_is_left_out() {
        let at = |mhz: f64, value: f64| {
            let mut r = result(value, Quality::Good);
            r.regime = Some(warpt_model::RegimeProbes {
                clock_mhz: vec![mhz, mhz + 5.0],
                ..Default::default()
            });
            Trial {
                index: 0,
                start_time: None,
                end_time: None,
                order: vec![0],
                benchmarks: vec![r],
            }
        };
        let mut trials = vec![
            at(3200.0, 100.0),
            at(3210.0, 101.0),
            at(2950.0, 92.0),
            at(3190.0, 100.5),
        ];
        mark_regimes_across_trials(&mut trials, 1);
        let odd = &trials[2].benchmarks[0];
        assert_eq!(odd.measurement_quality, Some(Quality::Unreliable));
        assert!(
            odd.quality_reasons[0].starts_with("regime: the effective clock differs"),
            "{:?}",
            odd.quality_reasons
        );
        assert!(trials[0].benchmarks[0].quality_reasons.is_empty());
        let agg = aggregate_trials(&trials, 1);
        assert_eq!(agg[0].details["trials_used"], ParamValue::Int(3));
        // Two trials are too few to say which one is odd.
        let mut two = vec![at(3200.0, 100.0), at(2950.0, 92.0)];
        mark_regimes_across_trials(&mut two, 1);
        assert!(
            two.iter()
                .all(|t| t.benchmarks[0].quality_reasons.is_empty())
        );
    }
}
