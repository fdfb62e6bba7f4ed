//! How many calls one request to the adapter holds.
//!
//! A call of a small function can take less than the clock's resolution,
//! so one sample times a batch of calls, grown until the batch takes at
//! least [`batch_ns`] ([`calibrate`]; `timeit` does the same by doubling).
//! Every request is a round trip between two processes that have each
//! been idle while the other worked (about 0.15 ms on a 2-vCPU KVM guest),
//! so calibration jumps towards its target rather than doubling, and the
//! warm-up runs in requests of many batches ([`Calibrated::warmup_calls`])
//! instead of one request per batch.

use std::time::Duration;

/// Shortest batch one sample times: 10 ms, so the clock's resolution, the
/// adapter's loop and the disturbance of the request between batches
/// (caches, branch predictors, a sleeping CPU waking) are a small part of
/// every sample, while a 2 s measurement still holds ~200 samples for the
/// stopping rule. `timeit` times 0.2 s batches and takes no median.
pub const MIN_BATCH_NS: u64 = 10_000_000;

/// Most calls in one sample's batch.
pub const MAX_CALLS: u64 = 1 << 24;

/// Most batches one warm-up request holds (about 0.25 s of 10 ms batches):
/// an interrupt or a stage's time limit is noticed between requests.
const MAX_WARMUP_BATCHES: u64 = 25;

/// Most samples one measuring request holds (0.25 s of 10 ms batches; of
/// longer ones, fewer: [`samples_per_request`]): as for the warm-up, an
/// interrupt is noticed between requests.
pub const MAX_SAMPLES_PER_REQUEST: u64 = 25;

/// Most a calibration step grows the batch by: a first call much faster
/// than the rest (or a clock reading of nearly nothing) must not make the
/// next batch absurdly long.
const MAX_GROWTH: f64 = 100.0;

/// The batch a sample times for a measurement of `duration`:
/// [`MIN_BATCH_NS`], or a twentieth of a shorter measurement (at least
/// 1 ms, still a thousand times a request's round trip), so the stopping
/// rule's ten samples fit in it.
pub fn batch_ns(duration: Duration) -> u64 {
    let share = (duration.as_nanos() / 20).min(u128::from(MIN_BATCH_NS)) as u64;
    share.max(1_000_000)
}

/// A calibrated batch: its calls and what the last calibration batch of
/// that many calls took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibrated {
    /// Calls per sample.
    pub calls: u64,
    /// Nanoseconds the batch took when calibrated.
    pub ns: u64,
}

impl Calibrated {
    /// Calls for one warm-up request with `left` of the warm-up to go: as
    /// many whole batches as fit (at least one, at most
    /// [`MAX_WARMUP_BATCHES`]), so the warm-up is one or two requests
    /// rather than one per batch.
    pub fn warmup_calls(&self, left: Duration) -> u64 {
        let batches = (left.as_nanos() / u128::from(self.ns.max(1))) as u64;
        self.calls
            .saturating_mul(batches.clamp(1, MAX_WARMUP_BATCHES))
            .min(MAX_CALLS)
    }
}

/// Most samples of `batch_ns` one request may hold: about 0.25 s of them
/// ([`MAX_SAMPLES_PER_REQUEST`] of 10 ms batches), at least one.
pub fn samples_per_request(batch_ns: u64) -> u64 {
    (250_000_000 / batch_ns.max(1)).clamp(1, MAX_SAMPLES_PER_REQUEST)
}

/// Samples of a series the stopping rule cannot stop short of: it stops no
/// sooner than `min_samples` samples and `min_time` of measuring, and a
/// batch that took `batch_ns` when calibrated may run up to a quarter
/// slower (so fewer of them fill `min_time`). That many samples can be
/// asked for in few requests without timing one the rule would not take.
pub fn sure_samples(min_time: Duration, min_samples: usize, batch_ns: u64) -> u64 {
    let slow_batch = batch_ns.max(1) as f64 * 1.25;
    let by_time = (min_time.as_nanos() as f64 / slow_batch).floor() as u64;
    by_time.max(min_samples as u64)
}

/// Past the samples the rule surely takes, a measuring request holds this
/// many'th part of the samples taken or asked for: a long series costs few
/// replies, and with a request under way and one queued behind it, at most
/// about a quarter more samples than the rule wanted are timed (they count).
const SHARE_OF_PLANNED: u64 = 8;

/// How many samples each measuring request of a series holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requests {
    /// Samples the stopping rule surely takes ([`sure_samples`]).
    pub sure: u64,
    /// Most samples one request holds ([`samples_per_request`]).
    pub most: u64,
    /// The series' sample cap.
    pub cap: u64,
}

impl Requests {
    /// Samples for the next request with `planned` samples taken or asked
    /// for and room for `fit` more before the series' time cap: the sure
    /// ones not yet asked for, then an eighth of those planned (at least
    /// one), never past the sample cap or the time cap (0: ask no more).
    pub fn next(&self, planned: u64, fit: u64) -> u64 {
        let want = if planned < self.sure {
            self.sure - planned
        } else {
            (planned / SHARE_OF_PLANNED).max(1)
        };
        want.min(self.most)
            .min(fit)
            .min(self.cap.saturating_sub(planned))
    }
}

/// The next batch to try after `calls` calls took `ns`, short of
/// `target_ns`: grown by the estimate of what reaches the target, plus a
/// tenth so the next batch likely does, at least doubled, at most
/// [`MAX_GROWTH`] times.
pub fn next_calls(calls: u64, ns: u64, target_ns: u64) -> u64 {
    let growth = if ns == 0 {
        MAX_GROWTH
    } else {
        (target_ns as f64 / ns as f64 * 1.1).clamp(2.0, MAX_GROWTH)
    };
    ((calls as f64 * growth).ceil() as u64).min(MAX_CALLS)
}

/// The smallest batch found of at least `target_ns`, timing batches with
/// `time` (calls → ns), starting from one call.
pub fn calibrate<E>(
    target_ns: u64,
    mut time: impl FnMut(u64) -> Result<u64, E>,
) -> Result<Calibrated, E> {
    let mut calls = 1u64;
    loop {
        let ns = time(calls)?;
        if ns >= target_ns || calls >= MAX_CALLS {
            return Ok(Calibrated { calls, ns });
        }
        calls = next_calls(calls, ns, target_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_measurement_times_shorter_batches() {
        let ms = |v: u64| Duration::from_millis(v);
        assert_eq!(batch_ns(ms(2000)), MIN_BATCH_NS);
        assert_eq!(batch_ns(ms(200)), MIN_BATCH_NS);
        assert_eq!(batch_ns(ms(50)), 2_500_000);
        assert_eq!(batch_ns(ms(1)), 1_000_000);
    }

    #[test]
    fn calibration_jumps_to_the_target_in_few_requests() {
        // A 40 us call: 1 call, then 100 (the growth cap), then one batch
        // past 10 ms.
        let mut asked = Vec::new();
        let c = calibrate::<()>(MIN_BATCH_NS, |calls| {
            asked.push(calls);
            Ok(calls * 40_000)
        })
        .unwrap();
        assert_eq!(asked, vec![1, 100, 275]);
        assert_eq!(
            c,
            Calibrated {
                calls: 275,
                ns: 11_000_000
            }
        );
        // A slow call is one batch.
        let c = calibrate::<()>(MIN_BATCH_NS, |_| Ok(50_000_000)).unwrap();
        assert_eq!(c.calls, 1);
        // A clock that reads nothing still ends, at the cap.
        let c = calibrate::<()>(MIN_BATCH_NS, |_| Ok(0)).unwrap();
        assert_eq!(c.calls, MAX_CALLS);
        // A batch never shrinks and at least doubles.
        assert_eq!(next_calls(10, 9_999_999, MIN_BATCH_NS), 20);
        // Errors stop it.
        assert_eq!(calibrate(MIN_BATCH_NS, |_| Err("gone")), Err("gone"));
    }

    #[test]
    fn the_samples_a_series_surely_takes() {
        let ms = |v: u64| Duration::from_millis(v);
        // 0.2 s of 10 ms batches: 16 even if they run 25% slower.
        assert_eq!(sure_samples(ms(200), 10, 10_000_000), 16);
        // The fewest samples count where the time holds fewer.
        assert_eq!(sure_samples(ms(20), 10, 10_000_000), 10);
        // A batch of nothing cannot make it infinite.
        assert_eq!(sure_samples(ms(1), 1, 0), 800_000);
        // A request holds about a quarter of a second of them.
        assert_eq!(samples_per_request(10_000_000), 25);
        assert_eq!(samples_per_request(50_000_000), 5);
        assert_eq!(samples_per_request(2_000_000_000), 1);
        assert_eq!(samples_per_request(0), 25);
    }

    #[test]
    fn requests_grow_with_the_series_within_its_caps() {
        let r = Requests {
            sure: 16,
            most: 25,
            cap: 100,
        };
        // The sure samples in one request, then an eighth of those planned.
        assert_eq!(r.next(0, 1000), 16);
        assert_eq!(r.next(10, 1000), 6);
        assert_eq!(r.next(16, 1000), 2);
        assert_eq!(r.next(4, 1000), 12);
        assert_eq!(r.next(80, 1000), 10);
        assert_eq!(r.next(96, 1000), 4);
        assert_eq!(r.next(100, 1000), 0);
        // At least one, at most a request's worth.
        let r = Requests {
            sure: 1,
            most: 25,
            cap: 10_000,
        };
        assert_eq!(r.next(3, 1000), 1);
        assert_eq!(r.next(5000, 1000), 25);
        // Nothing past the time cap or the sample cap.
        assert_eq!(r.next(80, 3), 3);
        assert_eq!(r.next(80, 0), 0);
        assert_eq!(r.next(9_995, 1000), 5);
        assert_eq!(r.next(10_000, 1000), 0);
    }

    #[test]
    fn warmup_requests_hold_the_batches_that_fit() {
        let c = Calibrated {
            calls: 256,
            ns: 10_000_000,
        };
        assert_eq!(c.warmup_calls(Duration::from_millis(100)), 2560);
        assert_eq!(c.warmup_calls(Duration::from_millis(3)), 256);
        assert_eq!(c.warmup_calls(Duration::from_secs(10)), 256 * 25);
        let huge = Calibrated {
            calls: MAX_CALLS,
            ns: 1,
        };
        assert_eq!(huge.warmup_calls(Duration::from_secs(1)), MAX_CALLS);
    }
}
