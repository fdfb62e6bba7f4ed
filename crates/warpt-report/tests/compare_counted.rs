//! Counted metrics (instructions): judged on the counts themselves, with
//! no noise band, so an A/A flags nothing and a 0.5% change of executed
//! work is caught whatever the host was doing.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_model::{BenchmarkSuiteRun, Quality};
use warpt_report::compare::MetricComparison;
use warpt_report::{NoNoise, NoiseSource, Options, Verdict, compare};

/// The example export reduced to one counted metric with three counted
/// runs of `counts`, measured under `quality`.
fn counted(counts: &[f64], quality: Quality) -> BenchmarkSuiteRun {
    let text = include_str!("../../warpt-model/tests/data/example_export.json");
    let mut run: BenchmarkSuiteRun = serde_json::from_str(text).unwrap();
    run.benchmarks.truncate(1);
    let r = &mut run.benchmarks[0];
    r.metrics.truncate(1);
    r.quality = Some(quality);
    r.measurement_quality = Some(quality);
    r.quality_reasons = match quality {
        Quality::Unreliable => vec!["steal: 14% of the CPU time stolen".into()],
        _ => vec![],
    };
    let m = &mut r.metrics[0];
    m.name = "instructions".into();
    m.unit = "instructions".into();
    m.higher_is_better = false;
    let stats = warpt_model::MetricStats::summarize(counts).unwrap();
    m.value = stats.median;
    m.stats = Some(stats);
    run
}

fn judge(base: &[f64], current: &[f64], quality: Quality) -> MetricComparison {
    let c = compare(
        &counted(base, Quality::Good),
        "base",
        &counted(current, quality),
        "current",
        &Options::default(),
        &NoNoise,
    );
    assert_eq!(c.metrics.len(), 1);
    c.metrics[0].clone()
}

#[test]
fn identical_counts_are_unchanged_even_where_the_host_was_disturbed() {
    let n = [3_471_494.0; 3];
    let m = judge(&n, &n, Quality::Unreliable);
    assert_eq!(m.verdict, Verdict::Unchanged, "{:?}", m.reason);
    assert_eq!(m.method, "counts");
    assert_eq!(m.noise_source, NoiseSource::Counts);
    assert_eq!(m.noise_cv_pct, Some(0.0));
    assert_eq!(m.band_pct, 0.1);
    assert!(
        m.p_value.is_none(),
        "no test: nothing for Benjamini-Hochberg"
    );
}

#[test]
fn half_a_percent_more_work_is_regressed_and_less_improved() {
    let n = [6_938_594.0; 3];
    let more = [6_938_594.0 * 1.005; 3];
    let less = [6_938_594.0 * 0.995; 3];
    // Without any noise profile: the counts need none.
    let m = judge(&n, &more, Quality::Noisy);
    assert_eq!(m.verdict, Verdict::Regressed);
    assert!((m.change_pct - 0.5).abs() < 1e-9);
    assert_eq!(judge(&n, &less, Quality::Good).verdict, Verdict::Improved);
    // A change inside the threshold (0.05%: the environment's size moving
    // the loader's work) is no change.
    let m = judge(&n, &[6_938_594.0 * 1.0005; 3], Quality::Good);
    assert_eq!(m.verdict, Verdict::Unchanged);
}

#[test]
fn counts_that_move_between_repeats_widen_their_own_band() {
    // A hardware counter whose repeats moved by 0.4%: a 0.5% change is
    // inside 2 x that spread, a 1% change is not.
    let base = [1_000_000.0, 1_002_000.0, 1_004_000.0];
    let m = judge(
        &base,
        &[1_007_000.0, 1_007_000.0, 1_007_000.0],
        Quality::Good,
    );
    assert!((m.band_pct - 0.8).abs() < 0.01, "{}", m.band_pct);
    assert_eq!(m.verdict, Verdict::Unchanged);
    let m = judge(&base, &[1_012_000.0; 3], Quality::Good);
    assert_eq!(m.verdict, Verdict::Regressed);
}

#[test]
fn a_counted_metric_of_a_failed_side_is_still_inconclusive() {
    let n = [1_000_000.0; 3];
    let mut current = counted(&[1_100_000.0; 3], Quality::Good);
    current.benchmarks[0].status = warpt_model::RunStatus::Failed;
    current.benchmarks[0].error_message = Some("exit status 1".into());
    let c = compare(
        &counted(&n, Quality::Good),
        "base",
        &current,
        "current",
        &Options::default(),
        &NoNoise,
    );
    assert_eq!(c.metrics[0].verdict, Verdict::Inconclusive);
    assert!(
        c.metrics[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("current failed")
    );
}

/// What a rerun adds rounds for: `inconclusive`, and `~` only inside a
/// band the trials' own spread widened past 1.5 times the threshold.
/// Counts, a decided verdict, a `~` near the threshold, one from a stored
/// spread, and a byte count that cannot move by a MiB inside its band are
/// resolved.
#[test]
fn only_verdicts_more_trials_could_sharpen_are_unresolved() {
    let n = [3_471_494.0; 3];
    let counted = judge(&n, &n, Quality::Good);
    assert!(!counted.unresolved(1.0), "counts need no more trials");
    let mut m = counted.clone();
    m.noise_source = NoiseSource::Trials;
    m.noise_band_pct = Some(3.2);
    assert!(m.unresolved(1.0), "~ within ±3.2% cannot rule out 1%");
    assert!(!m.unresolved(5.0), "~ within ±3.2% rules out 5%");
    m.noise_band_pct = Some(1.3);
    assert!(
        !m.unresolved(1.0),
        "within 1.5 times the threshold: worth no more time"
    );
    let mut bytes = m.clone();
    bytes.unit = "B".into();
    bytes.noise_band_pct = Some(3.2);
    bytes.base.median = 3.0 * 1024.0 * 1024.0;
    bytes.current.median = bytes.base.median;
    assert!(
        !bytes.unresolved(1.0),
        "±3.2% of 3 MiB is under a MiB: ~ whatever the rounds"
    );
    bytes.base.median = 100.0 * 1024.0 * 1024.0;
    assert!(bytes.unresolved(1.0), "±3.2% of 100 MiB is not");
    m.noise_source = NoiseSource::Profile;
    m.noise_band_pct = Some(3.2);
    assert!(
        !m.unresolved(1.0),
        "a stored spread: trials do not narrow it here"
    );
    m.verdict = Verdict::Inconclusive;
    assert!(m.unresolved(1.0));
    for decided in [Verdict::Regressed, Verdict::Improved] {
        m.verdict = decided;
        m.noise_band_pct = Some(30.0);
        assert!(!m.unresolved(1.0));
    }
}
