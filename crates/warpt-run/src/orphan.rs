//! Noticing that the process that started this one has died.
//!
//! A run started by `warpt serve` must not carry on unobserved when the
//! server is killed, and a benchmark worker must not outlive the run that
//! started it (a second Ctrl-C exits the run at once). Either way the
//! orphan is re-parented, so its parent id changes: a thread polls it.

use std::time::Duration;

/// How often the parent is checked.
const POLL: Duration = Duration::from_millis(200);

/// Calls `on_orphan` once, from a background thread, when this process's
/// parent has died.
pub fn watch(on_orphan: impl FnOnce() + Send + 'static) {
    let parent = std::os::unix::process::parent_id();
    std::thread::spawn(move || {
        while std::os::unix::process::parent_id() == parent {
            std::thread::sleep(POLL);
        }
        on_orphan();
    });
}
