//! `warpt demo`: a new store filled with a history to explore — this
//! machine's real tiny runs and two made-up machines derived from them
//! (see `warpt_demo`).

use std::time::Duration;

use anyhow::{Context, Result};
use warpt_serving::scripted::{Script, Scripted};
use warpt_store::Location;

use crate::Outcome;
use crate::cli::DemoArgs;
use crate::registry::Builtin;

/// `warpt demo`.
pub fn run(args: &DemoArgs) -> Result<Outcome> {
    let store = Location::from_path(&args.store);
    // Two completions at a time, 20 ms to the first token: the sweep's
    // latency climbs past concurrency 2, a knee to look at.
    let server = if args.no_serving {
        None
    } else {
        Some(
            Scripted::start(Script {
                slots: 2,
                ..Script::steady(Duration::from_millis(20), Duration::from_millis(2))
            })
            .context("starting the scripted serving endpoint on 127.0.0.1")?,
        )
    };
    let plans = warpt_demo::seed_plans(server.as_ref().map(|s| s.url.as_str()));
    let progress = super::run::progress();
    let filled = warpt_demo::fill(&store, &plans, &Builtin, progress.as_ref())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&filled)?);
    } else {
        println!(
            "wrote {} runs measured here and {} derived for {} to {}",
            filled.measured.len(),
            filled.derived,
            filled.machines[1..].join(", "),
            filled.store
        );
        for r in &filled.regressions {
            println!("regression step: {r}");
        }
        for n in &filled.not_passed {
            println!("did not pass here: {n}");
        }
        println!(
            "derived runs say so in their metadata (`demo`) and are recorded as imports\nexplore it: warpt serve --store {}",
            args.store.display()
        );
    }
    Ok(Outcome::success_if(filled.not_passed.is_empty()))
}
