//! `warpt schema`: the JSON Schema of the export format.

use anyhow::Result;

use crate::Outcome;

/// Prints the schema of `BenchmarkSuiteRun` as pretty JSON on stdout.
pub fn print() -> Result<Outcome> {
    let schema = warpt_model::suite_run_schema();
    println!("{}", serde_json::to_string_pretty(&schema)?);
    Ok(Outcome::Success)
}
