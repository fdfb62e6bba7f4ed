//! A series whose samples the adapter shares through a mapped file
//! ([`crate::shared`]): one `run` request goes on from calibration's first
//! call to the series' last sample while warpt grows the batch, then raises
//! the limit, instead of a request and a reply every few samples.

use std::time::{Duration, Instant};

use crate::batch::{self, Calibrated};
use crate::driver::{Driver, DriverError, Timed};
use crate::shared::{Lent, Sample};

/// Longest warpt sleeps between two looks at the file: it wakes at least
/// this often to see an adapter that stopped (a reply waiting).
const MAX_NAP: Duration = Duration::from_millis(20);

/// Shortest look: a sample's time or a quarter of the wait so far, at
/// least this (warpt's wake-ups are the host's work too).
const MIN_NAP: Duration = Duration::from_micros(20);

/// Most often warpt reads a measuring series' samples: the adapter never
/// waits for it (its limit stays far ahead), so reading every 1 ms sample
/// as it comes would only add wake-ups, each the host's work on a small
/// virtual machine beside the adapter's timing; the stopping rule sees a
/// few samples at a time instead.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// The series' shared file and where its request stands.
pub(super) struct Sharing {
    samples: Lent,
    /// Samples of the request under way read so far.
    read: usize,
    /// A shared request is under way (its reply unread).
    under_way: bool,
    /// When the last new sample was seen.
    last_seen: Instant,
    /// The calls of the adapter's batches (the file's word).
    calls: u64,
}

impl Sharing {
    /// A file for a ring of `capacity` samples.
    pub(super) fn new(capacity: usize) -> std::io::Result<Self> {
        Ok(Sharing {
            samples: Lent::take(capacity)?,
            read: 0,
            under_way: false,
            last_seen: Instant::now(),
            calls: 1,
        })
    }

    /// The series `samples` belongs to, sent already (one sample of one
    /// call at first: [`Driver::connect_sharing`]).
    pub(super) fn under_way(samples: Lent) -> Self {
        Sharing {
            samples,
            read: 0,
            under_way: true,
            last_seen: Instant::now(),
            calls: 1,
        }
    }

    /// Sends a request of the current calls a batch, to `limit` samples at
    /// first.
    fn start(&mut self, driver: &mut Driver, limit: u64) -> Result<(), DriverError> {
        driver.send_shared(self.calls, limit.max(1), &self.samples)?;
        self.read = 0;
        self.under_way = true;
        self.last_seen = Instant::now();
        Ok(())
    }

    /// Calibration inside the series ([`batch::calibrate`]): the series
    /// starts at one call a batch, and each batch size tried is written to
    /// the file, so the adapter takes it up at its next batch without a
    /// request (batches of a size already left behind are warm-up). The
    /// series goes on at the batch found.
    pub(super) fn calibrate(
        &mut self,
        driver: &mut Driver,
        target_ns: u64,
    ) -> Result<Calibrated, DriverError> {
        let ring = self.samples.capacity() as u64;
        if self.under_way {
            // Started with one sample's limit (nobody may be watching):
            // warpt is now.
            self.samples.set_limit(self.read as u64 + ring, self.read);
        }
        let mut pace = Duration::ZERO;
        let mut last: Option<Sample> = None;
        batch::calibrate(target_ns, |calls| {
            self.calls = calls;
            if self.under_way {
                self.samples.set_calls(calls);
            }
            // Where a batch of this size should end, from the last one.
            if let Some(s) = last {
                let ns = s.ns as f64 * calls as f64 / s.calls.max(1) as f64;
                pace = Duration::from_nanos(ns as u64);
            }
            loop {
                let fresh = self.next(driver, 0, pace, |_| ring)?;
                if let Some(s) = fresh.into_iter().find(|s| s.calls == calls) {
                    last = Some(s);
                    return Ok(s.ns);
                }
            }
        })
    }

    /// The samples of the calibrated batch taken since the last call, at
    /// least one (see [`Sharing::next`]), looked for a sample's time or
    /// [`LOOK_EVERY`] after the last, whichever is longer.
    pub(super) fn timed(
        &mut self,
        driver: &mut Driver,
        done: u64,
        sample: Duration,
        more: impl Fn(u64) -> u64,
    ) -> Result<Timed, DriverError> {
        let look = sample.max(LOOK_EVERY);
        loop {
            let fresh = self.next(driver, done, look, &more)?;
            if let Some(t) = self.batch(&fresh) {
                return Ok(t);
            }
        }
    }

    /// Those of `samples` of the current batch size (after calibration,
    /// all of them), as a request's reply would hold them.
    fn batch(&self, samples: &[Sample]) -> Option<Timed> {
        let samples_ns: Vec<u64> = samples
            .iter()
            .filter(|s| s.calls == self.calls)
            .map(|s| s.ns)
            .collect();
        (!samples_ns.is_empty()).then_some(Timed {
            samples_ns,
            calls: self.calls,
        })
    }

    /// The samples taken since the last call, at least one: sleeps a
    /// sample's time (`sample`) at a time until the adapter has taken
    /// another, and keeps its limit `more(taken)` samples past those it
    /// has taken (`done`: the series' samples so far, these included).
    /// The limit only bounds a warpt that stopped looking: at the series'
    /// end [`Sharing::stop`] lowers it, and the adapter stops after the
    /// batch under way.
    /// When the adapter has stopped (its limit reached, an error, or gone)
    /// its reply ends the request, and another starts at `more` of the
    /// series' samples so far.
    fn next(
        &mut self,
        driver: &mut Driver,
        done: u64,
        sample: Duration,
        more: impl Fn(u64) -> u64,
    ) -> Result<Vec<Sample>, DriverError> {
        loop {
            if !self.under_way {
                self.start(driver, more(done))?;
            }
            let taken = self.samples.taken();
            if taken > self.read {
                let fresh: Vec<Sample> =
                    (self.read..taken).map(|i| self.samples.sample(i)).collect();
                self.read = taken;
                self.last_seen = Instant::now();
                let limit = taken as u64 + more(done + fresh.len() as u64);
                self.samples.set_limit(limit, self.read);
                return Ok(fresh);
            }
            // Not yet: the next sample is due a sample's time after the
            // last one seen; meanwhile a reply (the adapter stopped) wakes
            // warpt at once.
            let due = self.last_seen + sample.max(Duration::from_micros(50));
            let now = Instant::now();
            let nap = if due > now {
                (due - now).min(MAX_NAP)
            } else {
                // Late already (or the pace unknown): look again soon, the
                // later the longer it has waited.
                let waited = now - self.last_seen;
                (sample / 8).max(waited / 4).clamp(MIN_NAP, MAX_NAP)
            };
            if driver.reply_waiting(nap)
                && let Some(rest) = self.end(driver)?
            {
                return Ok(rest);
            }
        }
    }

    /// The series has stopped: the adapter stops after the batch under
    /// way, and its samples not read yet come back (`None` when none are
    /// left, or no request is under way).
    pub(super) fn stop(&mut self, driver: &mut Driver) -> Option<Result<Timed, DriverError>> {
        if !self.under_way {
            return None;
        }
        self.halt();
        match self.end(driver) {
            Ok(rest) => self.batch(&rest?).map(Ok),
            Err(e) => Some(Err(e)),
        }
    }

    /// Tells the adapter to stop after the batch under way, without
    /// reading its reply (the next request settles it).
    pub(super) fn halt(&self) {
        if self.under_way {
            self.samples.set_limit(0, self.read);
        }
    }

    /// Reads the request's reply (how many samples it took) and the
    /// samples not read from the file yet: the limit kept them within the
    /// ring.
    fn end(&mut self, driver: &mut Driver) -> Result<Option<Vec<Sample>>, DriverError> {
        self.under_way = false;
        let Some(reply) = driver.take_shared() else {
            return Ok(None);
        };
        let taken = usize::try_from(reply?).unwrap_or(usize::MAX);
        let taken = taken.min(self.read + self.samples.capacity());
        let rest: Vec<Sample> = (self.read..taken).map(|i| self.samples.sample(i)).collect();
        self.read = self.read.max(taken);
        Ok((!rest.is_empty()).then_some(rest))
    }
}
