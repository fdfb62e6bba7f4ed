//! The git state of a directory, through the `git` command when present.

use std::path::Path;
use std::process::{Command, Stdio};

use warpt_model::GitState;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Commit, branch and dirty flag of the repository containing `dir`;
/// `None` when it is not in one or git is not installed.
pub fn git_state(dir: &Path) -> Option<GitState> {
    let commit = git(dir, &["rev-parse", "HEAD"])?;
    let branch = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"]);
    let dirty =
        git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(GitState {
        commit,
        branch,
        dirty,
    })
}
