//! `warpt stress TARGET`: sustained load with error detection.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;
use jiff::Timestamp;
use warpt_micro::stress::{self, StressConfig, TARGETS};
use warpt_model::StressRun;

use crate::cli::StressArgs;

use crate::{Outcome, UsageError};
use warpt_run::ExportTarget;

/// Runs the stress test and reports it; exit 1 when any error was found.
pub fn run(args: &StressArgs) -> Result<Outcome> {
    let target = args.target.as_str();
    let gpu = target == "gpu";
    let defaults = if gpu {
        Some(warpt_gpu::stress::default_params())
    } else {
        stress::default_params(target)
    };
    let mut params = defaults.ok_or_else(|| {
        UsageError(format!(
            "unknown stress target '{target}'; targets: {}, gpu",
            TARGETS.join(", ")
        ))
    })?;
    for text in &args.params {
        let (k, v) = text.split_once('=').ok_or_else(|| {
            UsageError(format!(
                "malformed --param '{text}': expected key=value, e.g. --param inject_error=1"
            ))
        })?;
        let default = params.get(k.trim()).ok_or_else(|| {
            UsageError(format!(
                "unknown parameter '{}' for stress {target}; it accepts: {}",
                k.trim(),
                params.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })?;
        let value = default
            .parse_like(k.trim(), v)
            .map_err(|e| UsageError(e.to_string()))?;
        params.insert(k.trim().to_string(), value);
    }
    let flag = warpt_run::interrupt::install_handler()?;
    let cfg = StressConfig {
        duration: Duration::from_secs_f64(args.duration),
        burnin: Duration::from_secs_f64(args.burnin_seconds),
        params: params.clone(),
        seed: args.seed,
        stop: Some(&flag),
    };
    if !gpu {
        for note in stress::check(target, &cfg).map_err(UsageError)? {
            eprintln!("{note}");
        }
    }
    let export = match (&args.export_file, args.export) {
        (Some(p), _) => Some(ExportTarget::prepare(p)?),
        (None, true) => Some(ExportTarget::prepare(&PathBuf::from(format!(
            "warpt_stress_{target}_{}_{}.json",
            Timestamp::now().strftime("%Y%m%d_%H%M%S"),
            warpt_harness::random_suffix()
        )))?),
        (None, false) => None,
    };
    let monitor_target = match &args.monitor.output {
        Some(p) => Some(ExportTarget::prepare(p)?),
        None => None,
    };
    let monitor = args.monitor.enabled.then(|| {
        warpt_system::monitor::Monitor::start(Duration::from_secs_f64(args.monitor.interval))
    });
    let start = Timestamp::now();
    let outcome = if gpu {
        warpt_gpu::stress::run(&cfg)
    } else {
        stress::run(target, &cfg)
    }
    .map_err(UsageError)?;
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
            outcome.duration_s,
            &missing,
        ));
        eprintln!(
            "monitor: {} samples; its own CPU time was {:.3}% of one core",
            timeline.len(),
            overhead * 100.0
        );
        if let Some(t) = monitor_target {
            let shown = t.path().display().to_string();
            t.write_json(&timeline)?;
            eprintln!("monitor timeline written to {shown}");
        }
    }
    let run = StressRun {
        id: warpt_harness::new_run_id(start),
        target: target.to_string(),
        start_time: Some(start),
        end_time: Some(end),
        duration_s: outcome.duration_s,
        params,
        unit: outcome.unit.clone(),
        throughput: outcome.throughput.clone(),
        checks: outcome.checks,
        errors: outcome.errors,
        error_examples: outcome.examples.clone(),
        passed: outcome.errors == 0 && outcome.checks > 0,
        telemetry,
        warnings: outcome.warnings.clone(),
        system: Some(warpt_system::snapshot()),
    };
    let summary = warpt_report::terminal::stress(&run);
    if args.json {
        eprint!("{summary}");
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else {
        print!("{summary}");
    }
    if let Some(t) = export {
        let shown = t.path().display().to_string();
        t.write_json(&run)?;
        eprintln!("exported {shown}");
    }
    warpt_run::history::record_stress(&args.store.choice(), &run);
    Ok(if interrupted {
        Outcome::Interrupted
    } else if run.passed {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}
