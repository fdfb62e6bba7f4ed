//! `warpt benchmark run`: from flags, configuration or a previous export
//! to a plan, then run it, print, export.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use warpt_harness::{NoProgress, Plan, Progress, RunOptions, Selection, run_plan};
use warpt_model::{BenchmarkComponent, BenchmarkId, BenchmarkSuiteRun, ParamValue, Params};

use crate::cli::{PlanArgs, RunArgs};
use crate::config::{Config, Flags};
use crate::events::{EventLines, TelemetryFeed};
use crate::export::{ExportTarget, default_file_name};
use crate::progress::BarProgress;
use crate::registry::{registry, registry_declaring, registry_found};
use crate::{Outcome, UsageError, output};

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

pub(crate) fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The plan and options from the flags, the configuration file and the
/// environment.
pub(crate) fn from_selection(args: &PlanArgs, store: Option<&Path>) -> Result<(Plan, RunOptions)> {
    let flags = Flags {
        duration: args.duration,
        burnin_seconds: args.burnin_seconds,
        seed: args.seed,
        precision: args.precision,
        timeout_multiplier: args.timeout_multiplier,
        in_process: args.in_process,
        store: store.map(Path::to_path_buf),
    };
    let config = Config::load(args.config.as_deref(), &|k| std::env::var(k).ok(), &flags)?;
    let reg = registry_declaring(config.file.as_deref().map(Path::new))?;
    let selection = Selection {
        suite: args.suite.clone(),
        benchmarks: args.benchmarks.clone(),
        components: args.components.clone(),
        params: args.params.clone(),
        soft_params: config
            .params
            .iter()
            .map(|(k, s)| (k.clone(), s.value.clone()))
            .collect(),
    };
    let plan = Plan::resolve(&reg, &selection).map_err(|e| UsageError(e.to_string()))?;
    let mut options = RunOptions::new(env!("CARGO_PKG_VERSION"), build_profile());
    options.duration = config.duration.value.map(Duration::from_secs_f64);
    options.burnin = Duration::from_secs_f64(config.burnin_seconds.value);
    options.seed = config.seed.value;
    options.target_rel_ci = config.precision.value / 100.0;
    options.timeout_multiplier = config.timeout_multiplier.value;
    options.in_process = config.in_process.value;
    options.timeouts = config.timeouts.value;
    options.benchmark_timeouts = config
        .benchmark_timeouts
        .iter()
        .map(|(k, s)| (k.clone(), s.value))
        .collect();
    options.config_file = config.file.clone();
    Ok((plan, options))
}

/// The plan and options of a previous export, for `--replay`.
fn from_export(path: &Path, args: &PlanArgs) -> Result<(Plan, RunOptions)> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read --replay file {shown}: {e}")))?;
    let old = warpt_model::load_suite_run(&text)
        .map_err(|e| UsageError(format!("--replay file {shown}: {e}")))?;
    let manifest = old.manifest.as_ref().ok_or_else(|| {
        UsageError(format!("--replay file {shown} has no manifest (written by an older warpt); nothing to replay exactly"))
    })?;
    let cfg = &manifest.config;
    let reg = registry_found()?;
    // The i-th planned entry of a benchmark ran as its i-th result (a sweep
    // plans one benchmark several times).
    let mut seen: BTreeMap<&BenchmarkId, usize> = BTreeMap::new();
    let entries: Vec<(BenchmarkId, Params, BTreeMap<String, String>)> = cfg
        .plan
        .iter()
        .map(|id| {
            let nth = seen.entry(id).or_insert(0);
            let result = old.benchmarks.iter().filter(|b| b.spec.id == *id).nth(*nth);
            *nth += 1;
            let spec = reg.spec(id);
            let params = match result {
                Some(r) => r.params.clone(),
                None => spec
                    .as_ref()
                    .map(|spec| {
                        let mut p = spec.params.clone();
                        for (k, v) in &cfg.param_overrides {
                            if let Some(parsed) =
                                spec.params.get(k).and_then(|d| d.parse_like(k, v).ok())
                            {
                                p.insert(k.clone(), parsed);
                            }
                        }
                        p
                    })
                    .unwrap_or_default(),
            };
            let sweep = spec
                .map(|spec| {
                    cfg.param_overrides
                        .iter()
                        .filter(|(k, v)| warpt_harness::is_sweep(&spec, k, v))
                        .filter_map(|(k, _)| params.get(k).map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            (id.clone(), params, sweep)
        })
        .collect();
    let label = if old.suite == "components" {
        old.components
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join("-")
    } else {
        old.suite.clone()
    };
    let plan = Plan::replay(&reg, &old.suite, &old.components, &label, &entries)
        .map_err(|e| UsageError(format!("--replay file {shown}: {e}")))?;
    let mut options = RunOptions::new(env!("CARGO_PKG_VERSION"), build_profile());
    options.duration = cfg.duration_s.map(Duration::from_secs_f64);
    options.burnin = Duration::from_secs_f64(cfg.burnin_s);
    options.seed = cfg.seed;
    options.target_rel_ci = cfg.target_rel_ci;
    options.timeouts = cfg.timeouts;
    options.benchmark_timeouts = cfg.benchmark_timeouts.clone();
    options.timeout_multiplier = args.timeout_multiplier.unwrap_or(cfg.timeout_multiplier);
    options.in_process = args.in_process || cfg.in_process;
    options.replay_of = Some(shown.to_string());
    options.repeat = cfg.repeat.max(1);
    let mut plan = plan;
    plan.overrides = cfg.param_overrides.clone();
    Ok((plan, options))
}

/// `warpt benchmark run`.
pub fn run(args: &RunArgs) -> Result<Outcome> {
    let (plan, mut options) = match &args.replay {
        Some(path) => from_export(path, &args.plan)?,
        None => {
            let (plan, mut options) = from_selection(&args.plan, args.store.store.as_deref())?;
            options.repeat = args.repeat;
            (plan, options)
        }
    };

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
    let monitor_target = match &args.monitor.output {
        Some(path) => Some(ExportTarget::prepare(path)?),
        None => None,
    };
    if args.monitor.enabled {
        let interval = Duration::from_secs_f64(args.monitor.interval);
        let m = warpt_system::monitor::Monitor::start(interval);
        for missing in m.missing() {
            eprintln!("monitor: {missing}");
        }
        options.monitor = Some(Arc::new(m));
    }
    options.run_id = args.run_id.clone();
    if args.events {
        // Started by `warpt serve`: if the server dies, stop as on Ctrl-C
        // (the finished benchmarks are recorded, the run marked interrupted).
        let flag = install_interrupt_handler()?;
        options.interrupt = Some(Arc::clone(&flag));
        crate::orphan::watch(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    let events = EventLines::new();
    let feed = match (&options.monitor, args.events) {
        (Some(m), true) => Some(TelemetryFeed::start(
            Arc::clone(m),
            Duration::from_secs_f64(args.monitor.interval),
        )),
        _ => None,
    };
    let mut suite_run = execute(&plan, &mut options, args.events.then_some(&events))?;
    drop(feed);
    if let (Some(m), Some(from)) = (suite_run.manifest.as_mut(), &options.replay_of) {
        m.extra
            .insert("replay_of".into(), ParamValue::Str(from.clone()));
    }
    if let Some(monitor) = options.monitor.take().and_then(|m| Arc::try_unwrap(m).ok()) {
        let (timeline, overhead) = monitor.finish();
        if let Some(m) = suite_run.manifest.as_mut() {
            m.extra
                .insert("monitor_cpu_share".into(), ParamValue::Float(overhead));
            m.extra.insert(
                "monitor_samples".into(),
                ParamValue::Int(timeline.len() as i64),
            );
        }
        eprintln!(
            "monitor: {} samples; its own CPU time was {:.3}% of one core",
            timeline.len(),
            overhead * 100.0
        );
        if let Some(target) = monitor_target {
            let shown = target.path().display().to_string();
            target.write_json(&timeline)?;
            eprintln!("monitor timeline written to {shown}");
        }
    }

    let table = output::results(&suite_run);
    if args.json || args.events {
        eprint!("{table}");
        if args.json {
            println!("{}", serde_json::to_string_pretty(&suite_run)?);
        }
    } else {
        print!("{table}");
    }
    if let Some(target) = export {
        let shown = target.path().display().to_string();
        target.write(&suite_run)?;
        eprintln!("exported {shown}");
    }
    crate::history::record_run(&args.store, args.plan.config.as_deref(), &suite_run);
    Ok(if suite_run.interrupted {
        eprintln!("interrupted: the results above are those finished before the signal");
        Outcome::Interrupted
    } else if suite_run.has_failures() {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}

/// Runs `plan` with the progress bar on stderr (or `progress`), Ctrl-C
/// handling and the start-of-run warnings: the flow every command that
/// measures shares.
pub(crate) fn execute(
    plan: &Plan,
    options: &mut RunOptions,
    progress: Option<&dyn Progress>,
) -> Result<BenchmarkSuiteRun> {
    for u in &plan.unavailable {
        eprintln!(
            "note: component {}: {} not run: {}",
            u.component, u.id, u.reason
        );
    }
    let host = warpt_harness::HostConditions::capture(build_profile());
    for w in host.warnings() {
        eprintln!("warning: {w}");
    }
    options.host = Some(host);
    options.command_line = std::env::args().collect();
    if options.interrupt.is_none() {
        options.interrupt = Some(install_interrupt_handler()?);
    }
    let reg = registry();
    let bar = BarProgress::new();
    let progress: &dyn Progress = match progress {
        Some(p) => p,
        None if std::env::var_os("WARPT_NO_PROGRESS").is_some() => &NoProgress,
        None => &bar,
    };
    Ok(run_plan(&reg, plan, options, progress))
}

/// SIGINT or SIGTERM sets the returned flag (the runner stops the current
/// worker and keeps what finished); a second one exits at once with 130.
pub(crate) fn install_interrupt_handler() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Order matters: the conditional exit sees the flag as it was
        // before this signal, so only a second signal exits.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    Ok(flag)
}
