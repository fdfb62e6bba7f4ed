//! A protocol failure as the harness reports it: the user's error (with
//! its traceback and stage), a skip, or the adapter's own fault.

use warpt_harness::BenchmarkError;
use warpt_model::StageError;

use crate::driver::DriverError;

/// A protocol failure as the harness reports it, the user's traceback
/// included.
pub(super) fn failed(e: DriverError) -> BenchmarkError {
    match e {
        DriverError::User {
            op,
            message,
            traceback,
        } => BenchmarkError::Raised(StageError {
            stage: stage_of(&op).to_string(),
            message,
            traceback,
        }),
        DriverError::Skipped { reason, .. } => BenchmarkError::Skipped(reason),
        DriverError::Spawn { program, source } if source.kind() == std::io::ErrorKind::NotFound => {
            BenchmarkError::Skipped(format!(
                "no {program} on this machine to run this benchmark"
            ))
        }
        other => BenchmarkError::Failed(other.to_string()),
    }
}

/// The stage a protocol request belongs to, in a result's `errors`.
fn stage_of(op: &str) -> &str {
    match op {
        "load" | "setup" => "setup",
        "run" => "measure",
        other => other,
    }
}
