//! The scenario engine: issues queries to a [`SystemUnderTest`] as LoadGen
//! does for each scenario, serves them through the SUT's worker threads,
//! and collects every timestamp.
//!
//! - SingleStream / MultiStream: a query is issued when the previous one
//!   completed (1 or `samples_per_query` samples); issuing ends once both
//!   `min_query_count` queries were issued and `min_duration` has passed.
//! - Server: the whole Poisson schedule is drawn first (`schedule_rng_seed`)
//!   up to `min_duration` and `min_query_count`, then every query is issued
//!   at its scheduled time whether or not the SUT keeps up; latency counts
//!   from the scheduled time, so a backlog is never hidden.
//! - Offline: one query with every sample.
//!
//! AccuracyOnly issues each sample of the library once, in a seeded order.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::schedule::server_schedule;
use super::settings::{Mode, Scenario, TestSettings};
use super::sut::{QuerySample, Responder, Slot, SystemUnderTest};

/// Everything a test observed, in nanoseconds from its start.
#[derive(Debug, Clone, Default)]
pub struct PerformanceResult {
    /// Queries issued.
    pub queries_issued: u64,
    /// Per sample, in issue order.
    pub samples: Vec<SampleRecord>,
    /// MultiStream: per query, the slowest sample's latency.
    pub query_latencies_ns: Vec<u64>,
    /// Seconds from the start to the last completion (Offline's duration).
    pub max_latency_s: f64,
    /// Seconds from the start to the final query's scheduled time.
    pub final_query_scheduled_s: f64,
    /// Seconds from the start to the final query's issue.
    pub final_query_issued_s: f64,
    /// Seconds from the start to the completion of the final query's samples.
    pub final_query_done_s: f64,
    /// Completions that were not the first for their sample.
    pub duplicate_responses: u64,
}

/// One issued sample's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRecord {
    /// Library index.
    pub index: usize,
    /// Latency from its scheduled time to its completion.
    pub latency_ns: u64,
    /// Time to first token from its scheduled time (LLMs).
    pub first_token_ns: Option<u64>,
    /// Output tokens (LLMs).
    pub tokens: Option<u64>,
    /// Response bytes.
    pub data: Vec<u8>,
}

impl SampleRecord {
    /// Time per output token: the time after the first token over the
    /// tokens after it (LoadGen's convention).
    pub fn tpot_ns(&self) -> Option<u64> {
        let (first, tokens) = (self.first_token_ns?, self.tokens?);
        (tokens > 1).then(|| (self.latency_ns.saturating_sub(first)) / (tokens - 1))
    }
}

struct Queue {
    items: Mutex<(VecDeque<QuerySample>, bool)>,
    ready: Condvar,
}

impl Queue {
    fn push(&self, samples: &[QuerySample]) {
        if let Ok(mut q) = self.items.lock() {
            q.0.extend(samples.iter().copied());
        }
        self.ready.notify_all();
    }

    fn close(&self) {
        if let Ok(mut q) = self.items.lock() {
            q.1 = true;
        }
        self.ready.notify_all();
    }

    /// Up to `max` samples, or `None` once closed and empty.
    fn take(&self, max: usize) -> Option<Vec<QuerySample>> {
        let mut q = self.items.lock().ok()?;
        loop {
            if !q.0.is_empty() {
                let n = q.0.len().min(max.max(1));
                return Some(q.0.drain(..n).collect());
            }
            if q.1 {
                return None;
            }
            q = self.ready.wait(q).ok()?;
        }
    }
}

/// A uniform index below `n` (Lemire's multiply-shift).
fn below(rng: &mut Xoshiro256PlusPlus, n: usize) -> usize {
    ((rng.next_u64() as u128 * n as u128) >> 64) as usize
}

/// The seeded order of AccuracyOnly: every library index once.
fn shuffled(n: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        v.swap(i, below(rng, i + 1));
    }
    v
}

/// Runs one test of `settings` against `sut`.
pub fn run(
    sut: &dyn SystemUnderTest,
    settings: &TestSettings,
) -> Result<PerformanceResult, String> {
    let queue = Queue {
        items: Mutex::new((VecDeque::new(), false)),
        ready: Condvar::new(),
    };
    let failure = Mutex::new(None::<String>);
    let start = Instant::now();
    let responder = Responder::new(start);
    let mut issued = Issued::default();
    std::thread::scope(|s| {
        for _ in 0..sut.workers().max(1) {
            s.spawn(|| {
                while let Some(batch) = queue.take(sut.max_batch()) {
                    // A panicking SUT fails the test instead of leaving the
                    // issuer waiting for answers that never come.
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        sut.process(&batch, &responder)
                    }))
                    .unwrap_or_else(|panic| {
                        let msg = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "no message".into());
                        Err(format!("the system under test panicked: {msg}"))
                    });
                    if let Err(e) = outcome {
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        // Wake the issuer, which checks for failures.
                        responder.changed.notify_all();
                        queue.close();
                        return;
                    }
                }
            });
        }
        issued = issue(settings, &queue, &responder, &failure);
        queue.close();
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let records = responder
        .records
        .into_inner()
        .map_err(|_| "a worker panicked while recording".to_string())?;
    collect(settings, records.slots, records.duplicates, issued)
}

#[derive(Default)]
struct Issued {
    /// Per query: (first slot, sample count, scheduled ns, issued ns).
    queries: Vec<(usize, usize, u64, u64)>,
    /// Samples issued in all.
    samples: u64,
}

fn failed(failure: &Mutex<Option<String>>) -> bool {
    failure.lock().map_or(true, |f| f.is_some())
}

/// Registers a query's samples and queues them; returns its first slot
/// and its scheduled and issue times. A query without a schedule
/// (every scenario but Server) is scheduled when it is issued.
fn enqueue(
    responder: &Responder,
    queue: &Queue,
    indices: &[usize],
    scheduled_ns: Option<u64>,
) -> Result<(usize, u64, u64), String> {
    let samples: Vec<QuerySample>;
    let first;
    let issued_ns = responder.start.elapsed().as_nanos() as u64;
    let scheduled_ns = scheduled_ns.unwrap_or(issued_ns);
    {
        let mut r = responder
            .records
            .lock()
            .map_err(|_| "a worker panicked".to_string())?;
        first = r.slots.len();
        samples = indices
            .iter()
            .enumerate()
            .map(|(k, &index)| QuerySample {
                id: (first + k) as u64,
                index,
            })
            .collect();
        r.slots.extend(indices.iter().map(|&index| Slot {
            index,
            scheduled_ns,
            ..Slot::default()
        }));
    }
    queue.push(&samples);
    Ok((first, scheduled_ns, issued_ns))
}

/// Blocks until `upto` samples in all are complete (or a worker failed).
fn wait_done(responder: &Responder, failure: &Mutex<Option<String>>, upto: u64) {
    let Ok(mut r) = responder.records.lock() else {
        return;
    };
    while r.completed < upto && !failed(failure) {
        match responder
            .changed
            .wait_timeout(r, Duration::from_millis(100))
        {
            Ok((guard, _)) => r = guard,
            Err(_) => return,
        }
    }
}

fn issue(
    settings: &TestSettings,
    queue: &Queue,
    responder: &Responder,
    failure: &Mutex<Option<String>>,
) -> Issued {
    let mut out = Issued::default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(settings.sample_index_rng_seed);
    let library = settings.performance_sample_count.max(1) as usize;
    let spq = settings.samples_per_query.max(1) as usize;
    let accuracy = settings.mode == Mode::AccuracyOnly;
    let mut order = accuracy.then(|| shuffled(settings.total_sample_count as usize, &mut rng));
    let push = |out: &mut Issued, indices: &[usize], scheduled_ns: Option<u64>| -> bool {
        match enqueue(responder, queue, indices, scheduled_ns) {
            Ok((first, scheduled_ns, issued_ns)) => {
                out.queries
                    .push((first, indices.len(), scheduled_ns, issued_ns));
                out.samples += indices.len() as u64;
                true
            }
            Err(e) => {
                if let Ok(mut f) = failure.lock() {
                    f.get_or_insert(e);
                }
                false
            }
        }
    };
    match settings.scenario {
        Scenario::Offline => {
            let indices: Vec<usize> = match order.take() {
                Some(all) => all,
                None => (0..spq).map(|i| i % library).collect(),
            };
            if push(&mut out, &indices, None) {
                wait_done(responder, failure, out.samples);
            }
        }
        Scenario::Server => {
            let times = match &order {
                // Accuracy: one query per sample, issued back to back.
                Some(all) => vec![0u64; all.len()],
                None => server_schedule(
                    settings.target_qps,
                    settings.min_duration,
                    settings.min_query_count,
                    settings.schedule_rng_seed,
                ),
            };
            for (q, t) in times.iter().enumerate() {
                if failed(failure) {
                    break;
                }
                let due = responder.start + Duration::from_nanos(*t);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                let index = match &order {
                    Some(all) => all[q],
                    None => below(&mut rng, library),
                };
                if !push(&mut out, &[index], Some(*t)) {
                    break;
                }
            }
            wait_done(responder, failure, out.samples);
        }
        Scenario::SingleStream | Scenario::MultiStream => {
            let mut next = 0usize;
            loop {
                if failed(failure) {
                    break;
                }
                let indices: Vec<usize> = match &order {
                    Some(all) => {
                        if next >= all.len() {
                            break;
                        }
                        let end = (next + spq).min(all.len());
                        let v = all[next..end].to_vec();
                        next = end;
                        v
                    }
                    None => {
                        let first = below(&mut rng, library);
                        (0..spq).map(|k| (first + k) % library).collect()
                    }
                };
                if !push(&mut out, &indices, None) {
                    break;
                }
                wait_done(responder, failure, out.samples);
                if order.is_some() {
                    continue;
                }
                let elapsed = out
                    .queries
                    .last()
                    .map_or(Duration::ZERO, |q| Duration::from_nanos(q.3));
                let queries = out.queries.len() as u64;
                if queries >= settings.min_query_count && elapsed >= settings.min_duration {
                    break;
                }
                if settings.max_duration.is_some_and(|max| elapsed > max) {
                    break;
                }
            }
        }
    }
    out
}

fn collect(
    settings: &TestSettings,
    slots: Vec<Slot>,
    duplicates: u64,
    issued: Issued,
) -> Result<PerformanceResult, String> {
    let missing = slots.iter().filter(|s| s.done_ns.is_none()).count();
    if missing > 0 {
        return Err(format!(
            "{missing} of {} issued samples were never answered",
            slots.len()
        ));
    }
    let done = |s: &Slot| s.done_ns.unwrap_or(0);
    let samples: Vec<SampleRecord> = slots
        .iter()
        .map(|s| SampleRecord {
            index: s.index,
            latency_ns: done(s).saturating_sub(s.scheduled_ns),
            first_token_ns: s.first_token_ns.map(|f| f.saturating_sub(s.scheduled_ns)),
            tokens: s.tokens,
            data: s.data.clone(),
        })
        .collect();
    let query_latencies_ns = if settings.scenario == Scenario::MultiStream {
        issued
            .queries
            .iter()
            .map(|&(first, n, sched, _)| {
                slots[first..first + n]
                    .iter()
                    .map(done)
                    .max()
                    .unwrap_or(sched)
                    .saturating_sub(sched)
            })
            .collect()
    } else {
        Vec::new()
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    let (final_sched, final_issued, final_done) =
        issued
            .queries
            .last()
            .map_or((0, 0, 0), |&(first, n, sched, iss)| {
                let d = slots[first..first + n].iter().map(done).max().unwrap_or(0);
                (sched, iss, d)
            });
    Ok(PerformanceResult {
        queries_issued: issued.queries.len() as u64,
        max_latency_s: secs(slots.iter().map(done).max().unwrap_or(0)),
        final_query_scheduled_s: secs(final_sched),
        final_query_issued_s: secs(final_issued),
        final_query_done_s: secs(final_done),
        duplicate_responses: duplicates,
        samples,
        query_latencies_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_order_is_a_permutation() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut v = shuffled(1000, &mut rng);
        assert_ne!(v, (0..1000).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..1000).collect::<Vec<_>>());
    }
}
