//! warpt-run: the one way to run benchmarks, under every front end.
//!
//! The command line, `warpt serve`, `ci`, `fleet` and the comparison's
//! trials all start runs here: a typed [`RunRequest`] (from flags,
//! configuration layers, the server's JSON or a stored run) goes through
//! [`run()`] — plan, workers, monitor, export, store — to a
//! [`RunOutcome`], whose exit status has one rule. Runs in another process
//! go through [`child`]; interleaved A/B trials through [`trials`]; fleet
//! jobs through Slurm in [`fleet`].

pub mod child;
pub mod ci;
pub mod config;
pub mod demo;
pub mod events;
pub mod export;
pub mod fleet;
pub mod history;
pub mod interrupt;
pub mod noise;
pub mod orphan;
pub mod outcome;
pub mod pdf;
pub mod replay;
pub mod request;
pub mod request_json;
pub mod run;
pub mod stored;
pub mod stress;
pub mod trials;

pub use export::ExportTarget;
pub use history::StoreChoice;
pub use noise::StoreNoise;
pub use outcome::RunOutcome;
pub use request::RunRequest;
pub use run::{PlanBase, PlanJson, build_profile, plan, plan_gated, plan_on, run};

/// An error in what the user asked for (a flag, a file, a request field):
/// front ends answer it with exit status 2 or HTTP 400.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Whether `e` is the user's to fix (exit status 2, HTTP 400): a
/// [`UsageError`], or a selection that cannot become a plan
/// ([`warpt_harness::PlanError`], which front ends can match on to name the
/// parameter at fault).
pub fn is_usage_error(e: &anyhow::Error) -> bool {
    e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<warpt_harness::PlanError>().is_some()
}
