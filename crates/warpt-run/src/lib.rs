//! warpt-run: the one way to run benchmarks, under every front end.
//!
//! The command line, `warpt serve`, `ci`, `fleet` and the comparison's
//! trials all start runs here: a typed [`RunRequest`] (from flags,
//! configuration layers, the server's JSON or a stored run) goes through
//! [`run()`] — plan, workers, monitor, export, store — to a
//! [`RunOutcome`], whose exit status has one rule. Runs in another process
//! go through [`child`] (fleet nodes, the server's queue, CI); interleaved
//! A/B trials through [`trials`].

/// Runs of `warpt` in a child process, and their exit read back.
pub mod child;
/// The configuration layers: defaults < `warpt.toml` < `WARPT_*` < flags.
pub mod config;
/// A run's progress as typed events: `--events` lines, or a sink.
pub mod events;
/// Where a run's files go: the export's default name, the monitor's timeline.
pub mod export;
/// Which store a command uses, recording runs in it, loading sides.
pub mod history;
/// Ctrl-C and SIGTERM during a run.
pub mod interrupt;
/// Run-to-run noise from the store, and `warpt noise`'s profile runs.
pub mod noise;
/// Noticing that the process that started this one has died.
pub mod orphan;
/// How a run ended, and the one rule from that to an exit status.
pub mod outcome;
/// `--replay FILE`: a previous export's plan and settings.
pub mod replay;
/// The typed run request every front end builds.
pub mod request;
/// The run request as the server's JSON spells it.
pub mod request_json;
/// `run()`: plan → workers → monitor → export → store → outcome.
pub mod run;
/// `warpt stress`: sustained load, checked, monitored, exported, stored.
pub mod stress;
/// Interleaved and duet A/B trials, each a warpt run in its own process.
pub mod trials;

pub use history::StoreChoice;
pub use noise::StoreNoise;
pub use outcome::RunOutcome;
pub use request::RunRequest;
pub use run::{PlanBase, PlanJson, build_profile, plan, plan_gated, plan_on, run};
pub use warpt_export::ExportTarget;

/// An error in what the user asked for (a flag, a file, a request field):
/// front ends answer it with exit status 2 or HTTP 400.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Whether `e` is the user's to fix (exit status 2, HTTP 400): a
/// [`UsageError`], a selection that cannot become a plan
/// ([`warpt_harness::PlanError`], which front ends can match on to name the
/// parameter at fault), or an export the user can fix (a folder that does
/// not exist, a PDF without a file).
pub fn is_usage_error(e: &anyhow::Error) -> bool {
    e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<warpt_harness::PlanError>().is_some()
        || e.downcast_ref::<warpt_export::ExportError>()
            .is_some_and(warpt_export::ExportError::is_usage)
}
