//! `warpt noise`: A/A repetitions that measure how far each metric moves
//! between runs of unchanged code on this machine, stored as the machine's
//! noise profile for `benchmark compare`.

use anyhow::Result;
use serde::Serialize;
use warpt_model::NoiseEntry;
use warpt_report::compare::noise::{NOISE_K, Unprofiled};
use warpt_run::noise::{self, ProfileStored};

use crate::Outcome;
use crate::cli::NoiseArgs;
use warpt_report::terminal as output;

/// `warpt noise --json`.
#[derive(Serialize)]
struct ProfileJson<'a> {
    run_id: &'a str,
    machine: Option<String>,
    trials: u32,
    noise_k: f64,
    entries: &'a [NoiseEntry],
    /// Metrics with fewer than three undisturbed trials: compare keeps
    /// calling their noise unknown.
    unprofiled: &'a [Unprofiled],
}

/// Runs the plan `--repeat` times, prints and records the profile.
pub fn run(args: &NoiseArgs) -> Result<Outcome> {
    let request = warpt_run::RunRequest {
        plan: warpt_run::request::PlanSource::Select(super::run::select(&args.plan)),
        settings: super::run::flags(&args.plan),
        config: args.plan.config.clone(),
        repeat: args.repeat,
        store: warpt_run::StoreChoice::from_flags(args.store.store.clone(), false),
        ..warpt_run::RunRequest::default()
    };
    let progress = super::run::progress();
    let p = noise::profile(&request, &crate::registry::Builtin, progress.as_ref())?;
    let (run, entries, unprofiled) = (&p.run, &p.profile.entries, &p.profile.unprofiled);
    eprint!("{}", output::results(run));
    if args.json {
        let json = ProfileJson {
            run_id: &run.id,
            machine: run.system.as_ref().map(|s| s.fingerprint()),
            trials: args.repeat,
            noise_k: NOISE_K,
            entries,
            unprofiled,
        };
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", output::noise_report(entries, unprofiled, args.repeat));
    }
    match &p.stored {
        ProfileStored::Yes(machine) => eprintln!(
            "recorded run {} and the noise profile of {} metrics for machine {machine} in {}",
            run.id,
            entries.len(),
            p.store
        ),
        ProfileStored::Interrupted => {
            eprintln!("interrupted: run {} recorded, no profile stored", run.id)
        }
        ProfileStored::NoMachine => eprintln!("no machine snapshot: no profile stored"),
    }
    Ok(warpt_run::RunOutcome::of(run))
}
