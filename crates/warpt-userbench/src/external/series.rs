//! How a calibrated series' samples are asked of the adapter: through a
//! shared file ([`Sharing`]) where the adapter shares its samples, else by
//! `run` requests sent ahead of the one under way; and how the series ends.

use std::time::Duration;

use crate::batch::{self, Calibrated};
use crate::driver::{Driver, DriverError, Timed};
use crate::sampling::Sampling;

use super::FileRun;
use super::sharing::Sharing;

/// Samples a shared file's ring holds (16 bytes each): warpt reads them
/// far more often than the adapter could fill it.
pub(super) const SHARED_RING: usize = 4096;

/// Longest batch a sample of a shared series times: 1 ms. Batches are
/// long where a request goes between every few of them; a shared series
/// sends none (the adapter's bookkeeping between two batches is about a
/// microsecond, outside their timed region), and the median of short
/// batches leaves out interference that comes and goes where each 10 ms
/// batch would carry its share of it. A call of 1 ms or more is a sample
/// on its own, as in pytest-benchmark's rounds.
pub(super) const SHARED_BATCH_NS: u64 = 1_000_000;

/// The calibrated batch for batches of `target_ns`: in the shared series
/// where the adapter shares its samples (`sharing`: under way since
/// `prepare`, or started here; without a file, a warning and requests),
/// of at most [`SHARED_BATCH_NS`], else by a request per batch size tried.
/// On an error a shared series is told to stop.
pub(super) fn calibrate(
    driver: &mut Driver,
    sharing: &mut Option<Sharing>,
    target_ns: u64,
    warnings: &mut Vec<String>,
) -> Result<Calibrated, DriverError> {
    if sharing.is_none() && driver.shares_samples() {
        match Sharing::new(SHARED_RING) {
            Ok(s) => *sharing = Some(s),
            Err(e) => warnings.push(format!(
                "no file to share the samples through ({e}): measured with a request every few \
                 samples"
            )),
        }
    }
    let found = match sharing.as_mut() {
        Some(s) => s.calibrate(driver, target_ns.min(SHARED_BATCH_NS)),
        None => batch::calibrate(target_ns, |calls| driver.warm(calls)),
    };
    if found.is_err()
        && let Some(s) = sharing
    {
        s.halt();
    }
    found
}

/// The series has stopped: a shared series' adapter stops after the
/// batch under way, and a test's output, validation and the connection's
/// end go behind whatever runs are under way, so pytest finds them queued
/// when its last run is done (should the write fail, `output` asks again
/// and reports why).
pub(super) fn end_series(sharing: Option<&Sharing>, driver: &mut Driver, run: &FileRun) {
    // Queued first, so they are there when the adapter stops.
    if run.connect.is_some() {
        let _ = driver.send_closing(run.output_file.as_deref(), true);
    }
    if let Some(s) = sharing {
        s.halt();
    }
}

/// The next measuring reply when the adapter takes requests sent ahead:
/// one under way and the next queued behind it, of the samples
/// `requests` says for `taken` so far (`fit(asked)`: those that fit before
/// the time cap after `asked`), read when due at the `fastest` pace seen.
pub(super) fn next_ahead(
    d: &mut Driver,
    calls: u64,
    requests: batch::Requests,
    taken: u64,
    fit: impl Fn(u64) -> u64,
    fastest: Duration,
) -> Result<Timed, DriverError> {
    if d.ahead() == 0 {
        let ask = requests.next(taken, fit(0)).max(1);
        d.send_ahead(calls, ask, true)?;
    }
    // The next request waits behind this one (unless a cap is reached).
    let ask = requests.next(taken + d.ahead(), fit(d.ahead()));
    if ask > 0 {
        d.send_ahead(calls, ask, true)?;
    }
    match d.take_ahead_due(fastest) {
        Some(t) => t,
        None => d.timed(calls, true),
    }
}

/// Sends a fixed count of rounds (pedantic) at once, of `calls` calls
/// each: its warm-up rounds (a request each, read here), the round Measure
/// discards, then the `rounds` in one request, so the adapter goes from one
/// to the next without waiting for warpt. An adapter that ignores
/// `samples` times one of them, and warpt asks again for the rest.
pub(super) fn send_rounds(
    driver: &mut Driver,
    calls: u64,
    sampling: &Sampling,
    rounds: usize,
) -> Result<(), DriverError> {
    // The speculative first run an adapter declined comes back first.
    driver.settle();
    let extra = sampling.extra_warmup_rounds();
    for _ in 0..extra {
        driver.send_ahead(calls, 1, false)?;
    }
    driver.send_ahead(calls, 1, false)?;
    driver.send_ahead(calls, rounds as u64, true)?;
    for _ in 0..extra {
        if let Some(reply) = driver.take_ahead() {
            reply?;
        }
    }
    Ok(())
}
