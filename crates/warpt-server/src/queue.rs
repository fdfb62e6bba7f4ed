//! Submitted runs, executed one at a time: two benchmarks on one machine
//! disturb each other's figures.
//!
//! Each run is `warpt benchmark run --events` in a child process (the
//! same binary, recording into the same store under the run's id), so a
//! crashing benchmark never takes the server down and cancelling is the
//! Ctrl-C the command already handles. The child's event lines are kept in
//! a [`Feed`] that WebSocket clients replay and follow. The `server_jobs`
//! table mirrors the queue, so a restarted server marks the run it was
//! executing `interrupted` and carries on with the queued ones. (The child
//! notices its server's death, re-parented, and stops as on Ctrl-C.)

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use jiff::Timestamp;
use serde_json::Value;
use tokio::sync::watch;
use warpt_model::RunEvent;
use warpt_run::RunOutcome;
use warpt_run::child::{self, ChildRun};
use warpt_run::outcome::ChildExit;
use warpt_store::{Job, JobState, Location, Store, StoreError};

use crate::plan::RunRequest;

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
    pid: Option<u32>,
    cancelled: bool,
}

#[derive(Default)]
struct Inner {
    queue: VecDeque<String>,
    current: Option<Current>,
    feeds: HashMap<String, Arc<Feed>>,
    ended: VecDeque<String>,
}

/// The queue and its executor.
pub struct Queue {
    exe: PathBuf,
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
    /// starts the executor thread. `exe` is the warpt binary.
    pub fn start(exe: PathBuf, store: Location) -> Result<Arc<Self>, StoreError> {
        let db = Store::open(&store)?;
        let now = Timestamp::now();
        db.interrupt_running_jobs(now, "the server stopped while this run executed")?;
        let queued = db.jobs(false, usize::MAX >> 1)?;
        let queue = Arc::new(Queue {
            exe,
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

    /// Queues `request` as run `id`; returns its position (1 = next).
    pub fn submit(&self, id: &str, request: &RunRequest) -> Result<usize, StoreError> {
        let db = Store::open(&self.store)?;
        db.add_job(&Job {
            id: id.to_string(),
            state: JobState::Queued,
            request: serde_json::to_value(request)?,
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
            if let Some(pid) = current.pid {
                child::interrupt(pid);
            }
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
                while inner.queue.is_empty() {
                    inner = self.wake.wait(inner).unwrap_or_else(|e| e.into_inner());
                }
                let Some(id) = inner.queue.pop_front() else {
                    continue;
                };
                inner.current = Some(Current {
                    id: id.clone(),
                    pid: None,
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
        }
    }

    /// Runs job `id` to its end; returns how it ended.
    fn execute(&self, id: &str, feed: &Feed) -> (JobState, Option<String>) {
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
        let request: RunRequest = match serde_json::from_value(job.request) {
            Ok(r) => r,
            Err(e) => return (JobState::Failed, Some(format!("stored request: {e}"))),
        };
        feed.push(&RunEvent::RunStarted { id: id.to_string() });
        let log = match warpt_run::child::anonymous_log() {
            Ok(f) => f,
            Err(e) => {
                return (
                    JobState::Failed,
                    Some(format!("creating the log file: {e}")),
                );
            }
        };
        let mut request = request.to_request();
        request.run_id = Some(id.to_string());
        request.events = true;
        let child = ChildRun::program(&self.exe)
            .args(["benchmark", "run"])
            .args(request.to_args())
            // Through the environment, not argv: a PostgreSQL URL may
            // carry a password, which `ps` would show.
            .env("WARPT_STORE", self.store.as_arg())
            .own_group()
            .stderr_to(log);
        let mut child = match child.spawn() {
            Ok(c) => c,
            Err(e) => {
                return (
                    JobState::Failed,
                    Some(format!("starting {}: {e}", self.exe.display())),
                );
            }
        };
        {
            let mut inner = lock(&self.inner);
            if let Some(c) = inner.current.as_mut() {
                c.pid = Some(child.id());
                if c.cancelled {
                    child::interrupt(child.id());
                }
            }
        }
        // Only events are forwarded, as the run wrote them: a typed
        // `RunEvent`, or an object with a `type` this server does not know
        // (a newer warpt's).
        child.each_line(|line| match serde_json::from_str::<RunEvent>(&line) {
            Ok(event) => feed.push_line(line, event.is_sample()),
            Err(_) => {
                if serde_json::from_str::<Value>(&line).is_ok_and(|v| v.get("type").is_some()) {
                    feed.push_line(line, false);
                }
            }
        });
        let done = child.wait();
        let cancelled = lock(&self.inner)
            .current
            .as_ref()
            .is_some_and(|c| c.cancelled);
        match done.map(|d| (d.exit, d.stderr_tail(5))) {
            Ok((exit, _)) if exit.handed_over() => (JobState::Finished, None),
            Ok((ChildExit::Ran(RunOutcome::Interrupted), _)) if cancelled => (
                JobState::Cancelled,
                Some("cancelled while running; the finished benchmarks were kept".into()),
            ),
            Ok((ChildExit::Ran(RunOutcome::Interrupted), _)) => (
                JobState::Interrupted,
                Some("interrupted by a signal".into()),
            ),
            Ok((exit, tail)) => (
                JobState::Failed,
                Some(format!("warpt benchmark run exited with {exit}: {tail}")),
            ),
            Err(e) => (JobState::Failed, Some(format!("waiting for the run: {e}"))),
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
