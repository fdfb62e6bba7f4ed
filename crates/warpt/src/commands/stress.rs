//! `warpt stress TARGET`: the flags as a stress request, the target's load
//! (micro's, or the GPU's), the run through `warpt_run::stress`, printed.

use anyhow::Result;
use warpt_micro::stress::{self, TARGETS};
use warpt_model::{StressConfig, StressOutcome};
use warpt_run::request::{ExportChoice, MonitorRequest};
use warpt_run::stress::{Load, StressRequest, with_params};

use crate::cli::StressArgs;
use crate::{Outcome, UsageError};

/// A micro stress target (`cpu`, `ram`, `storage`, `network`).
struct Micro<'a>(&'a str);

impl Load for Micro<'_> {
    fn check(&self, cfg: &StressConfig) -> Result<Vec<String>, String> {
        stress::check(self.0, cfg)
    }

    fn run(&self, cfg: &StressConfig) -> Result<StressOutcome, String> {
        stress::run(self.0, cfg)
    }
}

/// The GPU target.
struct Gpu;

impl Load for Gpu {
    fn check(&self, _: &StressConfig) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }

    fn run(&self, cfg: &StressConfig) -> Result<StressOutcome, String> {
        warpt_gpu::stress::run(cfg)
    }
}

/// Runs the stress test and reports it; exit 1 when any error was found.
pub fn run(args: &StressArgs) -> Result<Outcome> {
    let target = args.target.as_str();
    let defaults = if target == "gpu" {
        Some(warpt_gpu::stress::default_params())
    } else {
        stress::default_params(target)
    };
    let defaults = defaults.ok_or_else(|| {
        UsageError(format!(
            "unknown stress target '{target}'; targets: {}, gpu",
            TARGETS.join(", ")
        ))
    })?;
    let params = with_params(target, defaults, &args.params)?;
    let request = StressRequest {
        target: target.to_string(),
        duration: args.duration,
        burnin_seconds: args.burnin_seconds,
        seed: args.seed,
        monitor: args.monitor.enabled.then(|| MonitorRequest {
            interval: args.monitor.interval,
            output: args.monitor.output.clone(),
        }),
        export: match (&args.export_file, args.export) {
            (Some(p), _) => ExportChoice::File(p.clone()),
            (None, true) => ExportChoice::Default,
            (None, false) => ExportChoice::None,
        },
        store: args.store.choice(),
        labels: args.labels.iter().cloned().collect(),
        description: args.description.clone(),
    };
    if let Some(why) = warpt_model::labels::labels_problem(&request.labels) {
        return Err(UsageError(why).into());
    }
    let micro = Micro(target);
    let load: &dyn Load = if target == "gpu" { &Gpu } else { &micro };
    let (run, outcome) = warpt_run::stress::stress(&request, params, load)?;
    let summary = warpt_report::terminal::stress(&run);
    if args.json {
        eprint!("{summary}");
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else {
        print!("{summary}");
    }
    Ok(outcome)
}
