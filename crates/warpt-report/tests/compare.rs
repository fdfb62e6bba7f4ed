//! Comparisons of synthetic runs: the verdicts, their direction, and what
//! each kind of evidence (one run a side, trials, paired trials) may claim.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::{BenchmarkSuiteRun, Quality};
use warpt_report::compare::noise::Noise;
use warpt_report::{AssumedNoise, NoNoise, NoiseLookup, NoiseSource, Options, Verdict, compare};

mod common;
use common::{base, judge, noise, run, trials, trusting};

fn verdict(base: &[f64], current: &[f64], hib: bool) -> Verdict {
    let c = judge(&run(base, hib), &run(current, hib), &trusting());
    assert_eq!(c.metrics.len(), 1);
    c.metrics[0].verdict
}

#[test]
fn identical_distributions_are_unchanged() {
    let b = base(30);
    let shuffled: Vec<f64> = (0..30).map(|i| 100.0 + noise((i * 7) % 30)).collect();
    assert_eq!(verdict(&b, &shuffled, true), Verdict::Unchanged);
    assert_eq!(verdict(&b, &b, false), Verdict::Unchanged);
    // Without knowing the noise, nothing changed is still nothing changed.
    let c = judge(&run(&b, true), &run(&shuffled, true), &NoNoise);
    assert_eq!(c.metrics[0].verdict, Verdict::Unchanged);
}

#[test]
fn a_byte_count_moving_by_less_than_a_mebibyte_is_unchanged() {
    // An 18 MiB peak RSS up 3% (550 KiB), well beyond its samples' noise:
    // the granularity of memory, not a regression. 3 MiB more is one.
    let rss = |mib: f64, from: usize| -> Vec<f64> {
        (0..30)
            .map(|i| (mib + 0.001 * noise(i + from)) * 1048576.0)
            .collect()
    };
    let with_unit = |samples: &[f64]| {
        let mut r = run(samples, false);
        r.benchmarks[0].metrics[0].unit = "B".into();
        r
    };
    let small = judge(
        &with_unit(&rss(18.0, 0)),
        &with_unit(&rss(18.54, 500)),
        &trusting(),
    );
    assert_eq!(small.metrics[0].verdict, Verdict::Unchanged);
    let big = judge(
        &with_unit(&rss(18.0, 0)),
        &with_unit(&rss(21.0, 500)),
        &trusting(),
    );
    assert_eq!(big.metrics[0].verdict, Verdict::Regressed);
}

#[test]
fn a_five_percent_shift_is_judged_in_the_metrics_direction() {
    let b = base(30);
    let up: Vec<f64> = (0..30).map(|i| 105.0 + noise(i + 1000)).collect();
    let down: Vec<f64> = (0..30).map(|i| 95.0 + noise(i + 2000)).collect();
    // Throughput: more is better.
    assert_eq!(verdict(&b, &up, true), Verdict::Improved);
    assert_eq!(verdict(&b, &down, true), Verdict::Regressed);
    // Time: less is better.
    assert_eq!(verdict(&b, &up, false), Verdict::Regressed);
    assert_eq!(verdict(&b, &down, false), Verdict::Improved);
    let c = judge(&run(&b, false), &run(&up, false), &trusting());
    let m = &c.metrics[0];
    assert!((m.change_pct - 5.0).abs() < 1.0, "{}", m.change_pct);
    assert!(
        (m.speedup - 100.0 / 105.0).abs() < 0.01,
        "time metric speedup = base / current"
    );
    assert!(m.p_value.unwrap() < 1e-6 && m.q_value.unwrap() < 0.05);
    assert_eq!(m.method, "mann-whitney (samples)");
    let (lo, hi) = m.ratio_ci95.unwrap();
    assert!(lo > 1.0 && hi < 1.1);
    assert!(c.regressed());
}

#[test]
fn one_run_a_side_without_known_noise_is_inconclusive_not_a_regression() {
    let b = base(30);
    let down: Vec<f64> = (0..30).map(|i| 95.0 + noise(i + 2000)).collect();
    let c = judge(&run(&b, true), &run(&down, true), &NoNoise);
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Inconclusive);
    assert_eq!(m.noise_source, NoiseSource::Unknown);
    assert!(m.noise_band_pct.is_none());
    assert!(
        m.reason.as_deref().unwrap().starts_with("noise unknown"),
        "{m:?}"
    );
    assert!(!c.regressed() && c.inconclusive());
    let text = warpt_report::render::text(&c);
    assert!(
        text.contains("inconclusive: ") && text.contains("noise unknown for 1"),
        "{text}"
    );
}

#[test]
fn the_noise_band_absorbs_what_the_machine_moves_by() {
    let b = base(30);
    let down: Vec<f64> = (0..30).map(|i| 95.0 + noise(i + 2000)).collect();
    // 2% run-to-run spread: one run a side, band = 4 x 2% = 8% > 5%.
    let c = judge(&run(&b, true), &run(&down, true), &AssumedNoise(0.02));
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Unchanged);
    assert!((m.noise_band_pct.unwrap() - 8.0).abs() < 1e-9);
    assert!((m.band_pct - 8.0).abs() < 1e-9);
    assert_eq!(m.noise_source, NoiseSource::Assumed);
    // 1%: band 4% < 5%.
    let c = judge(&run(&b, true), &run(&down, true), &AssumedNoise(0.01));
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
    let json: serde_json::Value =
        serde_json::from_str(&warpt_report::render::json(&c).unwrap()).unwrap();
    assert!((json["metrics"][0]["noise_band_pct"].as_f64().unwrap() - 4.0).abs() < 1e-9);
}

/// `run` with a second metric (other tags) whose samples are `second`.
fn two_metrics(first: &[f64], second: &[f64]) -> BenchmarkSuiteRun {
    let mut r = run(first, true);
    let mut m = run(second, true).benchmarks[0].metrics[0].clone();
    m.tags.insert("case".into(), "wide".into());
    r.benchmarks[0].metrics.push(m);
    r
}

#[test]
fn one_poorly_known_metric_is_inconclusive_alone() {
    let b = base(30);
    let down: Vec<f64> = (0..30).map(|i| 80.0 + noise(i + 2000)).collect();
    // ±40% spread: the median's CI is far wider than 10%.
    let wide: Vec<f64> = (0..30)
        .map(|i| 80.0 * (1.0 + 0.4 * noise(i + 4000)))
        .collect();
    let mut cur = two_metrics(&down, &wide);
    // The harness grades the whole result unreliable for the wide metric,
    // but its measurement conditions were fine.
    cur.benchmarks[0].quality = Some(Quality::Unreliable);
    cur.benchmarks[0].measurement_quality = Some(Quality::Good);
    let c = judge(&two_metrics(&b, &b), &cur, &trusting());
    assert_eq!(c.metrics.len(), 2);
    let (narrow, wide) = (&c.metrics[0], &c.metrics[1]);
    assert_eq!(narrow.verdict, Verdict::Regressed, "{narrow:?}");
    assert_eq!(wide.verdict, Verdict::Inconclusive, "{wide:?}");
    let reason = wide.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("current median known only to ±"),
        "{reason}"
    );
    // Unreliable conditions (interference) take the whole result out.
    cur.benchmarks[0].measurement_quality = Some(Quality::Unreliable);
    let c = judge(&two_metrics(&b, &b), &cur, &trusting());
    assert!(
        c.metrics.iter().all(|m| m.verdict == Verdict::Inconclusive),
        "{:?}",
        c.metrics
    );
}

#[test]
fn trial_spread_is_weighed_by_the_test_not_taken_for_imprecision() {
    // Three trials a side moving ±20%: the aggregate's CI over the trial
    // medians is wide, but that is the run-to-run spread the test across
    // trials weighs, not one run's imprecision. The test finds no change;
    // with nothing stored, the trials' own spread (22%) makes the band, so
    // the verdict is `~` within a band as wide as the machine moves.
    let c = judge(
        &trials(&[100.0, 125.0, 80.0], true),
        &trials(&[98.0, 120.0, 85.0], true),
        &NoNoise,
    );
    let m = &c.metrics[0];
    assert!(
        m.base
            .ci95
            .is_some_and(|(lo, hi)| (hi - lo) / m.base.median > 0.2),
        "{m:?}"
    );
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    assert_eq!(m.noise_source, NoiseSource::Trials);
    assert_eq!(m.noise_pooled_trials, 6);
    assert!(m.band_pct > 50.0, "{m:?}");
    // A band from a quiet profile (1%, 20 runs) pools with those trials
    // but cannot cover them: too noisy to tell, not `~`.
    struct Quiet;
    impl NoiseLookup for Quiet {
        fn noise(&self, _: &warpt_report::MetricRef<'_>) -> Option<Noise> {
            Some(Noise {
                cv: 0.01,
                source: NoiseSource::Profile,
                runs: 200,
                pooled_trials: 0,
            })
        }
    }
    let c = judge(
        &trials(&[100.0, 125.0, 80.0], true),
        &trials(&[98.0, 120.0, 85.0], true),
        &Quiet,
    );
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Inconclusive, "{m:?}");
    let reason = m.reason.as_deref().unwrap();
    assert!(reason.starts_with("too noisy to tell: "), "{reason}");
    // With a known noise band as wide as that spread, the same trials are `~`.
    let c = judge(
        &trials(&[100.0, 125.0, 80.0], true),
        &trials(&[98.0, 120.0, 85.0], true),
        &AssumedNoise(0.25),
    );
    assert_eq!(
        c.metrics[0].verdict,
        Verdict::Unchanged,
        "{:?}",
        c.metrics[0]
    );
}

#[test]
fn trials_are_the_unit_of_replication() {
    // Five runs a side whose medians spread ±1%: the samples of any two runs
    // differ significantly, the runs do not.
    let a = trials(&[100.0, 101.0, 99.0, 100.5, 99.5], true);
    let a2 = trials(&[99.2, 100.8, 100.2, 99.6, 101.1], true);
    let c = judge(&a, &a2, &AssumedNoise(0.01));
    let m = &c.metrics[0];
    assert_eq!(m.method, "mann-whitney (trials)");
    assert_eq!((m.base.trials, m.current.trials), (5, 5));
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    assert_eq!(c.trials, (5, 5));
    // Nothing stored: the trials' own spread makes the band (their pooled
    // CV, 0.80% over 8 degrees of freedom, raised to its upper bound).
    let c = judge(&a, &a2, &NoNoise);
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    assert_eq!(m.noise_source, NoiseSource::Trials);
    let (cv, band) = (m.noise_cv_pct.unwrap(), m.noise_band_pct.unwrap());
    assert!((0.7..0.9).contains(&cv), "{cv}");
    assert!(band > 4.0 * cv / 5f64.sqrt() * 1.4, "{band}");
    // A 5% slowdown of every run is a regression, noise profile or not.
    let slow = trials(&[95.0, 96.0, 94.0, 95.5, 94.5], true);
    let c = judge(&a, &slow, &NoNoise);
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    assert!(m.p_value.unwrap() < 0.01);
    // Three a side: the rank test cannot reach 5%, so Welch's t on logs.
    let c = judge(
        &trials(&[100.0, 101.0, 99.0], true),
        &trials(&[95.0, 96.0, 94.0], true),
        &NoNoise,
    );
    assert_eq!(c.metrics[0].method, "welch-t (trials)");
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
    // The band narrows with trials: 2% spread, 5 a side -> 8% / sqrt(5).
    let c = judge(&a, &slow, &AssumedNoise(0.02));
    let band = c.metrics[0].noise_band_pct.unwrap();
    assert!((band - 8.0 / 5f64.sqrt()).abs() < 1e-9, "{band}");
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
    // Three trials against one run: no test across runs, the band decides.
    let c = judge(
        &trials(&[100.0, 101.0, 99.0], true),
        &run(&base(30), true),
        &NoNoise,
    );
    assert_eq!(c.metrics[0].method, "noise band");
}

#[test]
fn paired_trials_use_the_per_round_ratios() {
    // Drift moves both sides of each round alike; the 3% gap stays.
    let drift = [100.0, 110.0, 95.0, 105.0, 90.0, 102.0];
    let a = trials(&drift, false);
    let b = trials(&drift.map(|d| d * 1.03), false);
    let paired = Options {
        pairing: warpt_report::compare::Pairing::Rounds,
        ..Options::default()
    };
    let c = compare(&a, "a", &b, "b", &paired, &NoNoise);
    let m = &c.metrics[0];
    assert_eq!(m.method, "signed-rank (paired trials)");
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    let (lo, hi) = m.ratio_ci95.unwrap();
    assert!((lo - 1.03).abs() < 1e-6 && (hi - 1.03).abs() < 1e-6);
    // The band from the paired ratios alone: they agree exactly, so the
    // threshold is the band.
    assert_eq!(m.noise_source, NoiseSource::Trials);
    assert_eq!(m.band_pct, 1.0);
    // Unpaired, the drift hides it: the trials' spread (7%) makes the band,
    // and 3% lies inside it.
    let c = compare(&a, "a", &b, "b", &Options::default(), &NoNoise);
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    assert!(m.band_pct > 10.0, "{m:?}");
    // Five rounds: the paired t test.
    let a5 = trials(&drift[..5], false);
    let b5 = trials(
        &drift[..5].iter().map(|d| d * 1.03).collect::<Vec<_>>(),
        false,
    );
    let c = compare(&a5, "a", &b5, "b", &paired, &NoNoise);
    assert_eq!(c.metrics[0].method, "paired-t (paired trials)");
}

#[test]
fn a_significant_shift_inside_the_threshold_is_unchanged() {
    // The default threshold is 1% (criterion's noise threshold).
    let b = base(30);
    let slight: Vec<f64> = (0..30).map(|i| 100.6 + noise(i + 3000) * 0.1).collect();
    assert_eq!(verdict(&b, &slight, true), Verdict::Unchanged);
    let c = compare(
        &run(&b, true),
        "b",
        &run(&slight, true),
        "c",
        &Options {
            threshold_pct: 0.5,
            ..Options::default()
        },
        &trusting(),
    );
    assert_eq!(
        c.metrics[0].verdict,
        Verdict::Improved,
        "outside a 0.5% band"
    );
}

#[test]
fn few_samples_fall_back_to_ci_overlap_and_renders_name_everything() {
    let c = judge(
        &run(&[100.0, 100.5, 99.5], true),
        &run(&[90.0, 90.2, 89.8], true),
        &trusting(),
    );
    let m = &c.metrics[0];
    assert_eq!(m.method, "ci-overlap");
    assert_eq!(m.verdict, Verdict::Regressed);
    let text = warpt_report::render::text(&c);
    assert!(
        text.contains("regressed") && text.contains("Benjamini-Hochberg"),
        "{text}"
    );
    let md = warpt_report::render::markdown(&c);
    assert!(md.contains("| metric | base | current |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&warpt_report::render::json(&c).unwrap()).unwrap();
    assert_eq!(json["metrics"][0]["verdict"], "regressed");
}

#[test]
fn old_exports_without_trials_or_statistics_still_compare() {
    let text = r#"{"suite": "micro", "benchmarks": [
        {"spec": {"id": {"suite": "micro", "name": "cpu_flops"}, "components": ["cpu"], "kind": "synthetic"},
         "metrics": [{"name": "gflops", "value": 12.5, "unit": "GFLOP/s", "higher_is_better": true}],
         "success": true, "start_time": "2025-12-05T14:00:01Z", "end_time": "2025-12-05T14:00:11Z"}]}"#;
    let old = warpt_model::load_suite_run(text).unwrap();
    let mut new = old.clone();
    new.benchmarks[0].metrics[0].value = 10.0;
    let c = judge(&old, &new, &NoNoise);
    assert_eq!(c.metrics[0].method, "noise band");
    assert_eq!(c.metrics[0].verdict, Verdict::Inconclusive);
    let c = judge(&old, &new, &AssumedNoise(0.02));
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
    assert_eq!(
        judge(&old, &old, &NoNoise).metrics[0].verdict,
        Verdict::Unchanged
    );
}

#[test]
fn a_different_machine_is_warned_about_with_what_differs() {
    let b = base(10);
    let base_run = run(&b, true);
    let mut other = run(&b, true);
    let system = other.system.as_mut().unwrap();
    system.os.hostname = "elsewhere".into();
    system.os.kernel = "9.9.9".into();
    let c = judge(&base_run, &other, &NoNoise);
    let w = c.warnings.join("\n");
    assert!(
        w.contains("machine fingerprint") && w.contains("host: ") && w.contains("-> elsewhere"),
        "{w}"
    );
    assert!(w.contains("kernel: "), "{w}");
    // A new kernel alone keeps the fingerprint (the same machine, updated).
    let mut updated = run(&b, true);
    updated.system.as_mut().unwrap().os.kernel = "9.9.9".into();
    let c = judge(&base_run, &updated, &NoNoise);
    assert!(
        !c.warnings.iter().any(|w| w.contains("fingerprint")),
        "{:?}",
        c.warnings
    );
    assert!(c.warnings.iter().any(|w| w.starts_with("kernel")));
}

#[test]
fn equal_zero_medians_are_unchanged_and_a_zero_base_is_inconclusive() {
    // An error metric of an exact result: 0 on both sides is no change.
    let zeros = vec![0.0; 10];
    let c = judge(
        &trials(&[0.0; 3], false),
        &trials(&[0.0; 3], false),
        &NoNoise,
    );
    assert_eq!(c.metrics[0].verdict, Verdict::Unchanged);
    assert_eq!(c.metrics[0].change_pct, 0.0);
    assert_eq!(verdict(&zeros, &zeros, false), Verdict::Unchanged);
    // From zero to anything has no percentage: inconclusive, with the reason.
    let c = judge(&run(&zeros, false), &run(&base(10), false), &trusting());
    assert_eq!(c.metrics[0].verdict, Verdict::Inconclusive);
    assert!(c.metrics[0].reason.as_deref().unwrap().contains("zero"));
}

#[test]
fn differing_parameters_are_named() {
    let b = base(10);
    let base_run = run(&b, true);
    let mut other = run(&b, true);
    let params = &mut other.benchmarks[0].params;
    let first = params.keys().next().unwrap().clone();
    params.insert(
        first.clone(),
        warpt_model::ParamValue::from("something else"),
    );
    params.insert("added".into(), warpt_model::ParamValue::Bool(true));
    let c = judge(&base_run, &other, &NoNoise);
    let w = c.warnings.join("\n");
    assert!(
        w.contains(&format!("parameters differ ({first}, added)")),
        "{w}"
    );
    assert!(
        !judge(&base_run, &run(&b, true), &NoNoise)
            .warnings
            .iter()
            .any(|w| w.contains("parameters differ"))
    );
    // Two runs of the same sweep (threads=1 and threads=2 of one
    // benchmark): each point has its counterpart, nothing differs.
    let sweep = |points: &[i64]| {
        let mut r = run(&b, true);
        let one = r.benchmarks[0].clone();
        r.benchmarks = points
            .iter()
            .map(|&t| {
                let mut p = one.clone();
                p.params
                    .insert("threads".into(), warpt_model::ParamValue::Int(t));
                p
            })
            .collect();
        r
    };
    let differs = |a: &[i64], b: &[i64]| {
        judge(&sweep(a), &sweep(b), &NoNoise)
            .warnings
            .into_iter()
            .filter(|w| w.contains("parameters differ"))
            .collect::<Vec<_>>()
    };
    assert!(differs(&[1, 2], &[1, 2]).is_empty());
    // A point the base never ran is named.
    let moved = differs(&[1, 2], &[1, 4]);
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert!(
        moved[0].contains("parameters differ (threads)"),
        "{moved:?}"
    );
}

#[test]
fn across_trials_the_change_is_the_hodges_lehmann_estimate() {
    // Times (lower is better): each side has trials in a slow mode 10%
    // above its fast one, the current side in both modes 2% slower, but
    // with three of five trials slow where the base had two. The medians
    // of the trials (1.00 and 1.12) say 12%; every pair within a mode says
    // 2%, and so does the estimate.
    let a = trials(&[1.00, 1.00, 1.00, 1.10, 1.10], false);
    let b = trials(&[1.02, 1.02, 1.122, 1.122, 1.122], false);
    let c = judge(&a, &b, &NoNoise);
    let m = &c.metrics[0];
    assert!(
        (m.current.median / m.base.median - 1.12).abs() < 0.01,
        "{m:?}"
    );
    assert!((m.change_pct - 2.0).abs() < 0.1, "{m:?}");
    assert!((m.speedup - 1.0 / 1.02).abs() < 0.001, "{m:?}");
}

/// A stored profile of 5 runs at 2%.
struct Profiled;

impl NoiseLookup for Profiled {
    fn noise(&self, _: &warpt_report::compare::noise::MetricRef<'_>) -> Option<Noise> {
        Some(Noise {
            cv: 0.02,
            source: NoiseSource::Profile,
            runs: 5,
            pooled_trials: 0,
        })
    }
}

#[test]
fn quiet_trials_narrow_a_profile_band_and_say_so() {
    let a = trials(&[100.0, 100.1, 99.9, 100.0, 100.05], true);
    let slow = trials(&[97.0, 97.1, 96.9, 97.0, 97.05], true);
    let c = judge(&a, &slow, &Profiled);
    let m = &c.metrics[0];
    assert_eq!(m.noise_pooled_trials, 10, "{m:?}");
    // The profile alone: 4 x 2% x u(5) / sqrt(5) = 6.9%, past the 3% drop.
    // Pooled with ten quiet trials the band is under 3%, and it is caught.
    assert!(m.noise_band_pct.unwrap() < 3.0, "{m:?}");
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    let text = warpt_report::render::text(&c);
    assert!(
        text.contains("spread of 1 metrics pooled with their compared trials' own"),
        "{text}"
    );
    // One run a side: nothing to pool.
    let one = judge(&run(&base(30), true), &run(&base(30), true), &Profiled);
    assert_eq!(one.metrics[0].noise_pooled_trials, 0);
}

#[test]
fn across_trials_no_change_is_an_equivalence_test_at_five_percent() {
    // Six interleaved rounds whose per-round changes scatter ±1% around
    // +0.24%: the 95% CI of the change reaches past the 1% band, the 90%
    // CI (the two one-sided tests, each at 5%) stays inside it: `~`.
    let drift = [100.0, 110.0, 95.0, 105.0, 90.0, 102.0];
    let changes = [0.0061, -0.0034, 0.0119, 0.0024, -0.0070, 0.0083];
    let slowed = |scale: f64| -> Vec<f64> {
        drift
            .iter()
            .zip(changes)
            .map(|(d, c)| d * (1.0 + c * scale))
            .collect()
    };
    let paired = Options {
        pairing: warpt_report::compare::Pairing::Rounds,
        ..Options::default()
    };
    let a = trials(&drift, false);
    let c = compare(
        &a,
        "a",
        &trials(&slowed(1.0), false),
        "b",
        &paired,
        &trusting(),
    );
    let m = &c.metrics[0];
    assert_eq!(m.band_pct, 1.0, "{m:?}");
    let (_, hi) = m.ratio_ci95.unwrap();
    assert!((hi - 1.0) * 100.0 > m.band_pct, "{m:?}");
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    // Twice the scatter: even the 90% CI reaches past the band.
    let c = compare(
        &a,
        "a",
        &trials(&slowed(2.0), false),
        "b",
        &paired,
        &trusting(),
    );
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Inconclusive, "{m:?}");
    let reason = m.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("too noisy to tell: the trials' 90% CI"),
        "{reason}"
    );
}
