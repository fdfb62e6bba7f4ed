//! Where counts come from on this machine: the CPU's counters when the
//! kernel gives them to an unprivileged process, else cachegrind (exact
//! and deterministic, some 20 to 100 times slower), else nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{CountError, Counts, cachegrind, perf};

/// A way of counting a command's instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The CPU's retired-instructions counter, user space only.
    Perf,
    /// valgrind's cachegrind (the program at this path).
    Cachegrind(PathBuf),
}

impl Source {
    /// Its name in results (`details.count_source`).
    pub fn name(&self) -> &'static str {
        match self {
            Source::Perf => "perf_event",
            Source::Cachegrind(_) => "cachegrind",
        }
    }

    /// Counts one run of `argv`; `setup` sets its directory, input and
    /// output as the timed runs have them.
    pub fn count(
        &self,
        argv: &[String],
        setup: &dyn Fn(&mut Command),
    ) -> Result<Counts, CountError> {
        match self {
            Source::Perf => perf::count(argv, setup),
            Source::Cachegrind(valgrind) => cachegrind::count(valgrind, argv, setup),
        }
    }
}

/// The best source here, or why there is none.
pub fn detect() -> Result<Source, String> {
    choose(perf::probe(), find_valgrind())
}

/// The choice [`detect`] makes from what it found: the CPU's counters when
/// they counted, else cachegrind; without either, both reasons.
pub fn choose(perf: Result<(), String>, valgrind: Option<PathBuf>) -> Result<Source, String> {
    match (perf, valgrind) {
        (Ok(()), _) => Ok(Source::Perf),
        (Err(_), Some(v)) => Ok(Source::Cachegrind(v)),
        (Err(why), None) => Err(format!(
            "{why}; and no valgrind on PATH for cachegrind (Debian: apt-get install valgrind)"
        )),
    }
}

/// `valgrind` on `PATH`.
fn find_valgrind() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("valgrind"))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpus_counters_first_then_cachegrind_then_both_reasons() {
        let vg = Some(PathBuf::from("/usr/bin/valgrind"));
        assert_eq!(choose(Ok(()), vg.clone()), Ok(Source::Perf));
        assert_eq!(choose(Ok(()), None), Ok(Source::Perf));
        assert_eq!(
            choose(Err("not supported".into()), vg.clone()),
            Ok(Source::Cachegrind(PathBuf::from("/usr/bin/valgrind")))
        );
        let why = choose(Err("not supported".into()), None).unwrap_err();
        assert!(
            why.starts_with("not supported; ") && why.contains("valgrind"),
            "{why}"
        );
    }
}
