//! The units of a harness run: one file's trials through `run_plan`, a
//! pair's interleaved rounds, a kernel's trials, and their assembly into
//! one labelled result each.

use super::verdict::{PER_EVENT, absolute, add_speedup, apply_accuracy, label, pooled};
#[allow(clippy::wildcard_imports)]
use super::*;

/// A baseline at one combination, shared by its optimized variants: its
/// trials are planned (and its `get_config()` probed) once, its rounds
/// gathered over every variant, and once it has failed no variant runs
/// against it again.
pub(super) struct BaseSide<'a> {
    unit: Unit,
    trials: Option<FileTrials<'a>>,
    runs: Vec<BenchmarkSuiteRun>,
    failed: Option<BenchmarkRunResult>,
}

impl<'a> BaseSide<'a> {
    /// The baseline `unit`, nothing run yet.
    pub(super) fn new(unit: Unit) -> Self {
        BaseSide {
            unit,
            trials: None,
            runs: Vec::new(),
            failed: None,
        }
    }

    /// Its first trial, if one finished (the run's manifest and machine).
    pub(super) fn first_run(&self) -> Option<&BenchmarkSuiteRun> {
        self.runs.first()
    }
}

/// Everything the units share.
pub(super) struct Ctx<'a> {
    pub(super) registry: &'a Registry,
    pub(super) options: &'a RunOptions,
    pub(super) settings: &'a Settings,
    pub(super) outputs: &'a Path,
    /// The file `settings.python` runs, asked once for the whole run
    /// ([`crate::interpreter`]); `None`: `settings.python` as named.
    pub(super) python_executable: Option<&'a str>,
}

/// One file's trials: each a one-benchmark plan through `run_plan`, so
/// the worker, its limits and the quality grading are `benchmark run`'s.
struct FileTrials<'a> {
    label: String,
    plan: Plan,
    options: RunOptions,
    registry: &'a Registry,
    failed: Option<BenchmarkRunResult>,
}

impl TrialSource for FileTrials<'_> {
    fn label(&self) -> &str {
        &self.label
    }

    fn run_trial(&mut self) -> Result<BenchmarkSuiteRun, String> {
        let run = run_plan(self.registry, &self.plan, &self.options, &NoProgress);
        match run.benchmarks.first() {
            Some(r) if r.status == RunStatus::Passed && !r.interrupted => Ok(run),
            Some(r) => {
                let why = r
                    .error_message
                    .clone()
                    .unwrap_or_else(|| r.status.as_str().to_string());
                self.failed = Some(r.clone());
                Err(why)
            }
            None => Err("interrupted before it ran".into()),
        }
    }
}

impl<'a> Ctx<'a> {
    /// The interpreter the parent itself starts (`get_config()` probes,
    /// references): the resolved file, else `python` as named.
    fn python(&self) -> &'a str {
        self.python_executable.unwrap_or(&self.settings.python)
    }

    pub(super) fn interrupted(&self) -> bool {
        self.settings
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Where the unit's own output (its worker's stderr, every trial)
    /// is kept: beside its answer, `.log`.
    fn log_file(&self, unit: &Unit) -> PathBuf {
        self.output_file(unit).with_extension("log")
    }

    fn output_file(&self, unit: &Unit) -> PathBuf {
        let key = combo_key(&unit.combo).replace([',', '='], "_");
        let name = if key.is_empty() {
            format!("{}.json", unit.id.replace('/', "__"))
        } else {
            format!("{}__{key}.json", unit.id.replace('/', "__"))
        };
        self.outputs.join(name)
    }

    fn planned(&self, unit: &Unit) -> PlannedBenchmark {
        let mut params = suite::default_params();
        let mut set = |k: &str, v: ParamValue| {
            params.insert(k.to_string(), v);
        };
        set("file", ParamValue::Str(absolute(&unit.file)));
        set("python", ParamValue::Str(self.settings.python.clone()));
        if let Some(resolved) = self.python_executable {
            set("python_executable", ParamValue::from(resolved));
        }
        set(
            "kwargs",
            ParamValue::Str(Value::Object(unit.combo.kwargs.clone()).to_string()),
        );
        set(
            "output_file",
            ParamValue::Str(self.output_file(unit).display().to_string()),
        );
        set("reproducible", ParamValue::Bool(self.settings.reproducible));
        set("cold_start", ParamValue::Bool(self.settings.cold_start));
        let s = self.settings;
        if let Some(t) = s.timing {
            set("timing", ParamValue::from(t.as_str()));
        }
        let flag = |v: Option<bool>| v.map_or("", |b| if b { "true" } else { "false" });
        set("cold_cache", ParamValue::from(flag(s.cold_cache)));
        set("device_hygiene", ParamValue::from(flag(s.device_hygiene)));
        if s.count_instructions {
            set("measure", ParamValue::from("instructions"));
        }
        if let Some(line) = self.command_line(unit) {
            set("command", ParamValue::Str(line));
        }
        if !unit.combo.settings.is_empty() {
            set(
                "defaults",
                ParamValue::Str(Value::Object(unit.combo.settings.clone()).to_string()),
            );
        }
        PlannedBenchmark {
            spec: suite::spec(&unit.id),
            params,
            sweep: unit.combo.tags.clone(),
        }
    }

    /// The adapter command line of a file in another language (its
    /// bench.yaml's `command`), absolute-pathed.
    fn command_line(&self, unit: &Unit) -> Option<String> {
        let foreign = unit.combo.foreign.as_ref().filter(|f| f.runs(&unit.file))?;
        Some(foreign.line_for(Path::new(&absolute(&unit.file))))
    }

    /// The unit's effective configuration: its `get_config()` (read by a
    /// probe in the unit's worker, which stays for its trials unless each
    /// sample needs a fresh interpreter) layered with the flags, as run
    /// options and a line for its details.
    fn layered_options(&self, planned: &PlannedBenchmark, unit: &Unit) -> (RunOptions, String) {
        let s = self.settings;
        let mut options = self.options.clone();
        options.output_log = Some(self.log_file(unit));
        options.timeout_multiplier = s.timeout_multiplier.value;
        if !s.cold_start {
            options.kept_worker = Some(warpt_harness::KeptWorker::new());
        }
        let own = warpt_harness::probe_config(planned, &options)
            .ok()
            .flatten()
            .unwrap_or(Value::Null);
        let num = |k: &str| own.get(k).and_then(Value::as_f64).filter(|v| *v >= 0.0);
        let (duration, d_src) = s.duration.with(num("duration_s").map(Some));
        let (burnin, b_src) = s.burnin.with(num("warmup_s").map(Some));
        let (mult, m_src) = s.timeout_multiplier.with(num("timeout_multiplier"));
        let duration = duration.unwrap_or(suite::DEFAULT_DURATION_S);
        let (burnin, b_src) = match burnin {
            Some(b) => (b, b_src),
            None => (
                suite::DEFAULT_BURNIN_S.min(duration),
                "default, at most the duration",
            ),
        };
        options.duration = Some(Duration::from_secs_f64(duration));
        options.burnin = Duration::from_secs_f64(burnin);
        options.timeout_multiplier = mult;
        let line = format!(
            "duration {:.3} s ({d_src}), warm-up {burnin} s ({b_src}), timeout multiplier {mult} ({m_src})",
            options.duration.map_or(0.0, |d| d.as_secs_f64())
        );
        (options, line)
    }

    fn trials(&'a self, unit: &Unit) -> FileTrials<'a> {
        let mut planned = self.planned(unit);
        let (options, config) = self.layered_options(&planned, unit);
        planned
            .params
            .insert("config".into(), ParamValue::Str(config));
        FileTrials {
            label: unit.id.clone(),
            plan: Plan {
                suite: SUITE.into(),
                components: vec![BenchmarkComponent::Cpu],
                label: SUITE.into(),
                entries: vec![planned],
                unavailable: Vec::new(),
                overrides: BTreeMap::new(),
            },
            options,
            registry: self.registry,
            failed: None,
        }
    }

    /// A result that did not run, with why.
    fn not_run(&self, unit: &Unit, status: RunStatus, why: &str) -> BenchmarkRunResult {
        let planned = self.planned(unit);
        let mut r = BenchmarkRunResult::new(planned.spec, planned.params, status, Timestamp::now());
        r.error_message = Some(why.to_string());
        label(&mut r, unit);
        r
    }

    /// Runs `opt` against its baseline in interleaved rounds: the
    /// variant's result, with its speedup and accuracy when both passed.
    pub(super) fn pair(
        &'a self,
        base: &mut BaseSide<'a>,
        opt: &Unit,
        tolerances: Tolerances,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> BenchmarkRunResult {
        if let Some(why) = &opt.combo.skip {
            base.failed
                .get_or_insert_with(|| self.not_run(&base.unit, RunStatus::Skipped, why));
            return self.not_run(opt, RunStatus::Skipped, why);
        }
        if let Some(f) = &base.failed {
            return self.not_run(
                opt,
                RunStatus::Failed,
                &format!("not compared: its baseline {}", f.status.as_str()),
            );
        }
        let _ = std::fs::create_dir_all(self.outputs);
        let mut b = self.trials(opt);
        let a = base.trials.get_or_insert_with(|| self.trials(&base.unit));
        let stop = || self.interrupted();
        let (base_id, opt_id) = (&base.unit.id, &opt.id);
        let mut report = |e: &TrialEvent<'_>| {
            if let Some(Ok(run)) = e.outcome
                && let Some(r) = run.benchmarks.first()
            {
                on_event(Event::Trial {
                    id: if e.side == interleave::Side::Base {
                        base_id
                    } else {
                        opt_id
                    },
                    round: e.round,
                    rounds: e.rounds,
                    result: r,
                });
            }
        };
        let done = interleave::run_interleaved(
            a,
            &mut b,
            self.settings.rounds,
            self.settings.seed,
            &mut report,
            &stop,
        );
        if let Some(f) = a.failed.take() {
            base.failed = Some(f);
        }
        let optimized = if let Some(mut r) = b.failed.take() {
            label(&mut r, opt);
            r
        } else if let Some(why) = &done.failure {
            self.not_run(
                opt,
                if self.past_suite_limit() {
                    RunStatus::Timeout
                } else if base
                    .failed
                    .as_ref()
                    .is_some_and(|r| r.status == RunStatus::Skipped)
                {
                    RunStatus::Skipped
                } else {
                    RunStatus::Failed
                },
                &format!("not compared: its baseline did not pass ({why})"),
            )
        } else {
            let comparison = self.compare(&done.base, &done.current, &base.unit, opt);
            let mut o = self.assemble(opt, done.current, None);
            if o.status == RunStatus::Passed {
                add_speedup(&mut o, &base.unit, comparison.as_ref());
                let check = accuracy::compare_files(
                    &self.output_file(&base.unit),
                    &self.output_file(opt),
                    &tolerances,
                );
                apply_accuracy(&mut o, &check, "the baseline");
            }
            o
        };
        // The complete rounds count for the baseline whatever the variant did.
        base.runs.extend(done.base);
        optimized
    }

    /// The baseline's one result, from its rounds with every variant; a
    /// baseline that no variant completed a round with (each failed) is
    /// measured on its own, as a kernel is.
    pub(super) fn finish_base(
        &'a self,
        mut base: BaseSide<'a>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> BenchmarkRunResult {
        if base.runs.is_empty() && base.failed.is_none() && !self.interrupted() {
            let trials = base.trials.get_or_insert_with(|| self.trials(&base.unit));
            base.runs = self.solo(trials, &base.unit.id, on_event);
            base.failed = trials.failed.take();
        }
        self.assemble(&base.unit, base.runs, base.failed)
    }

    /// The paired comparison of the two sides' latency.
    fn compare(
        &self,
        base_runs: &[BenchmarkSuiteRun],
        opt_runs: &[BenchmarkSuiteRun],
        base: &Unit,
        opt: &Unit,
    ) -> Option<MetricComparison> {
        let same = |runs: &[BenchmarkSuiteRun], label: &str| {
            let mut runs = runs.to_vec();
            for r in &mut runs {
                for b in &mut r.benchmarks {
                    b.spec.id.name = format!("{}/{}", base.chapter, base.example);
                    // The interleaved rounds are the defence against a noisy
                    // host: interference hits both sides of a round, and the
                    // paired test weighs what is left. The stored results
                    // keep their grading.
                    b.quality = None;
                    b.measurement_quality = None;
                }
            }
            interleave::combine(runs, label)
        };
        let (b, o) = (same(base_runs, &base.id)?, same(opt_runs, &opt.id)?);
        let options = compare::Options {
            threshold_pct: self.settings.regression_threshold_pct,
            pairing: compare::Pairing::Rounds,
            ..compare::Options::default()
        };
        let c = compare::compare(&b, &base.id, &o, &opt.id, &options, &NoNoise);
        c.metrics.into_iter().find(|m| m.metric == "latency_ms")
    }

    /// A kernel's trials as one result, its last answer checked against
    /// its bench.yaml `reference` (within `tolerances`) when it has one.
    pub(super) fn kernel(
        &'a self,
        unit: &Unit,
        tolerances: Tolerances,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> (BenchmarkRunResult, Option<BenchmarkSuiteRun>) {
        if let Some(why) = &unit.combo.skip {
            return (self.not_run(unit, RunStatus::Skipped, why), None);
        }
        let _ = std::fs::create_dir_all(self.outputs);
        let mut source = self.trials(unit);
        let runs = self.solo(&mut source, &unit.id, on_event);
        let sample = runs.first().cloned();
        let mut result = self.assemble(unit, runs, source.failed.take());
        if result.status == RunStatus::Passed && unit.combo.reference.is_some() {
            let answer = self.output_file(unit);
            let check = super::reference::expected(
                unit,
                self.python(),
                self.command_line(unit).is_some(),
                self.load_limit(),
                &answer.with_extension("reference.json"),
            )
            .and_then(|expected| accuracy::against_reference(&expected, &answer, &tolerances));
            apply_accuracy(&mut result, &check, "its reference");
        }
        (result, sample)
    }

    /// Whether the run's `--suite-timeout` has passed.
    fn past_suite_limit(&self) -> bool {
        self.settings.suite_limit.is_some_and(|l| l.passed())
    }

    /// How long loading a file (to read its `get_config()`, or to call its
    /// reference) may take: the setup stage's limit.
    fn load_limit(&self) -> Duration {
        warpt_harness::SETUP_LIMIT.mul_f64(self.settings.timeout_multiplier.value.max(0.01))
    }

    /// `--rounds` trials of one file, one after the other, until one fails
    /// (then in `trials.failed`).
    fn solo(
        &self,
        trials: &mut FileTrials<'_>,
        id: &str,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Vec<BenchmarkSuiteRun> {
        let mut runs = Vec::new();
        for round in 1..=self.settings.rounds {
            if self.interrupted() {
                break;
            }
            let Ok(run) = trials.run_trial() else {
                break;
            };
            if let Some(r) = run.benchmarks.first() {
                on_event(Event::Trial {
                    id,
                    round,
                    rounds: self.settings.rounds,
                    result: r,
                });
            }
            runs.push(run);
        }
        runs
    }

    /// One result from a file's trials (or its failure), latency pooled
    /// over the trials and labelled with its place in the tree.
    fn assemble(
        &self,
        unit: &Unit,
        runs: Vec<BenchmarkSuiteRun>,
        failed: Option<BenchmarkRunResult>,
    ) -> BenchmarkRunResult {
        let mut result = match failed {
            Some(r) => r,
            None => {
                let per_event: Vec<BenchmarkMetric> = PER_EVENT
                    .iter()
                    .filter_map(|name| pooled(&runs, name))
                    .collect();
                let trials = runs.len();
                let watchdog = summed_watchdog(&runs);
                match interleave::combine(runs, &unit.id)
                    .and_then(|r| r.benchmarks.into_iter().next())
                {
                    Some(mut r) => {
                        for p in per_event {
                            if let Some(m) = r.metrics.iter_mut().find(|m| m.name == p.name) {
                                *m = p;
                            }
                        }
                        r.details
                            .insert("trials".into(), ParamValue::Int(trials as i64));
                        r.watchdog = watchdog;
                        r
                    }
                    None => self.not_run(unit, RunStatus::Failed, "no trial finished"),
                }
            }
        };
        label(&mut result, unit);
        let log = self.log_file(unit);
        if log.is_file() {
            result.details.insert(
                "output_log".into(),
                ParamValue::Str(log.display().to_string()),
            );
        }
        result
    }
}

/// Every trial's time in each stage, added up (each trial's limit is the
/// same, so the limit is a trial's): where a file's time went.
fn summed_watchdog(runs: &[BenchmarkSuiteRun]) -> Option<warpt_model::Watchdog> {
    let dogs: Vec<&warpt_model::Watchdog> = runs
        .iter()
        .filter_map(|r| r.benchmarks.first()?.watchdog.as_ref())
        .collect();
    let first = *dogs.first()?;
    let sum = |stage: fn(&warpt_model::Watchdog) -> &Option<warpt_model::StageRecord>| {
        let mut total = stage(first).clone()?;
        total.duration_s = dogs
            .iter()
            .filter_map(|d| stage(d).as_ref())
            .map(|r| r.duration_s)
            .sum();
        Some(total)
    };
    Some(warpt_model::Watchdog {
        setup: sum(|w| &w.setup),
        warmup: sum(|w| &w.warmup),
        measure: sum(|w| &w.measure),
        validate: sum(|w| &w.validate),
    })
}
