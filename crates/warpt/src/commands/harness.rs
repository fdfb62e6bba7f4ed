//! `warpt harness`: the user's own benchmarks.

use anyhow::Result;
use warpt_userbench::discover::{DiscoverError, discover as search};

use crate::cli::HarnessDiscoverArgs;
use crate::{Outcome, UsageError};

/// Lists what a tree holds (`warpt harness discover`).
pub fn discover(args: &HarnessDiscoverArgs) -> Result<Outcome> {
    let manifest = search(&args.dir, &args.paths).map_err(|e| match e {
        DiscoverError::NotADirectory(_) => anyhow::Error::new(UsageError(e.to_string())),
        other => anyhow::Error::new(other),
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&manifest)?);
    } else {
        print!("{}", manifest.describe(args.verbose));
    }
    Ok(Outcome::Success)
}
