//! `warpt noise`: A/A repetitions that measure how far each metric moves
//! between runs of unchanged code on this machine, stored as the machine's
//! noise profile for `benchmark compare`.

use anyhow::{Context, Result};
use serde::Serialize;
use warpt_model::NoiseEntry;
use warpt_report::compare::noise::{self, NOISE_K, Unprofiled};
use warpt_store::Store;

use crate::Outcome;
use crate::cli::NoiseArgs;
use warpt_report::terminal as output;
use warpt_run::history;

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
    let (plan, mut options) = warpt_run::plan(&request, &crate::registry::Builtin)?;
    // The store must open before minutes are spent measuring.
    let path = history::path(args.store.store.as_deref(), args.plan.config.as_deref())?;
    let mut store = Store::open(&path).with_context(|| format!("opening the store {path}"))?;
    let run = warpt_run::run::execute(
        &plan,
        &mut options,
        &crate::registry::Builtin,
        super::run::progress().as_ref(),
    )?;
    eprint!("{}", output::results(&run));
    let noise::Profile {
        entries,
        unprofiled,
    } = noise::profile(&run);
    let machine = run.system.as_ref().map(|s| s.fingerprint());
    if args.json {
        let json = ProfileJson {
            run_id: &run.id,
            machine: machine.clone(),
            trials: args.repeat,
            noise_k: NOISE_K,
            entries: &entries,
            unprofiled: &unprofiled,
        };
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!(
            "{}",
            output::noise_report(&entries, &unprofiled, args.repeat)
        );
    }
    store
        .record_run(&run, &warpt_store::Source::Run)
        .with_context(|| format!("recording the run in {path}"))?;
    match (&run.system, run.interrupted) {
        (Some(system), false) => {
            store
                .record_noise(system, &entries)
                .with_context(|| format!("recording the profile in {path}"))?;
            eprintln!(
                "recorded run {} and the noise profile of {} metrics for machine {} in {}",
                run.id,
                entries.len(),
                machine.unwrap_or_default(),
                path
            );
        }
        (_, true) => eprintln!("interrupted: run {} recorded, no profile stored", run.id),
        (None, _) => eprintln!("no machine snapshot: no profile stored"),
    }
    Ok(if run.interrupted {
        Outcome::Interrupted
    } else if run.has_failures() {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}
