//! `warpt harness run`: every pair and kernel of a manifest, each file in
//! warpt's worker under the supervisor's stage limits, baseline and
//! optimized interleaved in A B rounds (the engine of
//! `benchmark compare --rerun`), into one suite run of suite `harness`.
//!
//! Per file and combination of its `bench.yaml`:
//! - a **pair** runs `rounds` interleaved rounds per optimized variant; its
//!   `speedup` is median(baseline) / median(optimized) with the paired
//!   bootstrap CI and test that `compare` computes, a regression when the
//!   variant is significantly slower than the threshold; the variant's last
//!   output is checked against the baseline's (see [`crate::accuracy`]);
//! - a **kernel** runs `rounds` trials one after another.
//!
//! Each result's `latency_ms` (and `ttft_ms` / `tpot_ms`) pools the samples
//! of all its trials, so its percentiles are per-call (per-request) ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use warpt_harness::interleave::{self, TrialEvent, TrialSource};
use warpt_harness::{NoProgress, Plan, PlannedBenchmark, Registry, RunOptions, run_plan};
use warpt_model::{
    BenchmarkComponent, BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun, ParamValue,
    RunStatus, Validation,
};
use warpt_report::compare::noise::NoNoise;
use warpt_report::compare::{self, MetricComparison};

use crate::accuracy::{self, Accuracy};
use crate::config::{BenchConfig, Combination, ConfigError, Tolerances};
use crate::discover::Manifest;
use crate::suite::{self, HarnessSuite, SUITE};

mod reference;
mod units;
mod verdict;

use units::{BaseSide, Ctx};

/// A setting and whether a command-line flag set it: configuration
/// layers as defaults < config file < `get_config()` < flags, so only a
/// flag beats what a benchmark's `get_config()` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layered<T> {
    /// The value from defaults, the config file or the flag.
    pub value: T,
    /// Whether it came from a flag.
    pub from_flag: bool,
}

impl<T: Copy> Layered<T> {
    /// The effective value when the benchmark's `get_config()` offers `own`.
    fn with(self, own: Option<T>) -> (T, &'static str) {
        match own {
            Some(v) if !self.from_flag => (v, "get_config()"),
            _ if self.from_flag => (self.value, "flag"),
            _ => (self.value, "default or config file"),
        }
    }
}

/// How a harness run runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The interpreter for Python benchmarks.
    pub python: String,
    /// Interleaved rounds per pair (trials per kernel).
    pub rounds: u32,
    /// Measurement seconds per trial (`None`: 2 s unless `get_config()` says).
    pub duration: Layered<Option<f64>>,
    /// Warm-up seconds per trial (`None`: [`suite::DEFAULT_BURNIN_S`], at
    /// most the trial's duration, unless `get_config()` says).
    pub burnin: Layered<Option<f64>>,
    /// Seed: round order, and the benchmarks' generators with `reproducible`.
    pub seed: u64,
    /// Scales every stage limit.
    pub timeout_multiplier: Layered<f64>,
    /// Seed the generators the files import; deterministic algorithms.
    pub reproducible: bool,
    /// A fresh interpreter per sample, the page cache dropped where permitted.
    pub cold_start: bool,
    /// `--timing`: beats `get_config()` and bench.yaml.
    pub timing: Option<crate::config::Timing>,
    /// `--cold-cache`: flush the cache before every call.
    pub cold_cache: Option<bool>,
    /// `--no-device-hygiene`: `Some(false)`.
    pub device_hygiene: Option<bool>,
    /// `--measure instructions`: one call's instructions counted too
    /// ([`crate::counted`]).
    pub count_instructions: bool,
    /// A variant this many percent slower than its baseline, significantly, regressed.
    pub regression_threshold_pct: f64,
    /// Where the outputs compared for accuracy are written.
    pub output_dir: PathBuf,
    /// The warpt executable that runs workers (the running one by default).
    pub worker_exe: Option<PathBuf>,
    /// Set to stop the run (Ctrl-C); what finished is kept.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// warpt's version.
    pub tool_version: String,
    /// `release` or `debug`.
    pub build_profile: String,
    /// The command line, for the manifest.
    pub command_line: Vec<String>,
    /// `--precision` / `--backends`: the matrix values to run.
    pub matrix: crate::config::MatrixFilter,
    /// The whole run's time limit (`--suite-timeout`), counted from its
    /// start: past it the running file is stopped and the rest are
    /// `timeout` results.
    pub suite_limit: Option<warpt_harness::SuiteLimit>,
    /// Percentiles added to every metric's stats (`--percentiles`).
    pub percentiles: warpt_model::Percentiles,
    /// The run's labels (`--label`).
    pub labels: BTreeMap<String, String>,
    /// The run's description (`--description`).
    pub description: Option<String>,
    /// How long `--profile`'s run of one file may take
    /// ([`crate::profile::DEFAULT_LIMIT`] unless `--profile-timeout` says).
    pub profile_limit: std::time::Duration,
    /// The background monitor (`--monitor`), started and finished by the
    /// caller: each trial's result gets the telemetry and the energy
    /// metrics of its measurement window.
    pub monitor: Option<Arc<warpt_system::monitor::Monitor>>,
}

/// A benchmark's role in the run, in its `role` detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A pair's baseline.
    Baseline,
    /// A pair's optimized variant.
    Optimized,
    /// A standalone kernel.
    Kernel,
}

impl Role {
    /// `baseline`, `optimized` or `kernel`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Baseline => "baseline",
            Role::Optimized => "optimized",
            Role::Kernel => "kernel",
        }
    }
}

/// What one line of progress says.
#[derive(Debug)]
pub enum Event<'a> {
    /// A unit (a file at a combination, or a pair) begins.
    Started {
        /// Its id.
        id: &'a str,
        /// How many units came before it.
        index: usize,
        /// Of how many.
        total: usize,
    },
    /// A trial of one side finished.
    Trial {
        /// The file's id.
        id: &'a str,
        /// 1-based round.
        round: u32,
        /// Of how many.
        rounds: u32,
        /// The trial's result.
        result: &'a BenchmarkRunResult,
    },
    /// A unit was skipped or finished.
    Finished {
        /// Its result.
        result: &'a BenchmarkRunResult,
    },
}

impl Event<'_> {
    /// The progress line a terminal shows for this event, if any: the unit
    /// starting, each trial's p50 latency, and a result that did not pass.
    pub fn line(&self) -> Option<String> {
        match self {
            Event::Started { id, index, total } => Some(format!("[{}/{total}] {id}", index + 1)),
            Event::Trial {
                id,
                round,
                rounds,
                result,
            } => Some(format!(
                "    round {round}/{rounds} {id}: {}",
                result
                    .metrics
                    .iter()
                    .find(|m| m.name == "latency_ms")
                    .map_or("no latency".into(), |m| format!("p50 {:.4} ms", m.value))
            )),
            Event::Finished { result } if result.status != RunStatus::Passed => {
                let why = result
                    .error_message
                    .as_deref()
                    .and_then(|m| m.lines().next())
                    .unwrap_or("");
                Some(format!(
                    "    {} {}: {why}",
                    result.spec.id.name,
                    result.status.as_str()
                ))
            }
            Event::Finished { .. } => None,
        }
    }
}

/// One file at one combination, planned.
struct Unit {
    id: String,
    chapter: String,
    example: String,
    file: PathBuf,
    role: Role,
    combo: Combination,
}

/// The configuration of every file, read before anything runs so a bad
/// `bench.yaml` is a usage error, not a late failure.
pub fn load_configs(manifest: &Manifest) -> Result<BTreeMap<PathBuf, BenchConfig>, ConfigError> {
    let mut out = BTreeMap::new();
    let files = manifest
        .chapters
        .iter()
        .flat_map(|c| c.pairs.iter().map(|p| p.baseline.clone()))
        .chain(manifest.kernels.iter().map(|k| k.path.clone()));
    for f in files {
        let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
        if let std::collections::btree_map::Entry::Vacant(slot) = out.entry(dir) {
            slot.insert(BenchConfig::beside(&f)?.0);
        }
    }
    Ok(out)
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The id tail of a combination: `precision=fp32,backend=cpu`.
fn combo_key(c: &Combination) -> String {
    warpt_model::tag_label(&c.tags)
}

/// Runs every pair and kernel of `manifest` (already narrowed to the
/// targets) and returns the suite run, `on_event` told as it goes.
pub fn run(
    manifest: &Manifest,
    configs: &BTreeMap<PathBuf, BenchConfig>,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event<'_>),
) -> BenchmarkSuiteRun {
    let start = Timestamp::now();
    let mut registry = Registry::new();
    registry.register(Box::new(HarnessSuite));
    let mut options = RunOptions::new(&settings.tool_version, &settings.build_profile);
    options.seed = settings.seed;
    options.worker_exe = settings.worker_exe.clone();
    options.interrupt = settings.interrupt.clone();
    options.command_line = settings.command_line.clone();
    options.suite_limit = settings.suite_limit;
    options.percentiles = settings.percentiles.clone();
    options.labels = settings.labels.clone();
    options.description = settings.description.clone();
    options.monitor = settings.monitor.clone();
    // Every trial is a one-benchmark plan: the machine is read once, while
    // the start-up probe of other processes' CPU time waits.
    let (host, system) = warpt_harness::HostConditions::capture_while(
        &settings.build_profile,
        warpt_system::snapshot,
    );
    options.host = Some(host);
    options.system = Some(system);
    options.machine = Some(warpt_harness::MachineFacts::capture());
    let outputs = settings.output_dir.join("outputs");
    // Each benchmark's log is appended to trial by trial: an earlier run's
    // in the same directory goes first.
    if let Ok(entries) = std::fs::read_dir(&outputs) {
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "log") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    // The matrix of each directory, skip checks run once.
    let matrix: BTreeMap<&Path, (Vec<Combination>, Tolerances)> = configs
        .iter()
        .map(|(dir, c)| {
            (
                dir.as_path(),
                (
                    c.combinations(&settings.python, &settings.matrix),
                    c.tolerances(),
                ),
            )
        })
        .collect();
    let plain = (
        BenchConfig::default().combinations(&settings.python, &settings.matrix),
        Tolerances::DEFAULT,
    );
    let matrix_of = |f: &Path| f.parent().and_then(|d| matrix.get(d)).unwrap_or(&plain);
    // Asked once: a launcher (pyenv's shim) would otherwise run per trial.
    let resolved =
        crate::interpreter::resolve(&settings.python).and_then(|p| p.to_str().map(str::to_string));
    let ctx = Ctx {
        registry: &registry,
        options: &options,
        settings,
        outputs: &outputs,
        python_executable: resolved.as_deref(),
    };
    let total: usize = manifest
        .chapters
        .iter()
        .flat_map(|c| &c.pairs)
        .map(|p| p.optimized.len() * matrix_of(&p.baseline).0.len())
        .chain(manifest.kernels.iter().map(|k| matrix_of(&k.path).0.len()))
        .sum();
    let mut index = 0;
    let mut results = Vec::new();
    let mut first_trial: Option<BenchmarkSuiteRun> = None;
    'all: for chapter in &manifest.chapters {
        for pair in &chapter.pairs {
            let (combos, tolerances) = matrix_of(&pair.baseline);
            for combo in combos {
                let unit = |file: &Path, role| Unit {
                    id: format!("{}/{}/{}", chapter.name, pair.example, stem(file)),
                    chapter: chapter.name.clone(),
                    example: pair.example.clone(),
                    file: file.to_path_buf(),
                    role,
                    combo: combo.clone(),
                };
                let mut base = BaseSide::new(unit(&pair.baseline, Role::Baseline));
                for opt_file in &pair.optimized {
                    let opt = unit(opt_file, Role::Optimized);
                    on_event(Event::Started {
                        id: &opt.id,
                        index,
                        total,
                    });
                    index += 1;
                    let optimized = ctx.pair(&mut base, &opt, *tolerances, on_event);
                    on_event(Event::Finished { result: &optimized });
                    results.push(optimized);
                    if ctx.interrupted() {
                        break;
                    }
                }
                if first_trial.is_none() {
                    first_trial = base.first_run().cloned();
                }
                results.push(ctx.finish_base(base, on_event));
                if ctx.interrupted() {
                    break 'all;
                }
            }
        }
    }
    if !ctx.interrupted() {
        for kernel in &manifest.kernels {
            for combo in &matrix_of(&kernel.path).0 {
                let unit = Unit {
                    id: format!("kernels/{}", kernel.name),
                    chapter: "kernels".into(),
                    example: kernel.name.clone(),
                    file: kernel.path.clone(),
                    role: Role::Kernel,
                    combo: combo.clone(),
                };
                on_event(Event::Started {
                    id: &unit.id,
                    index,
                    total,
                });
                index += 1;
                let tolerances = matrix_of(&kernel.path).1;
                let (result, sample) = ctx.kernel(&unit, tolerances, on_event);
                if first_trial.is_none() {
                    first_trial = sample;
                }
                on_event(Event::Finished { result: &result });
                results.push(result);
                if ctx.interrupted() {
                    break;
                }
            }
        }
    }
    // Pooling summarised the trials' samples afresh: the percentiles asked
    // for are added to what each result reports.
    for r in &mut results {
        warpt_harness::add_percentiles(r, &settings.percentiles);
    }
    verdict::judge_regressions(&mut results, compare::Options::default().alpha);
    // Baselines first within each example, as people read a pair.
    results.sort_by_key(|r| {
        let d = |k: &str| {
            r.details
                .get(k)
                .and_then(ParamValue::as_str)
                .map(str::to_string)
        };
        (
            d("chapter"),
            d("example"),
            d("role").as_deref() != Some("baseline"),
        )
    });
    // The first trial's manifest; where none ran, the labels still go with
    // the run.
    let manifest_rec = first_trial
        .as_ref()
        .and_then(|t| t.manifest.clone())
        .or_else(|| {
            (!settings.labels.is_empty() || settings.description.is_some()).then(|| {
                warpt_model::Manifest {
                    labels: settings.labels.clone(),
                    description: settings.description.clone(),
                    ..Default::default()
                }
            })
        });
    let mut metadata = BTreeMap::new();
    metadata.insert("root".into(), manifest.root.display().to_string());
    metadata.insert("rounds".into(), settings.rounds.to_string());
    metadata.insert(
        "regression_threshold_pct".into(),
        settings.regression_threshold_pct.to_string(),
    );
    BenchmarkSuiteRun {
        id: warpt_harness::new_run_id(start),
        suite: SUITE.into(),
        components: vec![BenchmarkComponent::Cpu],
        benchmarks: results,
        metadata: Some(metadata),
        start_time: Some(start),
        end_time: Some(Timestamp::now()),
        interrupted: ctx.interrupted(),
        manifest: manifest_rec,
        system: first_trial.and_then(|t| t.system),
        trials: Vec::new(),
    }
}
