//! The CI front ends' plumbing, beside the one run path (warpt-run):
//!
//! - [`worktrees`]: `ci pr`'s git worktrees of two refs and their builds;
//! - [`command`]: the warpt command a CI step names, and each side's run as
//!   the comparison sees it;
//! - [`record`]: `ci record`'s history directory of exports and its
//!   regression alerts.

pub mod command;
pub mod record;
pub mod worktrees;

pub use command::{same_places, split_command};
pub use record::{regression_alerts, store_of_dir, write_export};
pub use worktrees::{PrCheckouts, PrSide, Worktrees, build, git};
