//! Files for readers that take a path: one directory per process (under
//! `TMPDIR`, which `scripts/fuzz` points into the target directory), each
//! name rewritten by every run of the target.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// This process's scratch directory, created on first use.
pub fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("warpt-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("creating the fuzz scratch directory");
        d
    })
}

/// `data` written to `name` in [`dir`] (a `/` in `name` makes the
/// directories on the way); its path.
pub fn file(name: &str, data: &[u8]) -> PathBuf {
    let path = dir().join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("creating a fuzz scratch directory");
    }
    std::fs::write(&path, data).expect("writing a fuzz scratch file");
    path
}

/// `name` in [`dir`] removed if it is there, so a file from an earlier
/// run does not leak into this one.
pub fn remove(name: &str) {
    let _ = std::fs::remove_file(dir().join(name));
}
