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
