//! `warpt stress TARGET`: sustained load with every result checked, the
//! monitor around it, then export and store, as a run is. The front end
//! supplies the target's defaults and its load (micro's or the GPU's).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;
use jiff::Timestamp;
use warpt_model::{Params, StressConfig, StressOutcome, StressRun};

use crate::request::{ExportChoice, MonitorRequest};
use crate::{ExportTarget, RunOutcome, StoreChoice, UsageError};

/// What `warpt stress` was asked.
#[derive(Debug, Clone)]
pub struct StressRequest {
    /// The target (`cpu`, `ram`, `storage`, `network`, `gpu`).
    pub target: String,
    /// Seconds under load after burn-in.
    pub duration: f64,
    /// Seconds of load before recording.
    pub burnin_seconds: f64,
    /// Seed for generated data.
    pub seed: u64,
    /// Background telemetry, if wanted.
    pub monitor: Option<MonitorRequest>,
    /// Where the run goes.
    pub export: ExportChoice,
    /// Where it is recorded.
    pub store: StoreChoice,
    /// The run's labels (`--label`).
    pub labels: std::collections::BTreeMap<String, String>,
    /// The run's description (`--description`).
    pub description: Option<String>,
}

/// The target's load: checks its configuration (notes to print, or a
/// usage error), then runs it.
pub trait Load {
    /// Notes on the configuration, or why it cannot run.
    fn check(&self, cfg: &StressConfig) -> Result<Vec<String>, String>;
    /// Runs the load.
    fn run(&self, cfg: &StressConfig) -> Result<StressOutcome, String>;
}

/// `defaults` with the `--param` texts applied: an unknown key or a value
/// of the wrong type is a usage error naming it.
pub fn with_params(
    target: &str,
    mut params: Params,
    given: &[warpt_harness::ParamArg],
) -> Result<Params> {
    for p in given {
        let default = params.get(&p.name).ok_or_else(|| {
            UsageError(format!(
                "unknown parameter {:?} for stress {target}; it accepts: {}",
                p.name,
                params.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })?;
        let value = default
            .parse_like(&p.name, &p.value)
            .map_err(|e| UsageError(e.to_string()))?;
        params.insert(p.name.clone(), value);
    }
    Ok(params)
}

/// Runs `load` as `request` says, with `params` (see [`with_params`]):
/// exports and records the run; the outcome is `Failures` when any
/// result was wrong (or none was checked).
pub fn stress(
    request: &StressRequest,
    params: Params,
    load: &dyn Load,
) -> Result<(StressRun, RunOutcome)> {
    let target = request.target.as_str();
    let flag = crate::interrupt::install_handler()?;
    let cfg = StressConfig {
        duration: Duration::from_secs_f64(request.duration),
        burnin: Duration::from_secs_f64(request.burnin_seconds),
        params: params.clone(),
        seed: request.seed,
        stop: Some(&flag),
    };
    for note in load.check(&cfg).map_err(UsageError)? {
        eprintln!("{note}");
    }
    let export = match &request.export {
        ExportChoice::File(p) => Some(ExportTarget::prepare(p)?),
        ExportChoice::Default => Some(ExportTarget::prepare(&PathBuf::from(format!(
            "warpt_stress_{target}_{}_{}.json",
            Timestamp::now().strftime("%Y%m%d_%H%M%S"),
            warpt_harness::random_suffix()
        )))?),
        ExportChoice::None => None,
    };
    let monitor_target = match request.monitor.as_ref().and_then(|m| m.output.as_ref()) {
        Some(p) => Some(ExportTarget::prepare(p)?),
        None => None,
    };
    let monitor = request
        .monitor
        .as_ref()
        .map(|m| warpt_system::monitor::Monitor::start(Duration::from_secs_f64(m.interval)));
    let start = Timestamp::now();
    let outcome = load.run(&cfg).map_err(UsageError)?;
    let end = Timestamp::now();
    let interrupted = flag.load(Ordering::Relaxed);
    let mut telemetry = None;
    if let Some(m) = monitor {
        let missing = m.missing().to_vec();
        let (timeline, overhead) = m.finish();
        let window: Vec<_> = timeline
            .iter()
            .filter(|s| s.timestamp.is_some_and(|t| t >= start && t <= end))
            .cloned()
            .collect();
        telemetry = Some(warpt_system::monitor::summarize(
            &window,
            Some(start),
            outcome.duration_s,
            &missing,
        ));
        crate::export::finish_timeline(&timeline, overhead, monitor_target)?;
    }
    let run = StressRun {
        id: warpt_harness::new_run_id(start),
        target: target.to_string(),
        start_time: Some(start),
        end_time: Some(end),
        duration_s: outcome.duration_s,
        params,
        unit: outcome.unit,
        throughput: outcome.throughput,
        checks: outcome.checks,
        errors: outcome.errors,
        error_examples: outcome.examples,
        passed: outcome.errors == 0 && outcome.checks > 0,
        telemetry,
        warnings: outcome.warnings,
        system: Some(warpt_system::snapshot()),
        labels: request.labels.clone(),
        description: request.description.clone(),
    };
    if let Some(t) = export {
        let shown = t.path().display().to_string();
        t.write_json(&run)?;
        eprintln!("exported {shown}");
    }
    crate::history::record_stress(&request.store, &run);
    let result = if interrupted {
        RunOutcome::Interrupted
    } else if run.passed {
        RunOutcome::Success
    } else {
        RunOutcome::Failures
    };
    Ok((run, result))
}
