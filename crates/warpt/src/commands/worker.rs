//! `warpt __worker`: the hidden worker entry point (see warpt-harness's
//! `worker` module for the protocol).

use anyhow::Result;

use crate::Outcome;
use crate::registry::registry;

/// Runs the benchmark requested on stdin, reporting events on stdout.
pub fn run() -> Result<Outcome> {
    // A worker whose run is gone has no one to report to: stop at once.
    warpt_run::orphan::watch(|| std::process::exit(130));
    warpt_harness::worker_main(&registry(), std::io::stdin().lock())?;
    Ok(Outcome::Success)
}
