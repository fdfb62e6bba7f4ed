//! Helpers shared by integration tests (`mod common;`).

#![allow(clippy::unwrap_used, dead_code)] // tests: a panic is the failure report

use std::path::Path;
use std::process::Command;

/// Runs git in `dir` with a fixed identity; its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=warpt",
            "-c",
            "user.email=warpt@example.org",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
