//! Runs of `warpt` in a child process: the server's queue, `compare
//! --rerun` and `ci pr` trials, `ci record` and `fleet node` all start one
//! here, with the same environment (no progress lines, no stdin), the same
//! reading of its exit status ([`ChildExit`]) and the same last lines of
//! its stderr to explain a failure.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;

use crate::outcome::ChildExit;

/// Where the child's stderr goes.
enum Stderr {
    /// Kept in memory (read on a thread, so no pipe can fill).
    Capture,
    /// This process's stderr (the child's progress shows through).
    Inherit,
    /// A file opened for reading and writing, read back at the end.
    File(File),
}

/// A `warpt` command to start.
pub struct ChildRun {
    command: Command,
    stderr: Stderr,
}

/// A started child.
pub struct Running {
    child: Child,
    stderr: Option<JoinHandle<String>>,
    stderr_file: Option<File>,
}

/// How a child ended: its exit, what it printed on stdout (unless that
/// went to a file or was read line by line) and on stderr (if captured or
/// logged).
#[derive(Debug)]
pub struct Finished {
    /// Its exit status, read by the one rule.
    pub exit: ChildExit,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Finished {
    /// The last `n` non-empty lines of stderr, joined by ` | `: what a
    /// failure message quotes.
    pub fn stderr_tail(&self, n: usize) -> String {
        last_lines(&self.stderr, n)
    }
}

/// The last `n` non-empty lines of `text`, joined by ` | `.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

impl ChildRun {
    /// This very warpt binary.
    pub fn this_warpt() -> std::io::Result<ChildRun> {
        Ok(ChildRun::program(&std::env::current_exe()?))
    }

    /// Another warpt binary (a side of `compare --rerun`).
    pub fn program(program: &Path) -> ChildRun {
        let mut command = Command::new(program);
        command
            .env("WARPT_NO_PROGRESS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        ChildRun {
            command,
            stderr: Stderr::Capture,
        }
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Adds a flag and its value.
    pub fn arg_pair(mut self, flag: &str, value: impl AsRef<OsStr>) -> Self {
        self.command.arg(flag).arg(value);
        self
    }

    /// Sets an environment variable (a secret such as a store URL goes
    /// here rather than in the arguments, which `ps` shows).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    /// Runs it in `dir`.
    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    /// Starts it in a process group of its own: a terminal's Ctrl-C to
    /// this process does not reach it; [`interrupt`] does.
    pub fn own_group(mut self) -> Self {
        use std::os::unix::process::CommandExt;
        self.command.process_group(0);
        self
    }

    /// Lets its stderr through to this process's.
    pub fn stderr_inherit(mut self) -> Self {
        self.stderr = Stderr::Inherit;
        self
    }

    /// Writes its stderr to `log` (opened for reading too), read back when
    /// it ends.
    pub fn stderr_to(mut self, log: File) -> Self {
        self.stderr = Stderr::File(log);
        self
    }

    /// Writes stdout and stderr both to `log` (opened for reading too).
    pub fn all_output_to(mut self, log: File) -> std::io::Result<Self> {
        self.command.stdout(log.try_clone()?);
        self.stderr = Stderr::File(log);
        Ok(self)
    }

    /// Starts it.
    pub fn spawn(mut self) -> std::io::Result<Running> {
        let mut stderr_file = None;
        match self.stderr {
            Stderr::Capture => {
                self.command.stderr(Stdio::piped());
            }
            Stderr::Inherit => {
                self.command.stderr(Stdio::inherit());
            }
            Stderr::File(f) => {
                self.command.stderr(f.try_clone()?);
                stderr_file = Some(f);
            }
        }
        let mut child = self.command.spawn()?;
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = pipe.read_to_string(&mut s);
                s
            })
        });
        Ok(Running {
            child,
            stderr,
            stderr_file,
        })
    }

    /// Starts it and waits, keeping all of stdout.
    pub fn output(self) -> std::io::Result<Finished> {
        let mut running = self.spawn()?;
        let mut out = String::new();
        if let Some(mut p) = running.child.stdout.take() {
            let _ = p.read_to_string(&mut out);
        }
        let mut done = running.wait()?;
        done.stdout = out;
        Ok(done)
    }
}

impl Running {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Calls `line` with each line of stdout as it comes, until it closes.
    pub fn each_line(&mut self, mut line: impl FnMut(String)) {
        if let Some(out) = self.child.stdout.take() {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                line(l);
            }
        }
    }

    /// Waits for it to end.
    pub fn wait(mut self) -> std::io::Result<Finished> {
        let status = self.child.wait()?;
        let mut stderr = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        if let Some(mut f) = self.stderr_file.take() {
            let _ = f.rewind();
            let _ = f.read_to_string(&mut stderr);
        }
        Ok(Finished {
            exit: ChildExit::of(status),
            stdout: String::new(),
            stderr,
        })
    }
}

/// Sends SIGINT to process `pid`: a warpt run stops the benchmark in
/// progress and records what finished, exactly as on Ctrl-C.
pub fn interrupt(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a pid of our own child and a valid signal
        // number touches no memory.
        unsafe { libc::kill(pid, libc::SIGINT) };
    }
}

/// An anonymous file for a child's log (unlinked at once: gone when closed).
pub fn anonymous_log() -> std::io::Result<File> {
    let path = std::env::temp_dir().join(format!(
        "warpt-child-{}-{}.log",
        std::process::id(),
        warpt_harness::random_suffix()
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// Whether the argument `arg` is `flag` (as `--flag` or `--flag=VALUE`).
pub fn is_flag(arg: &str, flag: &str) -> bool {
    arg == flag
        || arg
            .strip_prefix(flag)
            .is_some_and(|rest| rest.starts_with('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> ChildRun {
        ChildRun::program(Path::new("/bin/sh")).args(["-c", script])
    }

    #[test]
    fn a_child_s_output_status_and_last_lines_come_back() {
        let done = sh("echo out; echo one >&2; echo >&2; echo two >&2; exit 1")
            .output()
            .unwrap();
        assert_eq!(done.stdout, "out\n");
        assert_eq!(done.stderr_tail(2), "one | two");
        assert!(done.exit.handed_over());
        let done = sh("echo bad >&2; exit 2").output().unwrap();
        assert_eq!(
            (done.exit, done.stderr_tail(5).as_str()),
            (ChildExit::Usage, "bad")
        );
    }

    #[test]
    fn a_logged_child_is_read_back_from_its_log_and_lines_stream() {
        let log = anonymous_log().unwrap();
        let mut running = sh("echo a; echo b; echo why >&2; exit 5")
            .stderr_to(log)
            .spawn()
            .unwrap();
        let mut lines = Vec::new();
        running.each_line(|l| lines.push(l));
        let done = running.wait().unwrap();
        assert_eq!(lines, ["a", "b"]);
        assert_eq!(
            (done.exit, done.stderr_tail(1).as_str()),
            (ChildExit::Error(5), "why")
        );
        assert!(is_flag("--x=1", "--x") && is_flag("--x", "--x") && !is_flag("--xy", "--x"));
    }
}
