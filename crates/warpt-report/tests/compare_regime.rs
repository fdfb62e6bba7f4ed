//! Host regimes planted in synthetic runs: on one run a side a regime the
//! probes saw widens the band by what it can explain, a change inside it
//! is `~` with the regime named, one beyond it `inconclusive` (never
//! `regressed`); unpaired trials read their trials' probes together, and
//! paired trials each round's two runs, where only a named regime counts.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;

use common::{base, judge, noise, run, trials, trusting};
use warpt_model::{BenchmarkSuiteRun, Quality, RegimeProbes};
use warpt_report::{NoNoise, Verdict};

/// `r` whose benchmark's probes read `mhz` (twice) and a 4 MiB canary at
/// `ns`, its metric measured on a 4 MiB working set.
fn in_regime(mut r: BenchmarkSuiteRun, mhz: f64, ns: f64) -> BenchmarkSuiteRun {
    let in_trials = r.trials.iter_mut().flat_map(|t| t.benchmarks.iter_mut());
    for m in in_trials.flat_map(|b| b.metrics.iter_mut()) {
        m.tags.insert("size_kib".into(), "4096".into());
    }
    for b in &mut r.benchmarks {
        for m in &mut b.metrics {
            m.tags.insert("size_kib".into(), "4096".into());
        }
        b.regime = Some(RegimeProbes {
            clock_mhz: vec![mhz, mhz],
            llc_canary: vec![warpt_model::CanaryReadings {
                size_kib: 4096,
                ns: vec![ns, ns],
            }],
            ..Default::default()
        });
    }
    r
}

/// Throughput samples around `level` (base level 100).
fn at(level: f64) -> Vec<f64> {
    (0..30).map(|i| level + noise(i + 2000)).collect()
}

#[test]
fn a_change_in_one_regime_is_judged_as_before() {
    let c = judge(
        &in_regime(run(&base(30), true), 3200.0, 18.0),
        &in_regime(run(&at(80.0), true), 3190.0, 19.0),
        &trusting(),
    );
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Regressed);
    // The probes differ by less than a regime (0.3% of clock, 5.6% of
    // canary): no regime named, and the band holds what they explain.
    assert_eq!(m.regime, None);
    let explained = ((3200.0 / 3190.0) * (19.0 / 18.0) - 1.0) * 100.0;
    assert!(
        (m.regime_shift_pct.unwrap() - explained).abs() < 1e-9,
        "{m:?}"
    );
    assert!((m.band_pct - (1.0 + explained)).abs() < 1e-9, "{m:?}");
    let text = warpt_report::render::text(&c);
    assert!(
        text.contains("bands of 1 metrics widened by what the two runs' regime probes"),
        "{text}"
    );
    // A 5% drop with the clock 4% slower in the current run: explained by
    // the probe (the reference measured during each run), `~`.
    let c = judge(
        &in_regime(run(&base(30), true), 3200.0, 18.0),
        &in_regime(run(&at(95.0), true), 3070.0, 18.0),
        &trusting(),
    );
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    assert_eq!(m.regime, None);
}

#[test]
fn a_clock_regime_widens_the_band_by_what_it_explains() {
    // 3200 against 2900 MHz: the core ran 10.3% slower in the current run.
    let b = in_regime(run(&base(30), true), 3200.0, 18.0);
    let slow_clock = |level| in_regime(run(&at(level), true), 2900.0, 18.0);
    let shift = (3200.0 / 2900.0 - 1.0) * 100.0;
    // An A/A whose current side the slower clock moved by 9%: `~`, the
    // band 1% + 10.3%, the regime named.
    let m = judge(&b, &slow_clock(91.0), &trusting()).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Unchanged, "{:?}", m.reason);
    assert!((m.regime_shift_pct.unwrap() - shift).abs() < 1e-9);
    assert!((m.band_pct - (1.0 + shift)).abs() < 1e-9, "{}", m.band_pct);
    let regime = m.regime.as_deref().unwrap();
    assert!(
        regime.contains("3200 MHz in the base run, 2900 MHz in the current run"),
        "{regime}"
    );
    // 20% is beyond what the clock explains, but not a regression either.
    let m = judge(&b, &slow_clock(80.0), &trusting()).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Inconclusive);
    let why = m.reason.as_deref().unwrap();
    assert!(
        why.starts_with("regime: the effective clock differs"),
        "{why}"
    );
    assert!(
        why.contains("beyond the band it widens to (±11.3%) but within 3 times that reach"),
        "{why}"
    );
    // 40% is beyond three times what the clock explains: no 10% slower
    // clock makes that, and it is judged as usual.
    let m = judge(&b, &slow_clock(60.0), &trusting()).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Regressed, "{:?}", m.reason);
    assert!(m.regime.is_some(), "{m:?}");
    // The text output says which band a regime widened.
    let c = judge(&b, &slow_clock(91.0), &trusting());
    let text = warpt_report::render::text(&c);
    assert!(
        text.contains("widened by ±10.3% for a host regime: regime: the effective clock differs"),
        "{text}"
    );
}

#[test]
fn a_cache_share_that_differs_reaches_only_the_sizes_it_covers() {
    // The 4 MiB canary at 18 against 120 ns: the current run's share of
    // the cache shrank; a 4 MiB chase can move by as much (567%).
    let b = in_regime(run(&base(30), false), 3200.0, 18.0);
    let m = judge(
        &b,
        &in_regime(run(&at(300.0), false), 3200.0, 120.0),
        &trusting(),
    )
    .metrics[0]
        .clone();
    assert_eq!(m.verdict, Verdict::Unchanged, "{:?}", m.reason);
    assert!(m.band_pct > 500.0, "{}", m.band_pct);
    assert!(
        m.regime
            .as_deref()
            .unwrap()
            .contains("the cache canary (4096 KiB chase) read 18.0 ns")
    );
    // A 64 KiB working set is not reached: the tripled latency regressed.
    let mut small = in_regime(run(&at(300.0), false), 3200.0, 120.0);
    let mut small_base = b.clone();
    for r in [&mut small, &mut small_base] {
        r.benchmarks[0].metrics[0]
            .tags
            .insert("size_kib".into(), "64".into());
    }
    let m = judge(&small_base, &small, &trusting()).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Regressed);
    assert!(m.regime.is_none());
}

#[test]
fn a_swing_within_a_run_widens_the_band_and_other_unreliable_conditions_still_hold_back() {
    // The current run's clock swung 9% while measuring: its quality says
    // unreliable for that regime alone.
    let swung = |steal: Option<Option<f64>>| {
        let mut r = in_regime(run(&at(95.0), true), 3200.0, 18.0);
        let b = &mut r.benchmarks[0];
        b.regime.as_mut().unwrap().clock_mhz = vec![3200.0, 2930.0];
        b.measurement_quality = Some(Quality::Unreliable);
        if let Some(share) = steal {
            b.quality_reasons
                .push("steal: the hypervisor took 14.0% of CPU time during measurement".into());
            b.interference = Some(warpt_model::Interference {
                window_s: 1.0,
                cpus: 2,
                steal_share: share,
                ..Default::default()
            });
        }
        b.quality_reasons
            .push("regime: the effective clock moved 9% while measuring (2930 to 3200 MHz)".into());
        r
    };
    let b = in_regime(run(&base(30), true), 3200.0, 18.0);
    let m = judge(&b, &swung(None), &trusting()).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Unchanged, "{:?}", m.reason);
    assert!(
        m.regime
            .as_deref()
            .unwrap()
            .starts_with("current regime: the effective clock moved 9%"),
        "{:?}",
        m.regime
    );
    assert!(
        (m.band_pct - (1.0 + 270.0 / 29.30)).abs() < 1e-9,
        "{}",
        m.band_pct
    );
    // Steal made it unreliable too: the band widens by what its share can
    // explain besides (0.14 / 0.86 of the figure, the base read none).
    let m = judge(&b, &swung(Some(Some(0.14))), &trusting()).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Unchanged, "{:?}", m.reason);
    assert!(
        (m.band_pct - (1.0 + 270.0 / 29.30 + 1400.0 / 86.0)).abs() < 1e-9,
        "{}",
        m.band_pct
    );
    assert!(
        m.regime.as_deref().unwrap().contains("steal: "),
        "{:?}",
        m.regime
    );
    // Steal graded without its share recorded: nothing says what it did.
    let m = judge(&b, &swung(Some(None)), &trusting()).metrics[0].clone();
    assert_eq!(m.verdict, Verdict::Inconclusive);
    assert!(
        m.reason
            .as_deref()
            .unwrap()
            .starts_with("current unreliable: steal:"),
        "{:?}",
        m.reason
    );
}

/// Trials at `medians` (higher is better), trial i's probes reading a
/// clock of `mhz[i]` (twice).
fn clocked_trials(medians: &[f64], mhz: &[f64]) -> BenchmarkSuiteRun {
    let mut r = trials(medians, true);
    for (t, mhz) in r.trials.iter_mut().zip(mhz) {
        for b in &mut t.benchmarks {
            b.regime = Some(RegimeProbes {
                clock_mhz: vec![*mhz, *mhz],
                ..Default::default()
            });
        }
    }
    r
}

#[test]
fn trials_read_their_probes_unpaired_together_and_paired_round_by_round() {
    let base = [100.0, 101.0, 99.0, 100.5, 99.5];
    let slower: Vec<f64> = base.iter().map(|v| v * 0.95).collect();
    // Every current trial ran with the clock 9.4% slower (2900 against
    // 3200 MHz): the 5% drop lies inside the band that widens by it, and
    // the trials' CI too.
    let (fast, slow) = ([3200.0; 5], [2900.0; 5]);
    let c = judge(
        &clocked_trials(&base, &fast),
        &clocked_trials(&slower, &slow),
        &NoNoise,
    );
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    assert!((m.regime_shift_pct.unwrap() - (3200.0 / 2900.0 - 1.0) * 100.0).abs() < 1e-9);
    assert!(m.regime.as_deref().unwrap().contains("clock"), "{m:?}");
    // One current trial's clock moved (the side's readings span 2900 to
    // 3200 MHz): the band widens by that swing as it would within a run.
    let mixed = [3200.0, 3200.0, 2900.0, 3200.0, 3200.0];
    let c = judge(
        &clocked_trials(&base, &fast),
        &clocked_trials(&slower, &mixed),
        &NoNoise,
    );
    let m = &c.metrics[0];
    assert!(m.regime_shift_pct.unwrap() > 10.0, "{m:?}");
    assert_eq!(m.verdict, Verdict::Unchanged, "{m:?}");
    // A 20% drop lies beyond that band: the trials' test judges it, the
    // regime named beside the verdict.
    let much: Vec<f64> = base.iter().map(|v| v * 0.8).collect();
    let c = judge(
        &clocked_trials(&base, &fast),
        &clocked_trials(&much, &slow),
        &NoNoise,
    );
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    assert!(m.regime.is_some() && m.band_pct < 20.0, "{m:?}");
    // Paired rounds: the clock moved from round to round, but each round's
    // two runs shared it; the pairing cancels that, and the steady 5% is a
    // regression.
    let paired = warpt_report::Options {
        pairing: warpt_report::compare::Pairing::Rounds,
        ..warpt_report::Options::default()
    };
    let drifting = [3200.0, 2900.0, 3200.0, 2900.0, 3200.0];
    let pair = |b: &[f64], c: &[f64]| {
        warpt_report::compare(
            &clocked_trials(&base, b),
            "a",
            &clocked_trials(&slower, c),
            "b",
            &paired,
            &NoNoise,
        )
    };
    let c = pair(&drifting, &drifting);
    let m = &c.metrics[0];
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    assert!(m.regime.is_none() && m.regime_shift_pct.is_none());
    // Round 3's runs read different clocks, yet its ratio is every other
    // round's: the regime did not reach the metric, and the steady 5% is
    // still a regression, the regime named beside it.
    let c = pair(&fast, &mixed);
    let m = &c.metrics[0];
    assert!(
        m.regime.as_deref().unwrap().starts_with("round 3: "),
        "{m:?}"
    );
    assert!(m.regime_shift_pct.unwrap().abs() < 1e-9, "{m:?}");
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    // Where round 3's current run was slower by what its clock explains,
    // the regime widens the band by that round's departure from the
    // others (8.7%, under the 10.3% the clocks could explain), and the
    // 5% is `~` within it.
    let mut dipped = slower.clone();
    dipped[2] *= 2900.0 / 3200.0;
    let c = warpt_report::compare(
        &clocked_trials(&base, &fast),
        "a",
        &clocked_trials(&dipped, &mixed),
        "b",
        &paired,
        &NoNoise,
    );
    let m = &c.metrics[0];
    let shift = m.regime_shift_pct.unwrap();
    assert!(
        shift > 5.0 && shift < (3200.0 / 2900.0 - 1.0) * 100.0,
        "{m:?}"
    );
    assert_ne!(m.verdict, Verdict::Regressed, "{m:?}");
    // Unpaired trials without probes are judged as before.
    let c = judge(&trials(&base, true), &trials(&slower, true), &NoNoise);
    assert_eq!(c.metrics[0].verdict, Verdict::Regressed);
}
