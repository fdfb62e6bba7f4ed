//! The driver's side of the benchmark protocol: starts an adapter process
//! for one benchmark file and asks it, one request at a time, to load,
//! set up, time a number of calls, validate and tear down.
//!
//! Requests and replies are JSON objects, one per line, on the adapter's
//! stdin and stdout (or, for an adapter that is already running, such as
//! the pytest plugin's, on a Unix socket it listens on: one connection per
//! benchmark); every reply has `ok`, and `error` (with `traceback` where
//! the language has one) when it is false. The stopping rule stays
//! here, in warpt: the adapter only times the calls it is asked for, with
//! its language's monotonic clock (Python: `perf_counter_ns`).
//!
//! Python's adapter ships inside the binary ([`PYTHON_ADAPTER`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod reply;
pub use reply::{Output, Timed, parse_reply};

/// The Python adapter's source, run with `python3 -c`.
pub const PYTHON_ADAPTER: &str = include_str!("adapter/warpt_adapter.py");

/// What can go wrong talking to an adapter.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The interpreter could not be started.
    #[error("starting {program}: {source}")]
    Spawn {
        /// The interpreter.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The pipe to or from the adapter failed.
    #[error("talking to the adapter: {0}")]
    Io(#[from] std::io::Error),
    /// The adapter exited (crashed, or was killed) before replying.
    #[error("the adapter exited before replying to '{op}' ({status})")]
    Exited {
        /// The request left unanswered.
        op: String,
        /// Its exit status, as the OS reports it.
        status: String,
    },
    /// A reply that is not the protocol's.
    #[error("the adapter replied to '{op}' with {reply:?}, not a protocol reply")]
    Garbled {
        /// The request.
        op: String,
        /// What came back.
        reply: String,
    },
    /// The benchmark cannot run here as configured (a timing mode whose
    /// library or device is missing): a skip, not a failure.
    #[error("{op}: {reason}")]
    Skipped {
        /// The request that found it out.
        op: String,
        /// Why.
        reason: String,
    },
    /// The user's code raised an error.
    #[error("{op}: {message}")]
    User {
        /// The request that ran the code (`load`, `setup`, `run`, ...).
        op: String,
        /// The error, as the language prints it.
        message: String,
        /// Its traceback, where there is one.
        traceback: Option<String>,
    },
}

/// How the adapter loads a benchmark.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Keyword arguments for whichever of `get_benchmark()`, the class or
    /// `run_benchmark()` takes them (a bench.yaml combination).
    pub kwargs: serde_json::Map<String, Value>,
    /// `--reproducible`: the seed for every generator the file imported
    /// (and `PYTHONHASHSEED`).
    pub reproducible: Option<u64>,
    /// Run settings from flags (`timing`, `cold_cache`, `device_hygiene`,
    /// ...): they beat the benchmark's `get_config()`.
    pub settings: serde_json::Map<String, Value>,
    /// The same settings from bench.yaml: `get_config()` beats them.
    pub defaults: serde_json::Map<String, Value>,
    /// Environment for the adapter (fresh compiled-cache directories under
    /// `--cold-start`).
    pub env: Vec<(String, std::path::PathBuf)>,
}

/// A running adapter with one benchmark loaded.
pub struct Driver {
    /// The adapter's process, when this driver started it (`None` for a
    /// socket's adapter, which outlives the connection).
    child: Option<Child>,
    requests: Box<dyn Write + Send>,
    replies: BufReader<Box<dyn Read + Send>>,
    /// The descriptor `replies` reads, to ask whether a reply is waiting
    /// without reading it ([`Driver::reply_waiting`]).
    reply_fd: std::os::fd::RawFd,
    config: Value,
    timing: Option<String>,
    cold_cache: bool,
    /// The adapter takes a `run`'s samples through a shared file
    /// ([`crate::shared`]): its `load` reply said `shared_samples`.
    shares_samples: bool,
    /// Each `run` request sent ahead ([`Driver::send_ahead`]) whose reply
    /// is not read yet, oldest first.
    ahead: std::collections::VecDeque<Ahead>,
    /// When the oldest request sent ahead began to run, as far as warpt
    /// can tell: when it was sent, or when the one before it ended by its
    /// own samples.
    ahead_since: Option<Instant>,
    /// The closing requests sent ahead ([`Driver::send_closing`]) whose
    /// replies are not read yet, in order (after those of `ahead`).
    closing: std::collections::VecDeque<&'static str>,
}

/// A `run` request sent ahead.
#[derive(Debug, Clone, Copy)]
struct Ahead {
    /// Calls per sample.
    calls: u64,
    /// Samples asked for.
    samples: u64,
    /// When it was sent.
    sent: Instant,
}

/// How a channel to an adapter opens ([`Driver::load`]).
enum Opening<'a> {
    /// A started process: `load`, and `setup` later on its own.
    Process,
    /// A listening adapter's socket: `load` and `setup` in one write, and
    /// with `first` the speculative shared run behind them.
    Socket {
        first: Option<&'a crate::shared::SharedSamples>,
    },
}

impl Driver {
    /// Starts `python` (e.g. `python3`) on the embedded adapter and loads
    /// the benchmark in `file`.
    pub fn python(python: &str, file: &Path) -> Result<Self, DriverError> {
        Self::python_with(python, file, &LoadOptions::default())
    }

    /// [`Driver::python`] with load options.
    pub fn python_with(
        python: &str,
        file: &Path,
        options: &LoadOptions,
    ) -> Result<Self, DriverError> {
        Self::start_with(Self::python_command(python, options), python, file, options)
    }

    /// The command that starts the Python adapter (for wrapping it in a
    /// profiler).
    pub fn python_command(python: &str, options: &LoadOptions) -> Command {
        let mut cmd = Command::new(python);
        cmd.arg("-c").arg(PYTHON_ADAPTER);
        for (k, v) in &options.env {
            cmd.env(k, v);
        }
        if let Some(seed) = options.reproducible {
            cmd.env("PYTHONHASHSEED", (seed % (u32::MAX as u64)).to_string());
        }
        cmd
    }

    /// The command that starts the adapter `line` names (a bench.yaml
    /// `command`, `{file}` already replaced), under `sh -c` in `file`'s
    /// directory.
    pub fn shell_command(line: &str, file: &Path, options: &LoadOptions) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(line);
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            cmd.current_dir(dir);
        }
        for (k, v) in &options.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Starts `cmd`, an adapter for any language, and loads `file` in it.
    pub fn start(cmd: Command, program: &str, file: &Path) -> Result<Self, DriverError> {
        Self::start_with(cmd, program, file, &LoadOptions::default())
    }

    /// [`Driver::start`] with load options.
    pub fn start_with(
        cmd: Command,
        program: &str,
        file: &Path,
        options: &LoadOptions,
    ) -> Result<Self, DriverError> {
        Self::attach(Self::spawn(cmd, program)?, file, options)
    }

    /// Starts the adapter with `cmd` in a process group of its own and
    /// hands the driver (or why it failed to load) to `work` on a thread of
    /// its own; kills the group if `work` has not returned within `limit`
    /// (a hung import, setup or call): `None` then. `Err` when the adapter
    /// cannot be started.
    pub fn start_limited<T: Send + 'static>(
        mut cmd: Command,
        program: &str,
        file: &Path,
        options: &LoadOptions,
        limit: std::time::Duration,
        work: impl FnOnce(Result<Driver, DriverError>) -> T + Send + 'static,
    ) -> Result<Option<T>, DriverError> {
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = Self::spawn(cmd, program)?;
        let pid = child.id() as libc::pid_t;
        let (tx, rx) = std::sync::mpsc::channel();
        let (file, options) = (file.to_path_buf(), options.clone());
        std::thread::spawn(move || {
            let _ = tx.send(work(Self::attach(child, &file, &options)));
        });
        match rx.recv_timeout(limit) {
            Ok(done) => Ok(Some(done)),
            Err(_) => {
                // SAFETY: signalling the adapter's own process group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                Ok(None)
            }
        }
    }

    /// Starts the adapter with piped stdin and stdout (stderr inherited
    /// unless `cmd` says otherwise).
    fn spawn(mut cmd: Command, program: &str) -> Result<Child, DriverError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|source| DriverError::Spawn {
                program: program.to_string(),
                source,
            })
    }

    /// Connects to an adapter listening on the Unix socket `socket` (the
    /// pytest plugin's), loads the benchmark it knows as `name` and sets it
    /// up: both requests sent at once, since such an adapter's `setup` runs
    /// nothing of the user's (after a failed `load` it closes the
    /// connection unread). The connection is this benchmark's:
    /// [`Driver::finish`] or dropping the driver ends it, not the adapter.
    pub fn connect(socket: &Path, name: &str, options: &LoadOptions) -> Result<Self, DriverError> {
        Self::connect_sharing(socket, name, options, None)
    }

    /// [`Driver::connect`], and with `first` a speculative shared `run`
    /// of one call behind `load` and `setup`, in the same write
    /// (docs/protocol.md): an adapter whose `load` reply says
    /// `shared_samples` starts timing as soon as it is set up, and warpt
    /// raises the limit (one sample) while that first call runs; any
    /// other answers it without calling anything (or, predating it, times
    /// the one call). Either way its reply waits among the runs sent
    /// ahead.
    pub fn connect_sharing(
        socket: &Path,
        name: &str,
        options: &LoadOptions,
        first: Option<&crate::shared::SharedSamples>,
    ) -> Result<Self, DriverError> {
        let stream = UnixStream::connect(socket).map_err(|source| DriverError::Spawn {
            program: format!("the adapter at {}", socket.display()),
            source,
        })?;
        let replies = stream.try_clone()?;
        let fd = replies.as_raw_fd();
        Self::load(
            None,
            Box::new(stream),
            (Box::new(replies), fd),
            Path::new(name),
            options,
            Opening::Socket { first },
        )
    }

    /// Takes over a started adapter and loads `file` in it.
    fn attach(mut child: Child, file: &Path, options: &LoadOptions) -> Result<Self, DriverError> {
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(DriverError::Io(std::io::Error::other(
                "no pipes to the adapter",
            )));
        };
        let fd = stdout.as_raw_fd();
        Self::load(
            Some(child),
            Box::new(stdin),
            (Box::new(stdout), fd),
            file,
            options,
            Opening::Process,
        )
    }

    /// Sends `load` over a fresh channel (on a socket with `setup` and the
    /// speculative first run right behind it, see [`Opening`]) and keeps
    /// what the reply settles.
    fn load(
        child: Option<Child>,
        requests: Box<dyn Write + Send>,
        (replies, reply_fd): (Box<dyn Read + Send>, std::os::fd::RawFd),
        file: &Path,
        options: &LoadOptions,
        opening: Opening<'_>,
    ) -> Result<Self, DriverError> {
        let (set_up, first) = match opening {
            Opening::Process => (false, None),
            Opening::Socket { first } => (true, first),
        };
        let mut driver = Driver {
            child,
            requests,
            replies: BufReader::new(replies),
            reply_fd,
            config: Value::Null,
            timing: None,
            cold_cache: false,
            shares_samples: false,
            ahead: Default::default(),
            ahead_since: None,
            closing: Default::default(),
        };
        let mut ops = vec![Self::load_request(file, options)];
        if set_up {
            ops.push(json!({"op": "setup"}));
        }
        // The speculative run: one sample of one call to begin with.
        let ahead = first.map(|shared| {
            let mut run = Self::shared_run(1, 1, shared);
            run["speculative"] = json!(true);
            run
        });
        let mut replies = driver.requests(&ops, ahead.as_ref()).into_iter();
        let reply = next_reply(&mut replies)?;
        if set_up {
            next_reply(&mut replies)?;
        }
        driver.config = reply.get("config").cloned().unwrap_or(Value::Null);
        driver.timing = reply
            .get("timing")
            .and_then(Value::as_str)
            .map(str::to_string);
        driver.cold_cache = reply
            .get("cold_cache")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        driver.shares_samples = reply
            .get("shared_samples")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(driver)
    }

    /// The `load` request for `file` with `options`: the first line an
    /// adapter reads.
    pub fn load_request(file: &Path, options: &LoadOptions) -> Value {
        let mut load = json!({"op": "load", "path": file, "kwargs": options.kwargs,
            "settings": options.settings, "defaults": options.defaults});
        if let Some(seed) = options.reproducible {
            load["reproducible"] = json!(true);
            load["seed"] = json!(seed);
        }
        load
    }

    /// What the benchmark's `get_config()` returned (an empty object
    /// without one).
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// The timing mode the adapter settled on at load (`host`, `device`,
    /// `pytorch`, `triton`); `None` from an adapter that does not say.
    pub fn timing(&self) -> Option<&str> {
        self.timing.as_deref()
    }

    /// Whether the adapter's own timer picks how many calls a sample holds
    /// (pytorch's blocked_autorange, triton's do_bench), so the driver's
    /// calibration is moot.
    pub fn self_batching(&self) -> bool {
        matches!(self.timing(), Some("pytorch" | "triton"))
    }

    /// Whether the adapter takes a `run`'s samples through a shared file
    /// ([`Driver::send_shared`]).
    pub fn shares_samples(&self) -> bool {
        self.shares_samples
    }

    /// Whether the adapter flushes the cache before every call
    /// (`cold_cache`), timing each call on its own.
    pub fn cold_cache(&self) -> bool {
        self.cold_cache
    }

    /// Runs `setup()`.
    pub fn setup(&mut self) -> Result<(), DriverError> {
        self.request(json!({"op": "setup"})).map(drop)
    }

    /// Times `calls` calls of `benchmark_fn()`: total nanoseconds. Their
    /// returns count (outputs, `ttft_times_ms`, ...).
    pub fn run(&mut self, calls: u64) -> Result<u64, DriverError> {
        self.timed(calls, true).map(|t| t.total_ns())
    }

    /// [`Driver::run`] for warm-up and calibration: returned latencies are
    /// not collected.
    pub fn warm(&mut self, calls: u64) -> Result<u64, DriverError> {
        self.timed(calls, false).map(|t| t.total_ns())
    }

    /// Times `calls` calls (fewer or more where the adapter's timer picks
    /// its own batches) as the adapter's timing mode does: the samples it
    /// took. `record`: their returns count.
    pub fn timed(&mut self, calls: u64, record: bool) -> Result<Timed, DriverError> {
        let reply = self.request(json!({"op": "run", "calls": calls, "record": record}))?;
        Timed::from_reply(&reply, calls)
    }

    /// Sends a `run` of `samples` samples of `calls` calls each (`record`:
    /// as in [`Driver::timed`]) without waiting for its reply
    /// ([`Driver::take_ahead`] reads the replies in order). The adapter
    /// answers requests in order, so with the next request sent while it
    /// times the current one, it goes from one batch to the next without
    /// waiting for warpt: a round trip between two processes that were each
    /// idle (about 0.4 ms on a 2-vCPU KVM guest, where each side's wake-up
    /// goes through the host) is spent while it times, not between
    /// samples; and several samples in one request wake warpt once. Any
    /// other request first reads and drops these replies.
    pub fn send_ahead(
        &mut self,
        calls: u64,
        samples: u64,
        record: bool,
    ) -> Result<(), DriverError> {
        let mut request = json!({"op": "run", "calls": calls, "record": record});
        if samples > 1 {
            // An adapter that predates `samples` times one, which is
            // still a sample: warpt asks again for the rest.
            request["samples"] = json!(samples);
        }
        self.send_run(&request, calls, samples)
    }

    /// [`Driver::send_ahead`] of a `run` whose samples the adapter writes
    /// to `shared` as it takes them (docs/protocol.md), going on while they
    /// number fewer than the limit written there (which warpt may raise
    /// meanwhile), `limit` at first, each batch of the calls written there
    /// (`calls` at first); its reply says how many it took
    /// ([`Driver::take_shared`]). The file is reset for it.
    pub fn send_shared(
        &mut self,
        calls: u64,
        limit: u64,
        shared: &crate::shared::SharedSamples,
    ) -> Result<(), DriverError> {
        let request = Self::shared_run(calls, limit, shared);
        self.send_run(&request, calls, limit)
    }

    /// The `run` of [`Driver::send_shared`], its file reset for it.
    fn shared_run(calls: u64, limit: u64, shared: &crate::shared::SharedSamples) -> Value {
        shared.reset(limit, calls);
        json!({"op": "run", "calls": calls, "record": true, "samples": limit.max(1),
            "shared": shared.path()})
    }

    /// The reply to the oldest `run` sent ahead, read as a shared one's
    /// ([`Driver::send_shared`]): the samples the adapter took.
    pub fn take_shared(&mut self) -> Option<Result<u64, DriverError>> {
        self.ahead.pop_front()?;
        self.ahead_since = self.ahead.front().map(|next| next.sent);
        Some(self.receive("run").and_then(|reply| {
            reply
                .get("taken")
                .and_then(Value::as_u64)
                .ok_or_else(|| DriverError::Garbled {
                    op: "run".into(),
                    reply: reply.to_string(),
                })
        }))
    }

    /// Sends the `run` request `request` (of `samples` samples of `calls`
    /// calls) and counts it as sent ahead.
    fn send_run(&mut self, request: &Value, calls: u64, samples: u64) -> Result<(), DriverError> {
        self.send(request)?;
        self.count_ahead(calls, samples);
        Ok(())
    }

    /// Counts a `run` just sent (of `samples` samples of `calls` calls)
    /// as sent ahead.
    fn count_ahead(&mut self, calls: u64, samples: u64) {
        let sent = Instant::now();
        if self.ahead.is_empty() {
            self.ahead_since = Some(sent);
        }
        self.ahead.push_back(Ahead {
            calls,
            samples: samples.max(1),
            sent,
        });
    }

    /// Whether a reply (or the end of the channel) is waiting to be read,
    /// waiting up to `within` for one (without reading it).
    pub fn reply_waiting(&self, within: Duration) -> bool {
        if !self.replies.buffer().is_empty() {
            return true;
        }
        let mut fd = libc::pollfd {
            fd: self.reply_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = libc::timespec {
            tv_sec: within.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(within.subsec_nanos() as i32),
        };
        // SAFETY: one valid pollfd, for a descriptor `replies` owns, and a
        // valid timeout; no signal mask given.
        unsafe { libc::ppoll(&mut fd, 1, &timeout, std::ptr::null()) > 0 }
    }

    /// The samples asked for by requests sent ahead whose replies are not
    /// read yet.
    pub fn ahead(&self) -> u64 {
        self.ahead.iter().map(|a| a.samples).sum()
    }

    /// The reply to the oldest `run` sent ahead, if one is unread: what
    /// [`Driver::timed`] would have returned for it.
    pub fn take_ahead(&mut self) -> Option<Result<Timed, DriverError>> {
        let taken = self.ahead.pop_front()?;
        let timed = self
            .receive("run")
            .and_then(|reply| Timed::from_reply(&reply, taken.calls));
        // The next one started when it was sent or when this one's samples
        // ended, whichever came later: not when this reply was read, which
        // may be late by a sleep's margin (and the margins would add up).
        let ended = match (&timed, self.ahead_since) {
            (Ok(t), Some(since)) => since + Duration::from_nanos(t.total_ns()),
            _ => Instant::now(),
        };
        self.ahead_since = self.ahead.front().map(|next| next.sent.max(ended));
        Some(timed)
    }

    /// [`Driver::take_ahead`] for samples that take at least `sample`
    /// each: sleeps until the oldest request could be done, then reads its
    /// reply. A reader blocked on the connection is woken by the adapter's
    /// write, and on a virtual machine that wake-up (an interrupt to an
    /// idle vCPU, through the host) costs the adapter 0.1-0.3 ms per reply,
    /// in the middle of its timing; a reply written while warpt sleeps
    /// wakes nobody. The adapter does not wait meanwhile: the next request
    /// is already queued behind this one (without one, it reads at once).
    pub fn take_ahead_due(&mut self, sample: Duration) -> Option<Result<Timed, DriverError>> {
        // With nothing queued behind it, the adapter would idle through a
        // late wake-up: read at once.
        let queued = self.ahead.len() > 1;
        if let (true, Some(since), Some(oldest)) = (queued, self.ahead_since, self.ahead.front()) {
            let samples = u32::try_from(oldest.samples).unwrap_or(u32::MAX);
            let expected = sample.saturating_mul(samples);
            let due = since + expected;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        self.take_ahead()
    }

    /// Reads and drops the replies to requests sent ahead (a measurement
    /// that stopped without them, or a speculative run the adapter
    /// declined), so the next reply read is the next request's.
    pub fn settle(&mut self) {
        // Their calls ran and nobody takes the time; an error in them (the
        // user's code, or the adapter gone) shows again in the next request.
        while self.take_ahead().is_some() {}
    }

    /// [`Driver::settle`], and the closing requests' replies too, so a
    /// request after them reads its own reply.
    fn settle_all(&mut self) {
        self.settle();
        while let Some(sent) = self.closing.pop_front() {
            // As for the runs: an error shows again in the next request.
            let _ = self.receive(sent);
        }
    }

    /// Sends what follows a measurement (`output` to `path`, `validate`,
    /// `teardown` and, with `exit`, a socket's `exit`) behind the runs
    /// still under way, without waiting: when the adapter is done timing
    /// it finds them queued instead of waiting for warpt to notice the end
    /// of its last run, finish the series' statistics and ask. Their
    /// replies are read by [`Driver::output`], [`Driver::validate_and_teardown`],
    /// [`Driver::teardown`] and [`Driver::finish`], whichever comes first
    /// reading (and dropping) those before it. Only where nothing else is
    /// asked of the adapter between output and validation (not a harness
    /// file, whose accuracy check calls its reference in between).
    pub fn send_closing(&mut self, path: Option<&Path>, exit: bool) -> Result<(), DriverError> {
        let mut ops: Vec<(&'static str, Value)> = vec![
            ("output", json!({"op": "output", "path": path})),
            ("validate", json!({"op": "validate"})),
            ("teardown", json!({"op": "teardown"})),
        ];
        if exit {
            ops.push(("exit", json!({"op": "exit"})));
        }
        // One write: one wake-up of the adapter's reader, not four.
        let mut lines = String::new();
        for (_, op) in &ops {
            lines.push_str(&op.to_string());
            lines.push('\n');
        }
        self.requests.write_all(lines.as_bytes())?;
        self.requests.flush()?;
        self.closing.extend(ops.into_iter().map(|(name, _)| name));
        Ok(())
    }

    /// The reply to the closing request `op` if it was sent
    /// ([`Driver::send_closing`]): the runs and closing requests before it
    /// are read and dropped first. `None` when it was not sent.
    fn take_closing(&mut self, op: &str) -> Option<Result<Value, DriverError>> {
        self.settle();
        while let Some(sent) = self.closing.pop_front() {
            let reply = self.receive(sent);
            if sent == op {
                return Some(reply);
            }
        }
        None
    }

    /// What the benchmark returned and used: latency lists, peak memory,
    /// and the last call's numbers, written as a JSON array to `path`.
    pub fn output(&mut self, path: Option<&Path>) -> Result<Output, DriverError> {
        let reply = match self.take_closing("output") {
            Some(reply) => reply?,
            None => self.request(json!({"op": "output", "path": path}))?,
        };
        Output::from_reply(&reply)
    }

    /// Calls the reference function `function` (in `file`, else in the
    /// loaded benchmark's file) with `kwargs` and writes the numbers it
    /// returns to `out` as a JSON array: how many there were. Python's
    /// adapter only (bench.yaml `reference`).
    pub fn reference(
        &mut self,
        file: Option<&Path>,
        function: &str,
        kwargs: &serde_json::Map<String, Value>,
        out: &Path,
    ) -> Result<u64, DriverError> {
        let reply = self.request(json!({
            "op": "reference",
            "file": file,
            "function": function,
            "kwargs": kwargs,
            "path": out,
        }))?;
        Ok(reply.get("count").and_then(Value::as_u64).unwrap_or(0))
    }

    /// Runs `validate_result()`: what it says is wrong, if anything.
    pub fn validate(&mut self) -> Result<Option<String>, DriverError> {
        let reply = self.request(json!({"op": "validate"}))?;
        Ok(reply
            .get("problem")
            .and_then(Value::as_str)
            .map(str::to_string))
    }

    /// Runs `setup()` again in an adapter whose earlier trial was torn
    /// down, its last output and per-request latencies forgotten, and with
    /// `seed` (`--reproducible`) the generators the file imported seeded
    /// again first, as its load seeded them.
    pub fn setup_again(&mut self, seed: Option<u64>) -> Result<(), DriverError> {
        self.request(json!({"op": "setup", "again": true, "seed": seed}))
            .map(drop)
    }

    /// Runs `teardown()`.
    pub fn teardown(&mut self) -> Result<(), DriverError> {
        match self.take_closing("teardown") {
            Some(reply) => reply.map(drop),
            None => self.request(json!({"op": "teardown"})).map(drop),
        }
    }

    /// Runs `validate_result()` and `teardown()`, and with `exit` ends the
    /// connection (a socket's adapter, [`Driver::finish`]): the requests
    /// sent at once, so the adapter answers one after the other without
    /// waiting for warpt (teardown runs whatever validation said). What
    /// validation says is wrong, if anything; then teardown's outcome (and
    /// exit's).
    pub fn validate_and_teardown(
        &mut self,
        exit: bool,
    ) -> (Result<Option<String>, DriverError>, Result<(), DriverError>) {
        let problem_of = |reply: Value| {
            reply
                .get("problem")
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        if let Some(validated) = self.take_closing("validate") {
            // Sent at the measurement's end (the exit with them, if asked).
            let mut closed = self.teardown();
            if exit {
                closed = closed.and(self.take_exit());
            }
            return (validated.map(problem_of), closed);
        }
        let mut ops = vec![json!({"op": "validate"}), json!({"op": "teardown"})];
        if exit {
            ops.push(json!({"op": "exit"}));
        }
        let mut replies = self.requests(&ops, None).into_iter();
        let problem = next_reply(&mut replies).map(problem_of);
        let mut closed = next_reply(&mut replies).map(drop);
        if exit {
            closed = closed.and(next_reply(&mut replies).map(drop));
        }
        (problem, closed)
    }

    /// Asks the adapter to exit (a socket's adapter: to end this
    /// benchmark's connection) and waits for it.
    pub fn finish(mut self) -> Result<(), DriverError> {
        self.take_exit()?;
        if let Some(child) = self.child.as_mut() {
            child.wait()?;
        }
        Ok(())
    }

    /// Ends the connection or the adapter: the reply to the `exit` sent
    /// with the closing requests, else a fresh `exit`'s.
    fn take_exit(&mut self) -> Result<(), DriverError> {
        match self.take_closing("exit") {
            Some(reply) => reply.map(drop),
            None => self.request(json!({"op": "exit"})).map(drop),
        }
    }

    /// Sends one request and reads its reply; an error reply becomes
    /// [`DriverError::User`].
    fn request(&mut self, request: Value) -> Result<Value, DriverError> {
        self.settle_all();
        self.send(&request)?;
        self.receive(request["op"].as_str().unwrap_or("?"))
    }

    /// Sends `ops` at once, then reads their replies in turn (an error
    /// reply is [`DriverError::User`] for that request alone): the adapter
    /// answers them back to back instead of waiting for warpt between them.
    /// With `ahead`, a `run` goes in the same write behind them, its reply
    /// left among the runs sent ahead.
    fn requests(
        &mut self,
        ops: &[Value],
        ahead: Option<&Value>,
    ) -> Vec<Result<Value, DriverError>> {
        self.settle_all();
        // One write: one wake-up of the adapter's reader.
        let mut lines = String::new();
        for op in ops.iter().chain(ahead) {
            lines.push_str(&op.to_string());
            lines.push('\n');
        }
        if let Err(e) = self
            .requests
            .write_all(lines.as_bytes())
            .and_then(|()| self.requests.flush())
        {
            return vec![Err(e.into())];
        }
        if let Some(run) = ahead {
            let count = |key: &str| run.get(key).and_then(Value::as_u64).unwrap_or(1);
            self.count_ahead(count("calls"), count("samples"));
        }
        ops.iter()
            .map(|op| self.receive(op["op"].as_str().unwrap_or("?")))
            .collect()
    }

    /// Writes one request line.
    fn send(&mut self, request: &Value) -> Result<(), DriverError> {
        // One write per request: `Value`'s Display writes token by token,
        // which on an unbuffered pipe or socket is a system call (and a
        // wake-up of the adapter's reader) per token.
        let mut line = request.to_string();
        line.push('\n');
        self.requests.write_all(line.as_bytes())?;
        self.requests.flush()?;
        Ok(())
    }

    /// Reads the reply to the request `op` sent last.
    fn receive(&mut self, op: &str) -> Result<Value, DriverError> {
        let op = op.to_string();
        let mut line = String::new();
        if self.replies.read_line(&mut line)? == 0 {
            let status = match self.child.as_mut() {
                Some(child) => child.wait()?.to_string(),
                None => "it closed the connection".to_string(),
            };
            return Err(DriverError::Exited { op, status });
        }
        parse_reply(&op, &line)
    }
}

/// The next of [`Driver::requests`]' replies (it gives one per request
/// sent, then the send's failure, so running out is never expected).
fn next_reply(
    replies: &mut impl Iterator<Item = Result<Value, DriverError>>,
) -> Result<Value, DriverError> {
    replies
        .next()
        .unwrap_or_else(|| Err(DriverError::Io(std::io::Error::other("no reply"))))
}

impl Drop for Driver {
    fn drop(&mut self) {
        // An adapter left running (an error path) must not outlive us; a
        // socket's adapter is not ours, and sees the connection close.
        if let Some(child) = self.child.as_mut()
            && let Ok(None) = child.try_wait()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests;
