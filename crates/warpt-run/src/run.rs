//! [`run()`]: plan → workers → monitor → export → store → outcome, the
//! flow every front end that measures shares.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use warpt_harness::{Plan, Progress, Registry, RunOptions, Selection, run_plan};
use warpt_model::{BenchmarkComponent, BenchmarkId, BenchmarkSuiteRun, ParamValue, Params};

use crate::config::Config;
use crate::events::{EventLines, TelemetryFeed};
use crate::export::{ExportTarget, default_file_name};
use crate::request::{ExportChoice, PlanSource, RunRequest};
use crate::{RunOutcome, UsageError, history};

/// The suites a front end offers (the binary links them; this crate does
/// not).
pub trait Suites {
    /// Every suite, with the benchmarks declared in `config_file` and in
    /// `./warpt-bench.toml`: what plans are resolved against.
    fn declaring(&self, config_file: Option<&Path>) -> Result<Registry>;
    /// Every suite, declaring nothing: what the workers run.
    fn plain(&self) -> Registry;
}

/// "debug" or "release": how this warpt was built (recorded in the manifest).
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The plan and options a request resolves to, through the configuration
/// layers (defaults < file < `WARPT_*` < flags).
pub fn plan(request: &RunRequest, suites: &dyn Suites) -> Result<(Plan, RunOptions)> {
    request.validate().map_err(|e| UsageError(e.to_string()))?;
    let mut flags = request.settings.clone();
    flags.store = request.store.flag().map(Path::to_path_buf);
    match &request.plan {
        PlanSource::Replay(path) => {
            let reg = suites.declaring(crate::config::default_file()?.as_deref())?;
            crate::replay::from_export(path, &reg, &flags)
        }
        PlanSource::Select(s) => {
            let config = Config::load(
                request.config.as_deref(),
                &|k| std::env::var(k).ok(),
                &flags,
            )?;
            let reg = suites.declaring(config.file.as_deref().map(Path::new))?;
            let selection = Selection {
                suite: s.suite.clone(),
                benchmarks: s.benchmarks.clone(),
                components: s.components.clone(),
                params: s.params.clone(),
                soft_params: config
                    .params
                    .iter()
                    .map(|(k, s)| (k.clone(), s.value.clone()))
                    .collect(),
            };
            let plan = Plan::resolve(&reg, &selection).map_err(|e| UsageError(e.to_string()))?;
            let mut options = options_of(&config);
            options.repeat = request.repeat;
            Ok((plan, options))
        }
    }
}

/// The run options of an effective configuration.
pub fn options_of(config: &Config) -> RunOptions {
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
    options
}

/// What `--dry-run` prints.
pub fn plan_text(plan: &Plan) -> String {
    let mut out = format!(
        "plan '{}': {} benchmark(s)\n",
        plan.label,
        plan.entries.len()
    );
    for e in &plan.entries {
        let params = e
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!("  {}  {params}\n", e.spec.id));
    }
    for u in &plan.unavailable {
        out.push_str(&format!(
            "  (component {}: {} not run: {})\n",
            u.component, u.id, u.reason
        ));
    }
    out
}

/// The plan of `--dry-run --json`.
#[derive(Serialize)]
pub struct PlanJson<'a> {
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

impl<'a> PlanJson<'a> {
    /// The machine-readable form of `plan`.
    pub fn of(plan: &'a Plan) -> Self {
        PlanJson {
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
        }
    }
}

/// A finished run: the suite run (exported and recorded as asked) and the
/// outcome its exit status follows.
pub struct Ran {
    /// The run.
    pub run: BenchmarkSuiteRun,
    /// How it ended.
    pub outcome: RunOutcome,
}

/// Runs `plan` with `progress`, Ctrl-C handling and the start-of-run
/// warnings on stderr.
pub fn execute(
    plan: &Plan,
    options: &mut RunOptions,
    suites: &dyn Suites,
    progress: &dyn Progress,
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
        options.interrupt = Some(crate::interrupt::install_handler()?);
    }
    Ok(run_plan(&suites.plain(), plan, options, progress))
}

/// Runs `request`'s plan (already resolved by [`plan`]): the export
/// destination checked first, the monitor around the run, the events
/// streamed when asked, then export (atomic) and store. `progress`
/// receives the run's events unless `--events` takes them.
///
/// Printing the results is the caller's (after this returns: the export
/// and the store line come first on stderr).
pub fn run(
    request: &RunRequest,
    plan: &Plan,
    mut options: RunOptions,
    suites: &dyn Suites,
    progress: &dyn Progress,
) -> Result<Ran> {
    // Check the export destination before spending minutes measuring.
    let export = match &request.export {
        ExportChoice::File(path) => Some(ExportTarget::prepare(path)?),
        ExportChoice::Default => Some(ExportTarget::prepare(&PathBuf::from(default_file_name(
            &plan.label,
        )))?),
        ExportChoice::None => None,
    };
    let monitor_target = match request.monitor.as_ref().and_then(|m| m.output.as_ref()) {
        Some(path) => Some(ExportTarget::prepare(path)?),
        None => None,
    };
    if let Some(m) = &request.monitor {
        let m = warpt_system::monitor::Monitor::start(Duration::from_secs_f64(m.interval));
        for missing in m.missing() {
            eprintln!("monitor: {missing}");
        }
        options.monitor = Some(Arc::new(m));
    }
    options.run_id = request.run_id.clone();
    if request.events {
        // Started by `warpt serve`: if the server dies, stop as on Ctrl-C
        // (the finished benchmarks are recorded, the run marked interrupted).
        let flag = crate::interrupt::install_handler()?;
        options.interrupt = Some(Arc::clone(&flag));
        crate::orphan::watch(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    let events = EventLines::new();
    let feed = match (&options.monitor, &request.monitor, request.events) {
        (Some(m), Some(r), true) => Some(TelemetryFeed::start(
            Arc::clone(m),
            Duration::from_secs_f64(r.interval),
        )),
        _ => None,
    };
    let progress: &dyn Progress = if request.events { &events } else { progress };
    let mut suite_run = execute(plan, &mut options, suites, progress)?;
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
        crate::export::finish_timeline(&timeline, overhead, monitor_target)?;
    }
    if let Some(target) = export {
        let shown = target.path().display().to_string();
        target.write(&suite_run)?;
        eprintln!("exported {shown}");
    }
    history::record_run(&request.store, request.config.as_deref(), &suite_run);
    Ok(Ran {
        outcome: RunOutcome::of(&suite_run),
        run: suite_run,
    })
}
