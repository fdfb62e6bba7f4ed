//! `warpt benchmark list | describe` (`run` has a module of its own).

use anyhow::Result;

use crate::cli::{DescribeArgs, ListArgs};
use crate::registry::registry_found;
use crate::{Outcome, UsageError};
use warpt_report::terminal as output;

/// `warpt benchmark list`.
pub fn list(args: &ListArgs) -> Result<Outcome> {
    let reg = registry_found()?;
    let mut specs = match &args.suite {
        Some(name) => reg
            .suite(name)
            .ok_or_else(|| {
                UsageError(format!(
                    "unknown suite '{name}'; available suites: {}",
                    reg.suite_names()
                ))
            })?
            .specs(),
        None => reg.all_specs(),
    };
    if !args.components.is_empty() {
        specs.retain(|s| s.components.iter().any(|c| args.components.contains(c)));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&specs)?);
    } else if specs.is_empty() {
        println!("no benchmark matches");
    } else {
        println!("{}", output::spec_list(&specs));
    }
    Ok(Outcome::Success)
}

/// `warpt benchmark describe`.
pub fn describe(args: &DescribeArgs) -> Result<Outcome> {
    let reg = registry_found()?;
    let suite = reg.suite(&args.suite).ok_or_else(|| {
        UsageError(format!(
            "unknown suite '{}'; available suites: {}",
            args.suite,
            reg.suite_names()
        ))
    })?;
    let specs = suite.specs();
    let spec = specs
        .iter()
        .find(|s| s.id.name == args.benchmark)
        .ok_or_else(|| {
            UsageError(format!(
                "unknown benchmark '{}' in suite '{}'; available: {}",
                args.benchmark,
                args.suite,
                specs
                    .iter()
                    .map(|s| s.id.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(spec)?);
    } else {
        print!("{}", output::describe(spec));
    }
    Ok(Outcome::Success)
}
