//! Submitted runs, executed one at a time: two benchmarks on one machine
//! disturb each other's figures.
//!
//! Each run is the typed request planned and run in this process, through
//! `warpt_run::plan_on` and `warpt_run::run` as `benchmark run` does, on the
//! configuration and suites the server read at start; its benchmarks run in
//! worker processes as always, so a crashing benchmark never takes the
//! server down. Its events go to a [`Feed`] that WebSocket clients replay
//! and follow; cancelling sets the run's own interrupt flag (it stops as on
//! Ctrl-C, keeping the benchmarks that finished). The `server_jobs` table
//! mirrors the queue, so a restarted server marks the run it was executing
//! `interrupted` and carries on with the queued ones.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use tokio::sync::watch;
use warpt_model::RunEvent;
use warpt_run::run::Suites;
use warpt_run::{PlanBase, RunOutcome, RunRequest, StoreChoice};
use warpt_store::{Job, JobState, Location, Store, StoreError};

/// Events a feed keeps at most; later `sample` events are dropped (the
/// run's stored result has every sample).
const FEED_CAP: usize = 200_000;
/// Ended runs whose feeds stay in memory for late joiners.
const KEEP_ENDED: usize = 32;

/// One run's events as JSON text, in order, and a signal when more come.
pub struct Feed {
    lines: Mutex<Vec<Arc<str>>>,
    /// (lines so far, ended).
    state: watch::Sender<(usize, bool)>,
}

impl Feed {
    fn new() -> Arc<Self> {
        Arc::new(Feed {
            lines: Mutex::new(Vec::new()),
            state: watch::Sender::new((0, false)),
        })
    }

    /// Adds an event the server writes itself.
    fn push(&self, event: &RunEvent) {
        self.push_line(event.to_line(), event.is_sample());
    }

    /// Adds a line as the run wrote it (`sample`: whether it is one).
    fn push_line(&self, line: String, sample: bool) {
        let mut lines = lock(&self.lines);
        if lines.len() >= FEED_CAP && sample {
            return;
        }
        lines.push(line.into());
        let n = lines.len();
        drop(lines);
        self.state.send_modify(|s| s.0 = n);
    }

    fn end(&self) {
        self.state.send_modify(|s| s.1 = true);
    }

    /// Lines `from..` so far.
    pub fn since(&self, from: usize) -> Vec<Arc<str>> {
        lock(&self.lines)
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// A receiver of (lines so far, ended).
    pub fn watch(&self) -> watch::Receiver<(usize, bool)> {
        self.state.subscribe()
    }
}

/// The run being executed.
struct Current {
    id: String,
    /// Its interrupt flag: set to cancel it, or when the server stops.
    interrupt: Arc<AtomicBool>,
    cancelled: bool,
}

#[derive(Default)]
struct Inner {
    queue: VecDeque<String>,
    current: Option<Current>,
    feeds: HashMap<String, Arc<Feed>>,
    ended: VecDeque<String>,
    /// The server is stopping: no further run starts.
    stopping: bool,
}

/// The queue and its executor.
pub struct Queue {
    base: Arc<PlanBase>,
    suites: Arc<dyn Suites + Send + Sync>,
    store: Location,
    inner: Mutex<Inner>,
    wake: Condvar,
}

/// What `DELETE runs/{id}` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Cancel {
    /// It was queued and is now cancelled.
    Dequeued,
    /// It is running and was signalled; it stops like on Ctrl-C.
    Signalled,
    /// It had already ended.
    AlreadyEnded(JobState),
    /// No such run.
    Unknown,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Queue {
    /// Takes over the store's jobs (marking running ones interrupted) and
    /// starts the executor thread, which plans each run on `base` and runs
    /// it with `suites`.
    pub fn start(
        base: Arc<PlanBase>,
        suites: Arc<dyn Suites + Send + Sync>,
        store: Location,
    ) -> Result<Arc<Self>, StoreError> {
        let db = Store::open(&store)?;
        let now = Timestamp::now();
        db.interrupt_running_jobs(now, "the server stopped while this run executed")?;
        let queued = db.jobs(false, usize::MAX >> 1)?;
        let queue = Arc::new(Queue {
            base,
            suites,
            store,
            inner: Mutex::new(Inner::default()),
            wake: Condvar::new(),
        });
        {
            let mut inner = lock(&queue.inner);
            for job in queued {
                inner.feeds.insert(job.id.clone(), Feed::new());
                inner.queue.push_back(job.id);
            }
        }
        let worker = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("warpt-serve-queue".into())
            .spawn(move || worker.execute_forever())
            .map_err(|e| StoreError::Corrupt(format!("starting the run queue: {e}")))?;
        Ok(queue)
    }

    /// Queues `request` (checked and planned by the caller) as run `id`;
    /// returns its position (1 = next).
    pub fn submit(&self, id: &str, request: &RunRequest) -> Result<usize, StoreError> {
        let db = Store::open(&self.store)?;
        db.add_job(&Job {
            id: id.to_string(),
            state: JobState::Queued,
            request: request.to_json(),
            submitted_at: Timestamp::now(),
            started_at: None,
            finished_at: None,
            message: None,
        })?;
        let mut inner = lock(&self.inner);
        let feed = Feed::new();
        inner.queue.push_back(id.to_string());
        let position = inner.queue.len();
        feed.push(&RunEvent::Queued {
            id: id.to_string(),
            position,
        });
        inner.feeds.insert(id.to_string(), feed);
        drop(inner);
        self.wake.notify_all();
        Ok(position)
    }

    /// Position of run `id`: 0 running, 1 next, ...; `None` when not active.
    pub fn position(&self, id: &str) -> Option<usize> {
        let inner = lock(&self.inner);
        if inner.current.as_ref().is_some_and(|c| c.id == id) {
            return Some(0);
        }
        inner.queue.iter().position(|q| q == id).map(|p| p + 1)
    }

    /// (runs queued, runs running): for `/metrics`.
    pub fn counts(&self) -> (usize, usize) {
        let inner = lock(&self.inner);
        (inner.queue.len(), usize::from(inner.current.is_some()))
    }

    /// The feed of run `id`, while it is active or recently ended.
    pub fn feed(&self, id: &str) -> Option<Arc<Feed>> {
        lock(&self.inner).feeds.get(id).cloned()
    }

    /// Cancels run `id`.
    pub fn cancel(&self, id: &str) -> Result<Cancel, StoreError> {
        let mut inner = lock(&self.inner);
        if let Some(current) = inner.current.as_mut().filter(|c| c.id == id) {
            current.cancelled = true;
            current.interrupt.store(true, Ordering::SeqCst);
            return Ok(Cancel::Signalled);
        }
        if let Some(at) = inner.queue.iter().position(|q| q == id) {
            inner.queue.remove(at);
            let feed = inner.feeds.get(id).cloned();
            self.remember_ended(&mut inner, id);
            drop(inner);
            let message = "cancelled before it started";
            Store::open(&self.store)?.end_job(
                id,
                JobState::Cancelled,
                Timestamp::now(),
                Some(message),
            )?;
            if let Some(feed) = feed {
                feed.push(&finished(id, JobState::Cancelled, Some(message)));
                feed.end();
            }
            return Ok(Cancel::Dequeued);
        }
        drop(inner);
        Ok(match Store::open(&self.store)?.job(id)? {
            Some(job) => Cancel::AlreadyEnded(job.state),
            None => Cancel::Unknown,
        })
    }

    fn remember_ended(&self, inner: &mut Inner, id: &str) {
        inner.ended.push_back(id.to_string());
        while inner.ended.len() > KEEP_ENDED {
            if let Some(old) = inner.ended.pop_front() {
                inner.feeds.remove(&old);
            }
        }
    }

    fn execute_forever(&self) {
        loop {
            let (id, feed) = {
                let mut inner = lock(&self.inner);
                while inner.queue.is_empty() || inner.stopping {
                    inner = self.wake.wait(inner).unwrap_or_else(|e| e.into_inner());
                }
                let Some(id) = inner.queue.pop_front() else {
                    continue;
                };
                inner.current = Some(Current {
                    id: id.clone(),
                    interrupt: Arc::new(AtomicBool::new(false)),
                    cancelled: false,
                });
                let feed = inner.feeds.entry(id.clone()).or_insert_with(Feed::new);
                (id, Arc::clone(feed))
            };
            let (state, message) = self.execute(&id, &feed);
            let at = Timestamp::now();
            if let Err(e) = Store::open(&self.store)
                .and_then(|db| db.end_job(&id, state, at, message.as_deref()))
            {
                eprintln!("warpt serve: run {id}: recording its end: {e}");
            }
            feed.push(&finished(&id, state, message.as_deref()));
            feed.end();
            let mut inner = lock(&self.inner);
            inner.current = None;
            self.remember_ended(&mut inner, &id);
            drop(inner);
            // `stop` may be waiting for the run to end.
            self.wake.notify_all();
        }
    }

    /// Stops taking runs, interrupts the one executing (it keeps what
    /// finished and is recorded `interrupted`) and waits up to `wait` for
    /// it to end: the server is shutting down.
    pub fn stop(&self, wait: Duration) {
        let mut inner = lock(&self.inner);
        inner.stopping = true;
        if let Some(c) = &inner.current {
            c.interrupt.store(true, Ordering::SeqCst);
        }
        let deadline = Instant::now() + wait;
        while inner.current.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            inner = self
                .wake
                .wait_timeout(inner, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// Runs job `id` to its end; returns how it ended.
    fn execute(&self, id: &str, feed: &Arc<Feed>) -> (JobState, Option<String>) {
        let job = match Store::open(&self.store).and_then(|db| {
            db.start_job(id, Timestamp::now())?;
            db.job(id)
        }) {
            Ok(Some(job)) => job,
            Ok(None) => {
                return (
                    JobState::Failed,
                    Some("the job vanished from the store".into()),
                );
            }
            Err(e) => return (JobState::Failed, Some(format!("store: {e}"))),
        };
        let mut request = match RunRequest::from_json(&job.request.to_string()) {
            Ok(r) => r,
            Err(e) => return (JobState::Failed, Some(format!("stored request: {e}"))),
        };
        // The server's store, already resolved; the run id the caller was
        // given; no export file.
        request.run_id = Some(id.to_string());
        request.store = StoreChoice::Open(self.store.clone());
        feed.push(&RunEvent::RunStarted { id: id.to_string() });
        let (plan, mut options) = match warpt_run::plan_on(&request, &self.base) {
            Ok(p) => p,
            Err(e) => return (JobState::Failed, Some(format!("planning: {e:#}"))),
        };
        let (interrupt, cancelled_before) = {
            let inner = lock(&self.inner);
            match inner.current.as_ref() {
                Some(c) => (Arc::clone(&c.interrupt), c.cancelled),
                None => (Arc::new(AtomicBool::new(false)), false),
            }
        };
        if cancelled_before {
            interrupt.store(true, Ordering::SeqCst);
        }
        options.interrupt = Some(interrupt);
        // The manifest's command line is the request's own rendering.
        options.command_line = vec![
            "warpt serve".to_string(),
            format!("POST /api/v1/runs (run {id})"),
            request.to_json().to_string(),
        ];
        let sink_feed = Arc::clone(feed);
        let progress =
            warpt_run::events::EventLines::to(Arc::new(move |e: &RunEvent| sink_feed.push(e)));
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            warpt_run::run(&request, &plan, options, &*self.suites, &progress)
        }));
        let cancelled = lock(&self.inner)
            .current
            .as_ref()
            .is_some_and(|c| c.cancelled);
        match ran {
            Ok(Ok(r)) => match r.outcome {
                RunOutcome::Interrupted if cancelled => (
                    JobState::Cancelled,
                    Some("cancelled while running; the finished benchmarks were kept".into()),
                ),
                RunOutcome::Interrupted => (
                    JobState::Interrupted,
                    Some(
                        "interrupted (the server stopped); the finished benchmarks were kept"
                            .into(),
                    ),
                ),
                _ => {
                    let failed = r
                        .run
                        .benchmarks
                        .iter()
                        .filter(|b| b.status != warpt_model::RunStatus::Passed)
                        .count();
                    (
                        JobState::Finished,
                        (failed > 0).then(|| {
                            format!(
                                "{failed} of {} benchmark(s) did not pass",
                                r.run.benchmarks.len()
                            )
                        }),
                    )
                }
            },
            Ok(Err(e)) => (JobState::Failed, Some(format!("{e:#}"))),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                (JobState::Failed, Some(format!("the run stopped: {why}")))
            }
        }
    }
}

fn finished(id: &str, state: JobState, message: Option<&str>) -> RunEvent {
    RunEvent::RunFinished {
        id: id.to_string(),
        state: state.as_str().to_string(),
        message: message.map(str::to_string),
    }
}
