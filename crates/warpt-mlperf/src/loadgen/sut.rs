//! The system under test, as the scenario engine sees it, and the handle
//! it answers through.
//!
//! LoadGen hands a SUT queries and leaves the serving to it; every
//! reference SUT then does the same thing: a queue and worker threads
//! that take samples from it, batched when they can. The engine provides
//! that loop once ([`crate::loadgen::engine`]); a SUT says how many
//! workers it wants and how large a batch it takes, and computes.

use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// One sample of a query, as a SUT receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuerySample {
    /// The response slot (LoadGen's sequence id): unique within a test.
    pub id: u64,
    /// The sample's index in the library (LoadGen's `QuerySampleIndex`).
    pub index: usize,
}

/// A SUT's answer to one sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// The bytes logged for accuracy (`data` in `mlperf_log_accuracy.json`).
    pub data: Vec<u8>,
    /// Output tokens (LLMs), counted for tokens/s and TPOT.
    pub tokens: Option<u64>,
}

/// A system under test.
pub trait SystemUnderTest: Sync {
    /// The name logged as `SUT name`.
    fn name(&self) -> String;

    /// Worker threads serving the queue: one, unless the SUT serves in
    /// parallel.
    fn workers(&self) -> usize {
        1
    }

    /// Most samples one [`process`](Self::process) call takes.
    fn max_batch(&self) -> usize;

    /// Serves `batch`: calls `responder.complete` exactly once for every
    /// sample (and `first_token` before it, for LLMs). An error ends the test.
    fn process(&self, batch: &[QuerySample], responder: &Responder) -> Result<(), String>;
}

/// What happened to one issued sample.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slot {
    /// Library index.
    pub index: usize,
    /// Nanoseconds from the test's start to the sample's scheduled time.
    pub scheduled_ns: u64,
    /// Nanoseconds from the start to its completion.
    pub done_ns: Option<u64>,
    /// Nanoseconds from the start to its first token.
    pub first_token_ns: Option<u64>,
    /// Tokens reported.
    pub tokens: Option<u64>,
    /// The response bytes.
    pub data: Vec<u8>,
}

#[derive(Debug, Default)]
pub(crate) struct Records {
    pub slots: Vec<Slot>,
    pub completed: u64,
    /// Completions of a sample already complete, or of an unknown id.
    pub duplicates: u64,
}

/// The handle a SUT answers through: it stamps the time of each answer.
pub struct Responder {
    pub(crate) start: Instant,
    pub(crate) records: Mutex<Records>,
    pub(crate) changed: Condvar,
}

impl Responder {
    pub(crate) fn new(start: Instant) -> Self {
        Responder {
            start,
            records: Mutex::new(Records::default()),
            changed: Condvar::new(),
        }
    }

    /// The first token of `sample` is ready (now).
    pub fn first_token(&self, sample: &QuerySample) {
        self.first_token_at(sample, Instant::now());
    }

    /// The first token of `sample` was ready at `at` (a SUT that generates
    /// a batch at once reports each sample's first token afterwards).
    pub fn first_token_at(&self, sample: &QuerySample, at: Instant) {
        let now = at.saturating_duration_since(self.start).as_nanos() as u64;
        if let Ok(mut r) = self.records.lock()
            && let Some(slot) = r.slots.get_mut(sample.id as usize)
        {
            slot.first_token_ns.get_or_insert(now);
        }
    }

    /// `sample` is complete (now) with `response`.
    pub fn complete(&self, sample: &QuerySample, response: Response) {
        self.complete_at(sample, Instant::now(), response);
    }

    /// `sample` was complete at `at` (a SUT that timestamps its answers
    /// itself, such as a streamed HTTP response read to its end).
    pub fn complete_at(&self, sample: &QuerySample, at: Instant, response: Response) {
        let now = at.saturating_duration_since(self.start).as_nanos() as u64;
        let Ok(mut r) = self.records.lock() else {
            return;
        };
        match r.slots.get_mut(sample.id as usize) {
            Some(slot) if slot.done_ns.is_none() => {
                slot.done_ns = Some(now);
                slot.tokens = response.tokens;
                slot.data = response.data;
                r.completed += 1;
            }
            _ => r.duplicates += 1,
        }
        drop(r);
        self.changed.notify_all();
    }
}
