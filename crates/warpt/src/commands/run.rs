//! `warpt benchmark run`: the flags as a run request, the run through
//! `warpt_run`, the results printed.

use anyhow::Result;
use warpt_harness::{NoProgress, Progress};
use warpt_run::config::Flags;
use warpt_run::request::{ExportChoice, MonitorRequest, PlanSource, Select};
use warpt_run::{PlanJson, RunRequest};

use std::path::Path;

use crate::cli::{PlanArgs, RunArgs};
use crate::progress::BarProgress;
use crate::registry::Builtin;
use crate::{Outcome, UsageError};
use warpt_report::terminal as output;

/// The configuration-layer flags of a plan.
pub fn flags(args: &PlanArgs) -> Flags {
    Flags {
        duration: args.duration,
        burnin_seconds: args.burnin_seconds,
        seed: args.seed,
        precision: args.precision,
        timeout_multiplier: args.timeout_multiplier,
        suite_timeout: args.suite_timeout,
        percentiles: args.percentiles.clone(),
        labels: args.labels.clone(),
        description: args.description.clone(),
        in_process: args.in_process,
        store: None,
    }
}

/// The selection of a plan.
pub fn select(args: &PlanArgs) -> Select {
    Select {
        suite: args.suite.clone(),
        benchmarks: args.benchmarks.clone(),
        components: args.components.clone(),
        params: args.params.clone(),
    }
}

/// The run request `benchmark run`'s flags spell (or its `--request`
/// file, with the flags that say where the run goes).
pub fn request(args: &RunArgs) -> Result<RunRequest> {
    let mut request = match &args.request {
        Some(path) => read_request(path)?,
        None => RunRequest {
            plan: match &args.replay {
                Some(path) => PlanSource::Replay(path.clone()),
                None => PlanSource::Select(select(&args.plan)),
            },
            settings: flags(&args.plan),
            repeat: args.repeat,
            monitor: args.monitor.enabled.then(|| MonitorRequest {
                interval: args.monitor.interval,
                output: args.monitor.output.clone(),
            }),
            ..RunRequest::default()
        },
    };
    request.config = args.plan.config.clone();
    request.store = args.store.choice();
    request.export = match (&args.export_file, args.export) {
        (Some(path), _) => ExportChoice::File(path.clone()),
        (None, true) => ExportChoice::Default,
        (None, false) => ExportChoice::None,
    };
    request.events = args.events;
    request.run_id = args.run_id.clone();
    Ok(request)
}

/// `--request FILE` (`-`: stdin): the server's JSON run request, refused
/// naming the field at fault. Its `monitor` is off unless it says `true`
/// (`--monitor`'s default, not the server's).
fn read_request(path: &Path) -> Result<RunRequest> {
    let text = if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| UsageError(format!("--request -: reading stdin: {e}")))?
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("--request {}: {e}", path.display())))?
    };
    let monitor_asked = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("monitor").and_then(serde_json::Value::as_bool))
        == Some(true);
    let mut request = RunRequest::from_json(&text).map_err(|e| {
        UsageError(format!(
            "--request {}: field '{}': {}",
            path.display(),
            e.parameter.as_deref().unwrap_or(&e.field),
            e.message
        ))
    })?;
    if !monitor_asked {
        request.monitor = None;
    }
    Ok(request)
}

/// The progress display: a bar on stderr unless `WARPT_NO_PROGRESS` is set.
pub fn progress() -> Box<dyn Progress> {
    if std::env::var_os("WARPT_NO_PROGRESS").is_some() {
        Box::new(NoProgress)
    } else {
        Box::new(BarProgress::new())
    }
}

/// `warpt benchmark run`.
pub fn run(args: &RunArgs) -> Result<Outcome> {
    let request = request(args)?;
    let (plan, options) = warpt_run::plan(&request, &Builtin)?;
    if args.dry_run {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&PlanJson::of(&plan))?);
        } else {
            print!("{}", warpt_run::run::plan_text(&plan));
        }
        return Ok(Outcome::Success);
    }
    let ran = warpt_run::run(&request, &plan, options, &Builtin, progress().as_ref())?;
    let table = output::results(&ran.run);
    if args.json || args.events {
        eprint!("{table}");
        if args.json {
            println!("{}", serde_json::to_string_pretty(&ran.run)?);
        }
    } else {
        print!("{table}");
    }
    if ran.outcome == Outcome::Interrupted {
        eprintln!("interrupted: the results above are those finished before the signal");
    }
    Ok(ran.outcome)
}
