//! `warpt benchmark list | describe | run`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use warpt_harness::{NoProgress, Plan, Progress, RunOptions, Selection, run_plan};
use warpt_model::{BenchmarkComponent, BenchmarkId, Params};

use crate::cli::{DescribeArgs, ListArgs, RunArgs};
use crate::export::{ExportTarget, default_file_name};
use crate::progress::BarProgress;
use crate::registry::registry;
use crate::{Outcome, UsageError, output};

/// `warpt benchmark list`.
pub fn list(args: &ListArgs) -> Result<Outcome> {
    let reg = registry();
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
    let reg = registry();
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

/// The machine-readable form of `--dry-run --json`.
#[derive(Serialize)]
struct PlanJson<'a> {
    suite: &'a str,
    label: &'a str,
    components: &'a [BenchmarkComponent],
    benchmarks: Vec<PlanEntryJson<'a>>,
    unavailable: Vec<UnavailableJson<'a>>,
}

#[derive(Serialize)]
struct PlanEntryJson<'a> {
    id: &'a BenchmarkId,
    params: &'a Params,
}

#[derive(Serialize)]
struct UnavailableJson<'a> {
    component: BenchmarkComponent,
    id: &'a BenchmarkId,
    reason: &'a str,
}

/// `warpt benchmark run`.
pub fn run(args: &RunArgs) -> Result<Outcome> {
    let reg = registry();
    let selection = Selection {
        suite: args.suite.clone(),
        benchmarks: args.benchmarks.clone(),
        components: args.components.clone(),
        params: args.params.clone(),
    };
    let plan = Plan::resolve(&reg, &selection).map_err(|e| UsageError(e.to_string()))?;

    if args.dry_run {
        if args.json {
            let json = PlanJson {
                suite: &plan.suite,
                label: &plan.label,
                components: &plan.components,
                benchmarks: plan
                    .entries
                    .iter()
                    .map(|e| PlanEntryJson {
                        id: &e.spec.id,
                        params: &e.params,
                    })
                    .collect(),
                unavailable: plan
                    .unavailable
                    .iter()
                    .map(|u| UnavailableJson {
                        component: u.component,
                        id: &u.id,
                        reason: &u.reason,
                    })
                    .collect(),
            };
            println!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            print!("{}", output::plan(&plan));
        }
        return Ok(Outcome::Success);
    }

    // Check the export destination before spending minutes measuring.
    let export = match (&args.export_file, args.export) {
        (Some(path), _) => Some(ExportTarget::prepare(path)?),
        (None, true) => Some(ExportTarget::prepare(&PathBuf::from(default_file_name(
            &plan.label,
        )))?),
        (None, false) => None,
    };
    for u in &plan.unavailable {
        eprintln!(
            "note: component {}: {} not run: {}",
            u.component, u.id, u.reason
        );
    }

    let interrupt = install_interrupt_handler()?;
    let build_profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let mut options = RunOptions::new(env!("CARGO_PKG_VERSION"), build_profile);
    options.duration = args.duration.map(Duration::from_secs_f64);
    options.burnin = Duration::from_secs_f64(args.burnin_seconds);
    options.seed = args.seed;
    options.target_rel_ci = args.precision / 100.0;
    options.command_line = std::env::args().collect();
    options.in_process = args.in_process;
    options.timeout_multiplier = args.timeout_multiplier;
    options.interrupt = Some(interrupt);
    let bar = BarProgress::new();
    let progress: &dyn Progress = if std::env::var_os("WARPT_NO_PROGRESS").is_some() {
        &NoProgress
    } else {
        &bar
    };
    let suite_run = run_plan(&reg, &plan, &options, progress);

    let table = output::results(&suite_run);
    if args.json {
        eprint!("{table}");
        println!("{}", serde_json::to_string_pretty(&suite_run)?);
    } else {
        print!("{table}");
    }
    if let Some(target) = export {
        let shown = target.path().display().to_string();
        target.write(&suite_run)?;
        eprintln!("exported {shown}");
    }
    for w in suite_run.manifest.iter().flat_map(|m| &m.warnings) {
        eprintln!("warning: {w}");
    }
    Ok(if suite_run.interrupted {
        eprintln!("interrupted: the results above are those finished before the signal");
        Outcome::Interrupted
    } else if suite_run.has_failures() {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}

/// SIGINT or SIGTERM sets the returned flag (the runner stops the current
/// worker and keeps what finished); a second one exits at once with 130.
fn install_interrupt_handler() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Order matters: the conditional exit sees the flag as it was
        // before this signal, so only a second signal exits.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    Ok(flag)
}
