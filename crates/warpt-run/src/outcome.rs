//! How a run ended, and the one rule from that to a process's exit status
//! (which every child-run reader reads back the same way).

use std::process::ExitStatus;

use warpt_model::BenchmarkSuiteRun;

/// What a command asks the process to exit with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// Everything ran and passed (or was skipped): exit 0.
    Success,
    /// A benchmark failed, timed out or crashed (or a comparison found a
    /// regression): exit 1.
    Failures,
    /// The run was interrupted by SIGINT or SIGTERM: exit 130.
    Interrupted,
}

/// Exit status for a usage error (a bad flag, file or value).
pub const EXIT_USAGE: u8 = 2;

impl RunOutcome {
    /// [`RunOutcome::Success`] when `ok`, else [`RunOutcome::Failures`].
    pub fn success_if(ok: bool) -> Self {
        if ok {
            RunOutcome::Success
        } else {
            RunOutcome::Failures
        }
    }

    /// The outcome of a finished suite run.
    pub fn of(run: &BenchmarkSuiteRun) -> RunOutcome {
        if run.interrupted {
            RunOutcome::Interrupted
        } else if run.has_failures() {
            RunOutcome::Failures
        } else {
            RunOutcome::Success
        }
    }

    /// The process exit status: 0, 1 or 130.
    pub fn exit_code(self) -> u8 {
        match self {
            RunOutcome::Success => 0,
            RunOutcome::Failures => 1,
            RunOutcome::Interrupted => 130,
        }
    }
}

/// How a child `warpt` process ended, read by the rule above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// It ran and said so (0, 1 or 130).
    Ran(RunOutcome),
    /// It refused its arguments (2): nothing was measured.
    Usage,
    /// Any other status: a runtime error before a run was handed over.
    Error(i32),
    /// It was killed by this signal.
    Signal(i32),
}

impl ChildExit {
    /// Reads an exit status.
    pub fn of(status: ExitStatus) -> ChildExit {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(0), _) => ChildExit::Ran(RunOutcome::Success),
            (Some(1), _) => ChildExit::Ran(RunOutcome::Failures),
            (Some(130), _) => ChildExit::Ran(RunOutcome::Interrupted),
            (Some(2), _) => ChildExit::Usage,
            (Some(c), _) => ChildExit::Error(c),
            (None, Some(s)) => ChildExit::Signal(s),
            (None, None) => ChildExit::Error(-1),
        }
    }

    /// Whether the child finished a run it hands over (exit 0 or 1: a
    /// failed benchmark is a result too).
    pub fn handed_over(self) -> bool {
        matches!(
            self,
            ChildExit::Ran(RunOutcome::Success | RunOutcome::Failures)
        )
    }

    /// The shell's number for it: the status, or 128 + the signal.
    pub fn code(self) -> i32 {
        match self {
            ChildExit::Ran(o) => i32::from(o.exit_code()),
            ChildExit::Usage => i32::from(EXIT_USAGE),
            ChildExit::Error(c) => c,
            ChildExit::Signal(s) => 128 + s,
        }
    }
}

impl std::fmt::Display for ChildExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildExit::Signal(s) => write!(f, "signal {s}"),
            other => write!(f, "status {}", other.code()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn exit_statuses_read_back_as_the_outcome_that_wrote_them() {
        for o in [
            RunOutcome::Success,
            RunOutcome::Failures,
            RunOutcome::Interrupted,
        ] {
            let status = ExitStatus::from_raw(i32::from(o.exit_code()) << 8);
            assert_eq!(ChildExit::of(status), ChildExit::Ran(o));
        }
        assert_eq!(
            ChildExit::of(ExitStatus::from_raw(2 << 8)),
            ChildExit::Usage
        );
        assert!(!ChildExit::of(ExitStatus::from_raw(2 << 8)).handed_over());
        assert!(ChildExit::of(ExitStatus::from_raw(1 << 8)).handed_over());
        let killed = ChildExit::of(ExitStatus::from_raw(9));
        assert_eq!((killed, killed.code()), (ChildExit::Signal(9), 137));
        assert_eq!(killed.to_string(), "signal 9");
        assert_eq!(ChildExit::Error(101).to_string(), "status 101");
    }
}
