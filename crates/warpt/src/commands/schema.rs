//! `warpt schema`: the JSON Schemas of warpt's documents.

use anyhow::Result;

use crate::Outcome;
use crate::cli::{SchemaArgs, SchemaType};

/// Prints the requested schema as pretty JSON on stdout.
pub fn print(args: &SchemaArgs) -> Result<Outcome> {
    let schema = match args.kind {
        SchemaType::SuiteRun => warpt_model::suite_run_schema(),
        SchemaType::List => warpt_model::list_output_schema(),
    };
    println!("{}", serde_json::to_string_pretty(&schema)?);
    Ok(Outcome::Success)
}
