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
use crate::events::EventLines;
use crate::export::default_file_name;
use crate::request::{ExportChoice, PlanSource, RunRequest};
use crate::{RunOutcome, UsageError, history};
use warpt_export::{ExportTarget, Format};

/// The suites a front end offers (the binary links them; this crate does
/// not).
pub trait Suites {
    /// Every suite, with the benchmarks declared in `config_file` and in
    /// `./warpt-bench.toml`: what plans are resolved against.
    fn declaring(&self, config_file: Option<&Path>) -> Result<Registry>;
    /// Every suite, declaring nothing: what the workers run.
    fn plain(&self) -> Registry;
}

/// Suites fixed when built, declaring nothing from configuration: a
/// test's registry, or an embedder's own.
pub struct Fixed(pub fn() -> Registry);

impl Suites for Fixed {
    fn declaring(&self, _config_file: Option<&Path>) -> Result<Registry> {
        Ok((self.0)())
    }

    fn plain(&self) -> Registry {
        (self.0)()
    }
}

/// "debug" or "release": how this warpt was built (recorded in the manifest).
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// What a request's selection is planned against: the configuration below
/// the request's own settings (defaults < file < `WARPT_*`) and the suites
/// with the benchmarks that configuration and `./warpt-bench.toml`
/// declare. The command line finds both for each run; `warpt serve` reads
/// them once, at start, so a caller's request never reads a configuration
/// file or the working directory.
pub struct PlanBase {
    /// The configuration without any request's flags.
    pub config: Config,
    /// The suites plans are resolved against.
    pub registry: Registry,
}

impl PlanBase {
    /// As the command line finds them: `config` (else the file found from
    /// the working directory or the XDG one), `WARPT_*` variables, the
    /// benchmarks those declare. A parameter the configuration sets that no
    /// benchmark declares is an error naming its source.
    pub fn discover(config: Option<&Path>, suites: &dyn Suites) -> Result<PlanBase> {
        let config = Config::load(
            config,
            &|k| std::env::var(k).ok(),
            &crate::config::Flags::default(),
        )?;
        let registry = suites.declaring(config.file.as_deref().map(Path::new))?;
        PlanBase::new(config, registry)
    }

    /// `config` over `registry`, once every parameter the configuration
    /// sets is known to be one some benchmark of the registry declares.
    pub fn new(config: Config, registry: Registry) -> Result<PlanBase> {
        check_config_params(&config, &registry)?;
        Ok(PlanBase { config, registry })
    }
}

/// The plan and options a request resolves to, through the configuration
/// layers (defaults < file < `WARPT_*` < flags), found as the command line
/// finds them ([`PlanBase::discover`]).
pub fn plan(request: &RunRequest, suites: &dyn Suites) -> Result<(Plan, RunOptions)> {
    request.validate().map_err(|e| UsageError(e.to_string()))?;
    match &request.plan {
        PlanSource::Replay(path) => {
            let mut flags = request.settings.clone();
            flags.store = request.store.flag().map(Path::to_path_buf);
            let reg = suites.declaring(crate::config::default_file()?.as_deref())?;
            crate::replay::from_export(path, &reg, &flags)
        }
        PlanSource::Select(_) => plan_on(
            request,
            &PlanBase::discover(request.config.as_deref(), suites)?,
        ),
    }
}

/// The plan and options `request`'s selection resolves to on `base` (its
/// `config` field is not read: the base holds the configuration). A
/// parameter name that is not exactly one of a selected benchmark's, a
/// value out of its range or choices, is a [`UsageError`] naming it.
pub fn plan_on(request: &RunRequest, base: &PlanBase) -> Result<(Plan, RunOptions)> {
    plan_gated(request, base, &|_, _, _| Ok(()))
}

/// [`plan_on`] with a front end's `gate` asked of every parameter the
/// request sets before any benchmark checks its values (see
/// [`Plan::resolve_gated`]): what `warpt serve` lets a remote caller set.
pub fn plan_gated(
    request: &RunRequest,
    base: &PlanBase,
    gate: warpt_harness::Gate<'_>,
) -> Result<(Plan, RunOptions)> {
    request.validate().map_err(|e| UsageError(e.to_string()))?;
    let PlanSource::Select(s) = &request.plan else {
        return Err(UsageError("a replayed run is planned from its export file".into()).into());
    };
    let mut flags = request.settings.clone();
    flags.store = request.store.flag().map(Path::to_path_buf);
    let config = base.config.clone().with_flags(&flags);
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
    let plan = Plan::resolve_gated(&base.registry, &selection, gate)?;
    let mut options = options_of(&config);
    options.repeat = request.repeat;
    Ok((plan, options))
}

/// Each parameter the configuration sets (`[params]` of the file,
/// `WARPT_PARAMS`) must be named exactly as some benchmark declares it:
/// a name with stray characters or a typo is an error naming its source,
/// not a setting that silently applies nowhere.
fn check_config_params(config: &Config, reg: &Registry) -> Result<(), UsageError> {
    let declared: std::collections::BTreeSet<String> = reg
        .all_specs()
        .into_iter()
        .flat_map(|s| s.params.into_keys())
        .collect();
    for (name, setting) in &config.params {
        if let Some(why) = warpt_harness::param_name_problem(name) {
            return Err(UsageError(format!(
                "{}: parameter name {name:?} {why}",
                setting.source
            )));
        }
        if !declared.contains(name) {
            return Err(UsageError(format!(
                "{}: no benchmark has a parameter '{name}' (`warpt benchmark describe` lists each one's)",
                setting.source
            )));
        }
    }
    Ok(())
}

/// The run options of an effective configuration.
pub fn options_of(config: &Config) -> RunOptions {
    let mut options = RunOptions::new(env!("CARGO_PKG_VERSION"), build_profile());
    options.duration = config.duration.value.map(Duration::from_secs_f64);
    options.burnin = Duration::from_secs_f64(config.burnin_seconds.value);
    options.seed = config.seed.value;
    options.target_rel_ci = config.precision.value / 100.0;
    options.timeout_multiplier = config.timeout_multiplier.value;
    // The run starts when its options are made.
    options.suite_limit = suite_limit(config.suite_timeout.value);
    options.percentiles = config.percentiles.value.clone();
    options.labels = config
        .labels
        .iter()
        .map(|(k, s)| (k.clone(), s.value.clone()))
        .collect();
    options.description = config.description.value.clone();
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

/// The limit `--suite-timeout SECONDS` sets from now (`None` for 0).
pub fn suite_limit(seconds: f64) -> Option<warpt_harness::SuiteLimit> {
    (seconds > 0.0)
        .then(|| warpt_harness::SuiteLimit::starting_now(Duration::from_secs_f64(seconds)))
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
    // The machine is read while the start-up probe of other processes' CPU
    // time waits (0.2 s), not after it.
    let (host, system) = warpt_harness::HostConditions::capture_while(build_profile(), || {
        options.system.is_none().then(warpt_system::snapshot)
    });
    if system.is_some() {
        options.system = system;
    }
    for w in host.warnings() {
        eprintln!("warning: {w}");
    }
    options.host = Some(host);
    if options.command_line.is_empty() {
        options.command_line = std::env::args().collect();
    }
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
    let events = EventLines::stdout();
    let progress: &dyn Progress = if request.events { &events } else { progress };
    let monitor = options.monitor.clone();
    let interval = request.monitor.as_ref().map(|m| m.interval).unwrap_or(1.0);
    // The monitor's samples go to the progress as they are taken.
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut suite_run = std::thread::scope(|s| {
        let forwarding = monitor.map(|m| {
            let done = &done;
            s.spawn(move || {
                let mut seen = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::park_timeout(Duration::from_secs_f64(interval));
                    let new = m.since(seen);
                    seen += new.len();
                    for sample in &new {
                        progress.telemetry(sample);
                    }
                }
            })
        });
        let ran = execute(plan, &mut options, suites, progress);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = forwarding {
            t.thread().unpark();
        }
        ran
    })?;
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
        let export = warpt_export::RunExport {
            run: &suite_run,
            baseline: None,
        };
        target.write(&Format::<warpt_export::Run>::render(
            &warpt_export::formats::Json,
            &export,
        )?)?;
        eprintln!("exported {shown}");
    }
    history::record_run(&request.store, request.config.as_deref(), &suite_run);
    Ok(Ran {
        outcome: RunOutcome::of(&suite_run),
        run: suite_run,
    })
}
