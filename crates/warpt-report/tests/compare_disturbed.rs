//! Sides the host disturbed: unreliable conditions hold back a verdict
//! from one run or unpaired trials a side, not one from paired rounds.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::{BenchmarkSuiteRun, Quality, RunStatus};
use warpt_report::{NoNoise, Options, Verdict, compare};

mod common;
use common::{base, judge, noise, run, trials_as, trusting};

const STEAL: &str =
    "steal: the hypervisor took 12.6% of CPU time during measurement (1.2 s window)";

#[test]
fn an_unreliable_or_failed_side_is_inconclusive_whatever_the_change() {
    let b = base(30);
    let down: Vec<f64> = (0..30).map(|i| 80.0 + noise(i + 2000)).collect();
    let mut cur = run(&down, true);
    cur.benchmarks[0].quality = Some(Quality::Unreliable);
    cur.benchmarks[0]
        .quality_reasons
        .push("foreign_cpu: other processes used 48% of the 2 CPUs".into());
    let c = judge(&run(&b, true), &cur, &trusting());
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Inconclusive);
    assert_eq!(
        m.reason.as_deref(),
        Some("current unreliable: foreign_cpu: other processes used 48% of the 2 CPUs")
    );
    // A figure both sides read exactly alike (a computed error of zero):
    // whatever disturbed the host did not move it.
    let mut exact = run(&b, true);
    let m = &mut exact.benchmarks[0].metrics[0];
    (m.value, m.stats) = (0.0, None);
    let mut disturbed = exact.clone();
    disturbed.benchmarks[0] = cur.benchmarks[0].clone();
    disturbed.benchmarks[0].metrics = exact.benchmarks[0].metrics.clone();
    let m = &judge(&exact, &disturbed, &trusting()).metrics[0];
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    let mut old = run(&b, true);
    old.benchmarks[0].set_status(RunStatus::Failed);
    old.benchmarks[0].error_message = Some("validation failed".into());
    let c = judge(&old, &run(&down, true), &trusting());
    assert!(
        c.metrics[0]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("base failed: validation failed"),
        "{:?}",
        c.metrics[0].reason
    );
}

/// Trials at `medians` (lower is better), every one of them graded
/// unreliable for steal, as a cloud host with steady steal grades them.
fn stolen_trials(medians: &[f64]) -> BenchmarkSuiteRun {
    trials_as(medians, false, |r| {
        let b = &mut r.benchmarks[0];
        b.quality = Some(Quality::Unreliable);
        b.measurement_quality = Some(Quality::Unreliable);
        b.quality_reasons.push(STEAL.into());
    })
}

#[test]
fn paired_rounds_are_judged_by_their_ratios_on_a_host_that_disturbs_every_trial() {
    let drift = [100.0, 104.0, 98.0, 102.0, 99.0];
    let a = stolen_trials(&drift);
    assert!(
        a.benchmarks[0].quality_reasons[0]
            .starts_with("only 0 of 5 trials were undisturbed (trial 1: steal: "),
        "{:?}",
        a.benchmarks[0].quality_reasons
    );
    let paired = Options {
        pairing: warpt_report::compare::Pairing::Rounds,
        ..Options::default()
    };
    // Unchanged: no change, though no trial was undisturbed.
    let same = stolen_trials(&drift.map(|d| d * 1.001));
    let m = compare(&a, "base", &same, "current", &paired, &NoNoise).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    assert_eq!(m.reason, None);
    // Twice as slow: a regression.
    let slow = stolen_trials(&drift.map(|d| d * 2.0));
    let m = compare(&a, "base", &slow, "current", &paired, &NoNoise).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    // The same trials unpaired (separate runs): steal may have hit one
    // side's runs and not the other's, so no verdict.
    let m = compare(&a, "base", &slow, "current", &Options::default(), &NoNoise).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Inconclusive, "{m:?}");
    assert!(
        m.reason
            .as_deref()
            .unwrap()
            .starts_with("base unreliable: only 0 of 5 trials were undisturbed (trial 1: steal:"),
        "{m:?}"
    );
    // A round one side's burst moved widens the band past a small change.
    let mut burst = drift.map(|d| d * 1.02);
    burst[2] *= 1.6;
    let m = compare(
        &a,
        "base",
        &stolen_trials(&burst),
        "current",
        &paired,
        &NoNoise,
    )
    .metrics[0]
        .clone();
    assert_ne!(m.verdict, Verdict::Regressed, "{m:?}");
    assert!(m.band_pct > 5.0, "{m:?}");
}

/// One run at `level` (lower is better) whose measurement the hypervisor
/// stole `share` of, graded unreliable for it when past 10%.
fn stolen_run(level: f64, share: f64) -> BenchmarkSuiteRun {
    let samples: Vec<f64> = (0..30).map(|i| level + noise(i + 3000)).collect();
    let mut r = run(&samples, false);
    let b = &mut r.benchmarks[0];
    b.interference = Some(warpt_model::Interference {
        window_s: 0.9,
        cpus: 2,
        steal_share: Some(share),
        ..Default::default()
    });
    if share > 0.10 {
        b.quality = Some(Quality::Unreliable);
        b.measurement_quality = Some(Quality::Unreliable);
        b.quality_reasons.push(format!(
            "steal: the hypervisor took {:.1}% of CPU time during measurement (0.9 s window)",
            share * 100.0
        ));
    }
    r
}

#[test]
fn one_run_a_side_weighs_the_difference_in_steal_not_the_grade() {
    // A cloud guest's steady steal (11.4% both sides, as CI's runner read)
    // slowed both runs alike: a 1.5x slower test is a regression.
    let opts = Options {
        threshold_pct: 10.0,
        ..Options::default()
    };
    let stated = warpt_report::AssumedNoise(0.02);
    let judged = |b: &BenchmarkSuiteRun, c: &BenchmarkSuiteRun| {
        compare(b, "base", c, "current", &opts, &stated).metrics[0].clone()
    };
    let m = judged(&stolen_run(100.0, 0.114), &stolen_run(150.0, 0.114));
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    assert_eq!(m.regime_shift_pct, Some(0.0));
    // Steal on the current side only: 0.134 / 0.866 = 15.5% of the figure
    // widens the band (10% + 15.5%); a change of +30% lies beyond it but
    // within three times the reach (10% + 46.4%), so no verdict ...
    let m = judged(&stolen_run(100.0, 0.0), &stolen_run(130.0, 0.134));
    assert_eq!(m.verdict, Verdict::Inconclusive, "{m:?}");
    let why = m.reason.as_deref().unwrap();
    assert!(
        why.starts_with("steal: the hypervisor took 0.0% of CPU time while the base"),
        "{why}"
    );
    // ... a change of +12% lies inside it: `~` ...
    let m = judged(&stolen_run(100.0, 0.0), &stolen_run(112.0, 0.134));
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    // ... and +60% is beyond what that steal can explain.
    let m = judged(&stolen_run(100.0, 0.0), &stolen_run(160.0, 0.134));
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    // Steal the base saw more of cannot make the current side look worse:
    // the band widens by it (a change it hid), the verdict is not held.
    let m = judged(&stolen_run(100.0, 0.134), &stolen_run(130.0, 0.0));
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    assert!((m.band_pct - (10.0 + 1340.0 / 86.6)).abs() < 1e-9, "{m:?}");
    // Another disturbance graded first still holds the verdict back.
    let mut busy = stolen_run(160.0, 0.134);
    busy.benchmarks[0].quality_reasons.insert(
        0,
        "foreign_cpu: other processes used 48% of the 2 CPUs".into(),
    );
    let m = judged(&stolen_run(100.0, 0.0), &busy);
    assert_eq!(m.verdict, Verdict::Inconclusive, "{m:?}");
    assert!(
        m.reason
            .as_deref()
            .unwrap()
            .starts_with("current unreliable: foreign_cpu")
    );
}
