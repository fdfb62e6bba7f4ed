//! A measuring series whose samples the adapter shares through a mapped
//! file ([`crate::shared`]): one `run` request goes on while warpt raises
//! its limit, instead of a request and a reply every few samples.

use std::time::{Duration, Instant};

use crate::driver::{Driver, DriverError, Timed};
use crate::shared::SharedSamples;

/// Longest warpt sleeps between two looks at the file: it wakes at least
/// this often to see an adapter that stopped (a reply waiting).
const MAX_NAP: Duration = Duration::from_millis(20);

/// The series' shared file and where its request stands.
pub(super) struct Sharing {
    samples: SharedSamples,
    /// Samples of the request under way read so far.
    read: usize,
    /// A shared request is under way (its reply unread).
    under_way: bool,
    /// When the last new sample was seen.
    last_seen: Instant,
}

impl Sharing {
    /// A file for up to `capacity` samples a request.
    pub(super) fn new(capacity: usize) -> std::io::Result<Self> {
        Ok(Sharing {
            samples: SharedSamples::create(capacity)?,
            read: 0,
            under_way: false,
            last_seen: Instant::now(),
        })
    }

    /// Sends a request of `calls` calls a sample, to `limit` samples at
    /// first.
    pub(super) fn start(
        &mut self,
        driver: &mut Driver,
        calls: u64,
        limit: u64,
    ) -> Result<(), DriverError> {
        driver.send_shared(calls, limit.max(1), &self.samples)?;
        self.read = 0;
        self.under_way = true;
        self.last_seen = Instant::now();
        Ok(())
    }

    /// The samples taken since the last call, at least one: sleeps a
    /// sample's time (`sample`) at a time until the adapter has taken
    /// another, and keeps its limit `more(taken)` samples past those it
    /// has taken (`taken`: the series' samples so far, these included).
    /// The limit only bounds a warpt that stopped looking: at the series'
    /// end [`Sharing::stop`] lowers it, and the adapter stops after the
    /// batch under way.
    /// When the adapter has stopped (its limit reached, an error, or gone)
    /// its reply ends the request, and another starts at `more` of the
    /// series' samples so far (`done`).
    pub(super) fn next(
        &mut self,
        driver: &mut Driver,
        calls: u64,
        done: u64,
        sample: Duration,
        more: impl Fn(u64) -> u64,
    ) -> Result<Timed, DriverError> {
        loop {
            if !self.under_way {
                self.start(driver, calls, more(done))?;
            }
            let taken = self.samples.taken();
            if taken > self.read {
                let fresh: Vec<u64> = (self.read..taken).map(|i| self.samples.sample(i)).collect();
                self.read = taken;
                self.last_seen = Instant::now();
                let limit = taken as u64 + more(done + fresh.len() as u64);
                self.samples.set_limit(limit);
                return Ok(Timed {
                    samples_ns: fresh,
                    calls,
                });
            }
            // Not yet: the next sample is due a sample's time after the
            // last one seen; meanwhile a reply (the adapter stopped) wakes
            // warpt at once.
            let due = self.last_seen + sample.max(Duration::from_micros(50));
            let now = Instant::now();
            let nap = if due > now {
                (due - now).min(MAX_NAP)
            } else {
                // Late already: look again soon.
                (sample / 8).clamp(Duration::from_micros(20), MAX_NAP)
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
        self.samples.set_limit(0);
        self.end(driver).transpose()
    }

    /// Tells the adapter to stop after the batch under way, without
    /// reading its reply (the next request settles it).
    pub(super) fn halt(&self) {
        if self.under_way {
            self.samples.set_limit(0);
        }
    }

    /// Reads the request's reply (all its samples): those not read from
    /// the file yet.
    fn end(&mut self, driver: &mut Driver) -> Result<Option<Timed>, DriverError> {
        self.under_way = false;
        let Some(reply) = driver.take_ahead() else {
            return Ok(None);
        };
        let timed = reply?;
        let rest: Vec<u64> = timed.samples_ns.iter().skip(self.read).copied().collect();
        self.read = timed.samples_ns.len();
        Ok((!rest.is_empty()).then_some(Timed {
            samples_ns: rest,
            calls: timed.calls,
        }))
    }
}
