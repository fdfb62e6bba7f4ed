//! The sampling loop's tests: stopping reasons, warm-up, failing samples.

use super::*;
use crate::progress::NoProgress;

fn policy(min_ms: u64, max_ms: u64, max_samples: usize) -> MeasurePolicy {
    MeasurePolicy {
        warmup: Duration::ZERO,
        min_time: Duration::from_millis(min_ms),
        max_time: Duration::from_millis(max_ms),
        target_rel_ci: 0.01,
        min_samples: 10,
        max_samples,
    }
}

fn defs(n: usize) -> Vec<SeriesDef> {
    (0..n)
        .map(|i| {
            SeriesDef::new(
                "rate",
                "op/s",
                true,
                &[("i", i.to_string())],
                Convert::Rate(8.0),
            )
        })
        .collect()
}

#[test]
fn constant_samples_meet_the_target_after_min_time() {
    let mut m = Measure::new(&NoProgress);
    let mut calls = 0;
    let r = m.run(&policy(20, 10_000, 1_000_000), "const", &defs(2), |out| {
        calls += 1;
        std::thread::sleep(Duration::from_micros(200));
        out[0] = 1.0;
        out[1] = 2.0;
    });
    assert_eq!(r.stop_reason, StopReason::TargetMet);
    assert!(r.elapsed >= Duration::from_millis(20));
    assert_eq!(r.metrics.len(), 2);
    assert_eq!((r.metrics[0].value, r.metrics[1].value), (8.0, 4.0));
    assert_eq!(
        r.warmup_samples, 1,
        "one warm-up sample is always discarded"
    );
    assert_eq!(calls, r.metrics[0].stats.as_ref().unwrap().n + 1);
    assert_eq!(m.stop_reason(), Some(StopReason::TargetMet));
}

#[test]
fn a_sample_longer_than_the_share_is_taken_once_and_said() {
    let mut m = Measure::new(&NoProgress);
    let slow = |out: &mut [f64]| {
        std::thread::sleep(Duration::from_millis(5));
        out[0] = 0.005;
    };
    let r = m.run(&policy(0, 1, 1_000_000), "slow", &defs(1), slow);
    assert_eq!(r.stop_reason, StopReason::TimeCap);
    assert_eq!(r.metrics[0].stats.as_ref().unwrap().n, 1);
    let notes = m.take_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("'slow': one sample took"), "{notes:?}");
    // A series that fits its share says nothing.
    m.run(&policy(0, 10_000, 20), "quick", &defs(1), |out| {
        out[0] = 1.0
    });
    assert!(m.take_notes().is_empty());
}

#[test]
fn value_series_take_zero_and_negative_numbers_as_they_are() {
    let mut m = Measure::new(&NoProgress);
    let defs = [
        SeriesDef::new("errors", "count", false, &[], Convert::Value),
        SeriesDef::new("delta", "K", true, &[], Convert::Value),
    ];
    let r = m.run(&policy(5, 10_000, 1_000_000), "values", &defs, |out| {
        out[0] = 0.0;
        out[1] = -2.5;
    });
    assert_eq!(r.stop_reason, StopReason::TargetMet);
    assert_eq!((r.metrics[0].value, r.metrics[1].value), (0.0, -2.5));
}

#[test]
fn noisy_samples_hit_the_sample_cap_or_the_time_cap() {
    // Alternating 1 and 3: the median's CI never narrows to 1%.
    let mut m = Measure::new(&NoProgress);
    let mut i = 0u64;
    let mut noisy = |out: &mut [f64]| {
        i += 1;
        out[0] = if i.is_multiple_of(2) { 1.0 } else { 3.0 };
    };
    let r = m.run(&policy(0, 60_000, 500), "noisy", &defs(1), &mut noisy);
    assert_eq!(r.stop_reason, StopReason::SampleCap);
    assert_eq!(r.metrics[0].stats.as_ref().unwrap().n, 500);
    let r = m.run(&policy(0, 30, usize::MAX), "noisy", &defs(1), |out| {
        std::thread::sleep(Duration::from_micros(100));
        noisy(out)
    });
    assert_eq!(r.stop_reason, StopReason::TimeCap);
    assert!(r.elapsed >= Duration::from_millis(30));
    assert_eq!(
        m.stop_reason(),
        Some(StopReason::TimeCap),
        "worst reason is kept"
    );
}

#[test]
fn a_failing_sample_stops_sampling_and_keeps_the_samples_before_it() {
    let mut m = Measure::new(&NoProgress);
    let mut calls = 0;
    let (r, err) = m.run_fallible(
        &policy(10_000, 20_000, 1_000_000),
        "fails",
        &defs(1),
        |out| {
            calls += 1;
            if calls == 26 {
                return Err("raised at call 26");
            }
            out[0] = 1.0 + (calls % 3) as f64;
            Ok(())
        },
    );
    assert_eq!(err, Some("raised at call 26"));
    assert_eq!(r.stop_reason, StopReason::Error);
    // One warm-up sample, 24 measured, the 26th failed and is not kept.
    assert_eq!(r.metrics[0].stats.as_ref().unwrap().n, 24);
    assert_eq!(m.stop_reason(), Some(StopReason::Error));
    let mut m = Measure::new(&NoProgress);
    let (r, err) = m.run_fallible(&policy(10, 20, 100), "at once", &defs(1), |_| Err(()));
    assert_eq!(err, Some(()));
    assert!(r.metrics[0].stats.is_none() && r.metrics[0].value.is_nan());
}

#[test]
fn samples_under_way_at_the_stop_count_unless_the_sample_cap_stopped_it() {
    // Constant samples meet the target at 10 (the fewest); two more were
    // under way then: they are kept.
    let mut m = Measure::new(&NoProgress);
    let mut ahead = 2;
    let (r, err) = m.run_fallible_ahead(
        &policy(0, 10_000, 1_000),
        "ahead",
        &defs(1),
        |out| -> Result<(), ()> {
            out[0] = 1.0;
            Ok(())
        },
        |out| {
            (ahead > 0).then(|| {
                ahead -= 1;
                out[0] = 1.0;
                Ok(())
            })
        },
    );
    assert_eq!((r.stop_reason, err), (StopReason::TargetMet, None));
    assert_eq!(r.metrics[0].stats.as_ref().unwrap().n, 12);
    assert_eq!(ahead, 0);
    // An error in one under way fails the measurement, keeping the rest.
    let (r, err) = m.run_fallible_ahead(
        &policy(0, 10_000, 1_000),
        "ahead fails",
        &defs(1),
        |out| {
            out[0] = 1.0;
            Ok(())
        },
        |_| Some(Err("raised under way")),
    );
    assert_eq!(err, Some("raised under way"));
    assert_eq!(r.metrics[0].stats.as_ref().unwrap().n, 10);
    // At the sample cap nothing more is taken.
    let mut asked = false;
    let (r, _) = m.run_fallible_ahead(
        &policy(0, 60_000, 20),
        "capped",
        &defs(1),
        |out| -> Result<(), ()> {
            out[0] = if asked { 1.0 } else { 3.0 };
            asked = !asked;
            Ok(())
        },
        |_| panic!("taken past the sample cap"),
    );
    assert_eq!(r.stop_reason, StopReason::SampleCap);
    assert_eq!(r.metrics[0].stats.as_ref().unwrap().n, 20);
}

#[test]
fn a_stop_flag_ends_sampling_early() {
    let flag = AtomicBool::new(false);
    let mut m = Measure::new(&NoProgress).with_stop_flag(&flag);
    let mut n = 0;
    let r = m.run(
        &policy(60_000, 120_000, usize::MAX),
        "stop",
        &defs(1),
        |out| {
            n += 1;
            if n == 5 {
                flag.store(true, Ordering::Relaxed);
            }
            out[0] = 1.0;
        },
    );
    assert_eq!(r.stop_reason, StopReason::TimeCap);
    assert!(r.metrics[0].stats.as_ref().unwrap().n <= 5);
}

#[test]
fn conversions_and_metrics() {
    assert_eq!(Convert::Rate(8.0).apply(2.0), 4.0);
    assert_eq!(Convert::Time(1e9).apply(2e-9), 2.0);
    let def = SeriesDef::new("lat", "ns", false, &[("k", "v".into())], Convert::Time(1.0));
    let m = def.metric(&[1.0, 2.0, 4.0], Some(StopReason::TimeCap));
    assert_eq!(m.value, 2.0);
    let st = m.stats.unwrap();
    assert_eq!(st.samples, vec![1.0, 2.0, 4.0]);
    assert_eq!(st.stop_reason, Some(StopReason::TimeCap));
    assert_eq!(m.tags.get("k").map(String::as_str), Some("v"));
}

#[test]
fn externally_timed_samples_skip_the_warmup_rows() {
    let mut m = Measure::new(&NoProgress);
    let rows = vec![vec![4.0], vec![1.0], vec![2.0], vec![4.0]];
    let r = m.record(&defs(1), &rows, 1, Duration::from_secs(11));
    let st = r.metrics[0].stats.as_ref().unwrap();
    assert_eq!(st.n, 3, "the warm-up row is dropped");
    assert_eq!(r.metrics[0].value, 4.0, "median of 8, 4, 2");
    assert_eq!(r.stop_reason, StopReason::SampleCap);
    assert_eq!(
        (r.warmup_samples, m.measure_time()),
        (1, Duration::from_secs(11))
    );
}
