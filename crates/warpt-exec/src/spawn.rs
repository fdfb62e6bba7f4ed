//! One run of one command: spawned, reaped with wait4(2), measured.
//!
//! The wall time runs from just before the spawn to just after the reap,
//! as hyperfine measures it; user and system CPU time and the peak
//! resident set come from the child's rusage. A run past its time limit
//! has its process group killed by a watchdog thread (started once, so a
//! run costs no extra thread).

use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::ExecError;

/// Where a run's output goes (`--output`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Discarded by the kernel (`/dev/null`), hyperfine's default.
    Null,
    /// Read by warpt and discarded: the command writes into a pipe.
    Pipe,
    /// Warpt's own stdout and stderr.
    Inherit,
    /// Appended to this file.
    File(PathBuf),
    /// Kept for the caller ([`Spawn::run_captured`]): stdout read from a
    /// pipe, as `Pipe` reads it, stderr written to an unnamed temporary
    /// file and read back after the reap (outside the timed region).
    Capture,
}

impl Output {
    /// `--output`'s value: `null`, `pipe`, `inherit`, or a file to append to.
    pub fn parse(s: &str) -> Output {
        match s {
            "null" => Output::Null,
            "pipe" => Output::Pipe,
            "inherit" => Output::Inherit,
            file => Output::File(file.into()),
        }
    }
}

/// What a run wrote, with [`Output::Capture`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: Vec<u8>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this status.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Killed by warpt at the time limit.
    TimedOut,
}

impl Exit {
    /// Exited with status 0.
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit status {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
            Exit::TimedOut => f.write_str("killed at the time limit"),
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Spawn to reap, seconds.
    pub wall_s: f64,
    /// User CPU time, seconds.
    pub user_s: f64,
    /// System CPU time, seconds.
    pub sys_s: f64,
    /// Peak resident set, bytes.
    pub peak_rss_bytes: f64,
    /// How it ended.
    pub exit: Exit,
}

/// A command ready to spawn: argv, stdin file, output.
#[derive(Debug, Clone)]
pub struct Spawn {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// `--input`: a file on stdin (stdin is /dev/null otherwise).
    pub input: Option<PathBuf>,
    /// `--output`.
    pub output: Output,
    /// Whether the command leads a process group of its own, so a time
    /// limit kills everything it started (`warpt exec`). A benchmark run
    /// inside warpt's worker stays in the worker's group instead, so the
    /// supervisor's stage timeout, which kills that group, reaches it too.
    pub own_group: bool,
    /// The directory it runs in (warpt's own when `None`).
    pub cwd: Option<PathBuf>,
}

/// The watchdog's view of the run in progress.
struct Watch {
    /// What to kill: the child's pid, or minus the group it leads; 0 for none.
    pid: AtomicI32,
    deadline_ns: AtomicU64,
    fired: AtomicBool,
    start: Instant,
}

fn watchdog() -> &'static Watch {
    static W: OnceLock<Arc<Watch>> = OnceLock::new();
    W.get_or_init(|| {
        let w = Arc::new(Watch {
            pid: AtomicI32::new(0),
            deadline_ns: AtomicU64::new(u64::MAX),
            fired: AtomicBool::new(false),
            start: Instant::now(),
        });
        let w2 = Arc::clone(&w);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(10));
                let target = w2.pid.load(Ordering::SeqCst);
                let now = w2.start.elapsed().as_nanos() as u64;
                if target != 0 && now >= w2.deadline_ns.load(Ordering::SeqCst) {
                    w2.fired.store(true, Ordering::SeqCst);
                    // SAFETY: kill(2) on our own child, or (negative) on
                    // the process group it leads.
                    unsafe { libc::kill(target, libc::SIGKILL) };
                    w2.pid.store(0, Ordering::SeqCst);
                }
            }
        });
        w
    })
}

impl Spawn {
    fn command(&self) -> Result<(Command, Option<File>), ExecError> {
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| ExecError::Usage("an empty command".into()))?;
        let mut cmd = Command::new(program);
        cmd.args(args);
        if self.own_group {
            cmd.process_group(0);
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let io = |what: &str, e: std::io::Error| ExecError::Io(format!("{what}: {e}"));
        match &self.input {
            Some(p) => {
                cmd.stdin(File::open(p).map_err(|e| io(&format!("--input {}", p.display()), e))?);
            }
            None => {
                cmd.stdin(Stdio::null());
            }
        }
        match &self.output {
            Output::Null => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
            Output::Pipe => {
                cmd.stdout(Stdio::piped()).stderr(Stdio::null());
            }
            Output::Inherit => {
                cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
            }
            Output::File(p) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| io(&format!("--output {}", p.display()), e))?;
                let f2 = f
                    .try_clone()
                    .map_err(|e| io(&format!("--output {}", p.display()), e))?;
                cmd.stdout(f).stderr(f2);
            }
            Output::Capture => {
                let f = tempfile::tempfile().map_err(|e| io("a file for stderr", e))?;
                let f2 = f.try_clone().map_err(|e| io("a file for stderr", e))?;
                cmd.stdout(Stdio::piped()).stderr(f2);
                return Ok((cmd, Some(f)));
            }
        }
        Ok((cmd, None))
    }

    /// Runs once; `limit` kills it (and its group) when exceeded.
    pub fn run(&self, limit: Option<Duration>) -> Result<Sample, ExecError> {
        self.run_inner(limit, None)
    }

    /// Runs once, as [`run`](Self::run), and returns what it wrote when
    /// the output is [`Output::Capture`] (empty otherwise).
    pub fn run_captured(&self, limit: Option<Duration>) -> Result<(Sample, Captured), ExecError> {
        let mut captured = Captured::default();
        let sample = self.run_inner(limit, Some(&mut captured))?;
        Ok((sample, captured))
    }

    fn run_inner(
        &self,
        limit: Option<Duration>,
        mut keep: Option<&mut Captured>,
    ) -> Result<Sample, ExecError> {
        let (mut cmd, stderr_file) = self.command()?;
        let watch = limit.map(|_| watchdog());
        let start = Instant::now();
        let mut child = cmd.spawn().map_err(|e| {
            ExecError::Spawn(format!(
                "{}: {e}",
                self.argv.first().map_or("", String::as_str)
            ))
        })?;
        let pid = child.id() as libc::pid_t;
        if let (Some(w), Some(limit)) = (watch, limit) {
            w.fired.store(false, Ordering::SeqCst);
            let deadline = (start + limit).duration_since(w.start).as_nanos() as u64;
            w.deadline_ns.store(deadline, Ordering::SeqCst);
            w.pid
                .store(if self.own_group { -pid } else { pid }, Ordering::SeqCst);
        }
        if let Some(mut out) = child.stdout.take() {
            let mut sink = [0u8; 64 * 1024];
            while let Ok(n) = out.read(&mut sink) {
                if n == 0 {
                    break;
                }
                if let Some(k) = keep.as_deref_mut() {
                    k.stdout.extend_from_slice(&sink[..n]);
                }
            }
        }
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter; wait4 fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = loop {
            // SAFETY: pid is our child; status and ru are valid pointers.
            let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            if rc == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            }
            break rc;
        };
        let wall_s = start.elapsed().as_secs_f64();
        let timed_out = watch.is_some_and(|w| {
            w.pid.store(0, Ordering::SeqCst);
            w.fired.swap(false, Ordering::SeqCst)
        });
        if rc != pid {
            return Err(ExecError::Io(format!(
                "waiting for {}: {}",
                self.argv[0],
                std::io::Error::last_os_error()
            )));
        }
        if let (Some(k), Some(mut f)) = (keep, stderr_file) {
            use std::io::Seek;
            f.seek(std::io::SeekFrom::Start(0))
                .and_then(|_| f.read_to_end(&mut k.stderr))
                .map_err(|e| ExecError::Io(format!("reading the command's stderr back: {e}")))?;
        }
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        let exit = if timed_out {
            Exit::TimedOut
        } else if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        };
        Ok(Sample {
            wall_s,
            user_s: secs(ru.ru_utime),
            sys_s: secs(ru.ru_stime),
            // Linux reports ru_maxrss in KiB.
            peak_rss_bytes: ru.ru_maxrss as f64 * 1024.0,
            exit,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sh(script: &str) -> Spawn {
        Spawn {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            input: None,
            output: Output::Null,
            own_group: true,
            cwd: None,
        }
    }

    #[test]
    fn a_run_reports_its_exit_cpu_time_and_memory() {
        let ok = sh("true").run(None).unwrap();
        assert_eq!(ok.exit, Exit::Code(0));
        assert!(ok.wall_s > 0.0 && ok.peak_rss_bytes > 0.0);
        let failed = sh("exit 3").run(None).unwrap();
        assert_eq!(failed.exit, Exit::Code(3));
        // A busy loop shows up as user time.
        let busy = sh("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
            .run(None)
            .unwrap();
        assert!(
            busy.user_s > 0.05 && busy.user_s <= busy.wall_s * 1.05,
            "{busy:?}"
        );
        // A run past its limit is killed, its children with it.
        let hung = sh("sleep 30 & sleep 30")
            .run(Some(Duration::from_millis(200)))
            .unwrap();
        assert_eq!(hung.exit, Exit::TimedOut);
        assert!(hung.wall_s < 10.0);
        // The limit applies to that run only.
        assert_eq!(
            sh("true").run(Some(Duration::from_secs(5))).unwrap().exit,
            Exit::Code(0)
        );
    }

    #[test]
    fn output_can_be_piped_or_written_to_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.txt");
        let mut s = sh("echo hello; echo oops >&2");
        s.output = Output::File(file.clone());
        s.run(None).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("hello") && text.contains("oops"));
        let mut p = sh("yes | head -c 1000000");
        p.output = Output::Pipe;
        assert_eq!(p.run(None).unwrap().exit, Exit::Code(0));
        let mut i = sh("read x; test \"$x\" = abc");
        std::fs::write(dir.path().join("in"), "abc\n").unwrap();
        i.input = Some(dir.path().join("in"));
        assert_eq!(i.run(None).unwrap().exit, Exit::Code(0));
    }
}
