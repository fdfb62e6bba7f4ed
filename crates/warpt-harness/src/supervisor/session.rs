//! A worker process and its channels ([`Session`]), used for one request
//! or kept across the trials of one benchmark ([`KeptWorker`]).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::process::{Reaped, kill_group, try_reap, wait_or_kill};
use super::{EXIT_GRACE, WORKER_SUBCOMMAND};
use crate::worker::WorkerRequest;

/// A started worker: its process group, the request pipe, its stdout's
/// lines and its stderr's tail (and log).
pub(super) struct Session {
    /// The worker's pid, also its process group's id.
    pub(super) pid: libc::pid_t,
    stdin: Option<ChildStdin>,
    /// The worker's stdout, line by line (the sender ends with it).
    pub(super) lines: Receiver<String>,
    tail: crate::stderr::Tail,
    tail_thread: Option<JoinHandle<()>>,
    /// Reaped (or given up on): nothing left to stop.
    ended: bool,
    /// It exited by itself, between requests, and was reaped.
    exited: bool,
}

impl Session {
    /// Starts a worker from `exe` in a process group of its own, its
    /// stderr kept (and appended to `log`, headed by `label`).
    pub(super) fn start(exe: &Path, log: Option<&Path>, label: &str) -> std::io::Result<Self> {
        let mut child = Command::new(exe)
            .arg(WORKER_SUBCOMMAND)
            // A worker never records anything: the store's location (a URL
            // may carry a password) stays with the parent, out of reach of
            // the benchmark's code and the commands it runs.
            .env_remove("WARPT_STORE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let (tx, lines) = mpsc::channel::<String>();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    match line {
                        Ok(l) => {
                            if tx.send(l).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(format!("<unreadable output: {e}>"));
                            break;
                        }
                    }
                }
            });
        }
        let (tail, tail_thread) = match child.stderr.take() {
            Some(stderr) => {
                let (tail, thread) = crate::stderr::follow(stderr, log, label);
                (tail, Some(thread))
            }
            None => (crate::stderr::Tail::default(), None),
        };
        Ok(Session {
            pid: child.id() as libc::pid_t,
            stdin: child.stdin.take(),
            lines,
            tail,
            tail_thread,
            ended: false,
            exited: false,
        })
    }

    /// Writes `request` as one line; with `last`, closes the pipe after
    /// it (the worker exits after answering). A worker that died before
    /// reading shows up as a crash when its events are read.
    pub(super) fn send(&mut self, request: &WorkerRequest, last: bool) {
        if let (Some(stdin), Ok(line)) = (self.stdin.as_mut(), serde_json::to_string(request)) {
            let _ = stdin
                .write_all(line.as_bytes())
                .and_then(|_| stdin.write_all(b"\n"))
                .and_then(|_| stdin.flush());
        }
        if last {
            self.stdin = None;
        }
    }

    /// Whether the worker is still running. One that exited while it
    /// waited for a request (its benchmark's code crashing the interpreter
    /// at shutdown, say) is reaped here: the next request goes to a fresh
    /// worker rather than reporting that exit as its own crash.
    pub(super) fn running(&mut self) -> bool {
        if self.ended || self.exited {
            return false;
        }
        self.exited = try_reap(self.pid).is_some();
        !self.exited
    }

    /// The stderr lines kept so far.
    pub(super) fn tail(&self) -> Vec<String> {
        self.tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets the stderr lines kept so far (a new request's crash report
    /// quotes its own).
    pub(super) fn clear_tail(&self) {
        if let Ok(mut t) = self.tail.lock() {
            t.clear();
        }
    }

    /// Ends the worker: with `gently`, its stdin closed and up to
    /// [`EXIT_GRACE`] to exit by itself; otherwise (or past that) SIGTERM
    /// then SIGKILL to its group. Whatever it left in its group goes too,
    /// and its stderr is read to the end. How it ended, once reaped.
    pub(super) fn end(&mut self, gently: bool) -> Option<Reaped> {
        if self.ended {
            return None;
        }
        self.ended = true;
        self.stdin = None;
        let reaped = if self.exited {
            None
        } else if gently {
            wait_or_kill(self.pid, EXIT_GRACE)
        } else {
            kill_group(self.pid)
        };
        // SAFETY: kill with a negative pid signals the process group; ESRCH is harmless.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        if let Some(t) = self.tail_thread.take() {
            let _ = t.join();
        }
        reaped
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.end(true);
    }
}

/// One benchmark's worker, kept from one trial to the next: the first
/// request ([`crate::supervisor::supervise_in`]) starts it, each later one
/// goes to the same process (and the benchmark it keeps, see
/// [`crate::Benchmark::runs_again`]), a trial that does not end with a
/// result (a crash, a time limit, an interrupt) stops it and the next
/// starts a fresh one, and dropping the last clone ends it. Isolation
/// stays per benchmark: no other benchmark ever runs in it.
#[derive(Clone, Default)]
pub struct KeptWorker(Arc<Mutex<Option<Session>>>);

impl KeptWorker {
    /// A slot with no worker yet.
    pub fn new() -> Self {
        Self::default()
    }

    pub(super) fn slot(&self) -> MutexGuard<'_, Option<Session>> {
        // A panic while it was held leaves a session or none: either is usable.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a worker is running in it now.
    pub fn is_running(&self) -> bool {
        self.slot().is_some()
    }

    /// The running worker's pid, if any.
    pub fn pid(&self) -> Option<u32> {
        self.slot().as_ref().map(|s| s.pid as u32)
    }
}

impl std::fmt::Debug for KeptWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptWorker")
            .field("pid", &self.pid())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::supervisor::process::Exit;

    /// A stand-in worker that echoes its requests until stdin closes.
    fn echo_worker(dir: &Path) -> std::path::PathBuf {
        let exe = dir.join("worker.sh");
        std::fs::write(&exe, "#!/bin/sh\nexec cat\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        exe
    }

    fn request() -> WorkerRequest {
        WorkerRequest {
            id: warpt_model::BenchmarkId::new("s", "b"),
            params: Default::default(),
            seed: 1,
            duration_s: 0.1,
            burnin_s: 0.0,
            target_rel_ci: 0.05,
            clock_probe: None,
            probe: false,
        }
    }

    #[test]
    fn a_kept_worker_takes_requests_until_its_stdin_closes() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::start(&echo_worker(dir.path()), None, "b").unwrap();
        for _ in 0..2 {
            s.send(&request(), false);
            let line = s.lines.recv().unwrap();
            assert_eq!(
                serde_json::from_str::<WorkerRequest>(&line).unwrap(),
                request()
            );
            assert!(s.running());
        }
        // Closing stdin lets it exit by itself, with status 0.
        let reaped = s.end(true).unwrap();
        assert_eq!(reaped.exit, Exit::Code(0));
        assert!(!s.running());
    }

    #[test]
    fn a_worker_that_died_between_requests_is_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::start(&echo_worker(dir.path()), None, "b").unwrap();
        assert!(s.running());
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(s.pid, libc::SIGKILL) };
        let mut checks = 0;
        while s.running() {
            checks += 1;
            assert!(checks < 100_000, "a killed worker still runs");
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        // Reaped already: ending it has nothing to wait for.
        assert!(s.end(true).is_none());
    }
}
