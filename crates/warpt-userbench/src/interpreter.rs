//! The Python interpreter every trial of a run starts: `python` as the
//! user named it is often a launcher (pyenv's shim, a bash script that
//! works out the version each time: 150 ms of a 170 ms start here), so it
//! is asked once, at the start of the run, which file it runs
//! (`sys.executable`), and the trials start that file. In the same
//! directory and environment the launcher would have picked the same one
//! for every trial.

use std::path::PathBuf;
use std::time::Duration;

/// How long the question may take before `python` is started as named.
const LIMIT: Duration = Duration::from_secs(30);

/// The file `python` runs, when it says (an absolute path to a file);
/// `None` when it cannot be asked (missing, failing, slower than 30 s) or
/// names none: the trials then start `python` itself and report whatever
/// is wrong with it.
pub fn resolve(python: &str) -> Option<PathBuf> {
    let said = warpt_system::run_within(
        python,
        &["-c", "import sys; sys.stdout.write(sys.executable or '')"],
        LIMIT,
    )?;
    let path = PathBuf::from(said);
    (path.is_absolute() && path.is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_is_resolved_to_the_interpreter_it_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A launcher as pyenv's shim is: a script that execs the real one.
        let real = resolve("python3").expect("python3 names its executable");
        let shim = dir.path().join("python3");
        std::fs::write(
            &shim,
            format!("#!/bin/sh\nexec '{}' \"$@\"\n", real.display()),
        )
        .expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(resolve(shim.to_str().expect("utf-8")), Some(real));
        // Nothing to run, or one that fails: started as named.
        assert_eq!(
            resolve(&dir.path().join("none").display().to_string()),
            None
        );
        assert_eq!(resolve("false"), None);
    }
}
