//! One declared benchmark as a warpt `Benchmark`: skip conditions and
//! `setup` in the set-up stage, runs of `command` under warpt's stopping
//! rule (each measured as `warpt exec` measures it, the shell's own spawn
//! time subtracted), the output parsed into metrics on every run, the last
//! output checked against its reference, `teardown` whatever happened.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use warpt_harness::SeriesMetrics;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{ParamValue, Validation};

use super::file::{Declared, FILE_PARAM, Skip};
use super::parse::{compare, extract};
use crate::engine::Calibration;
use crate::spawn::{Captured, Output, Sample, Spawn};

/// Spawns of the empty shell command that price the shell's own start
/// before measuring (one more then runs before each measured run).
const SHELL_CALIBRATION_RUNS: usize = 20;

/// A benchmark declared in a file, created by name; what it runs is read
/// from the file its `file` parameter names when it is prepared.
pub struct DeclaredBenchmark {
    name: String,
    state: Option<State>,
}

struct State {
    decl: Declared,
    /// Parameter values by name, for `{NAME}`.
    values: BTreeMap<String, String>,
    command: Spawn,
    /// The shell's empty command: runs before measuring and one before
    /// each measured run, whose median so far each run has taken off (see
    /// [`Calibration`]).
    shell: Calibration,
    last: Option<Captured>,
    runs: usize,
    teardown: Option<Spawn>,
}

impl DeclaredBenchmark {
    /// The benchmark called `name` (its declaration is read in `prepare`).
    pub fn new(name: &str) -> Self {
        DeclaredBenchmark {
            name: name.to_string(),
            state: None,
        }
    }
}

fn substitute(text: &str, values: &BTreeMap<String, String>) -> String {
    values.iter().fold(text.to_string(), |t, (k, v)| {
        t.replace(&format!("{{{k}}}"), v)
    })
}

fn shell_spawn(decl: &Declared, text: &str) -> Spawn {
    Spawn {
        argv: vec![decl.shell.clone(), "-c".into(), text.to_string()],
        input: None,
        output: Output::Capture,
        // In the worker's process group: a stage timeout kills it with the worker.
        own_group: false,
        cwd: Some(decl.dir.clone()),
    }
}

/// The last lines of a failed command's stderr, for its error message.
fn stderr_tail(c: &Captured) -> String {
    let text = String::from_utf8_lossy(&c.stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    match lines.len() {
        0 => String::new(),
        n => format!(": {}", lines[n.saturating_sub(3)..].join(" | ")),
    }
}

/// Runs an auxiliary command (`setup`, `teardown`, `skip_if.command`).
fn run_aux(decl: &Declared, key: &str, text: &str) -> Result<(Sample, Captured), String> {
    shell_spawn(decl, text)
        .run_captured(decl.timeout)
        .map_err(|e| format!("key '{key}': {e}"))
}

fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Why the benchmark should be skipped, if one of its conditions holds.
fn skip_reason(
    decl: &Declared,
    values: &BTreeMap<String, String>,
) -> Result<Option<String>, String> {
    for s in &decl.skip_if {
        match s {
            Skip::Missing(p) => {
                let p = substitute(p, values);
                if !on_path(&p) {
                    return Ok(Some(format!("skip_if.missing: '{p}' is not on PATH")));
                }
            }
            Skip::Env(var) => {
                if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
                    return Ok(Some(format!("skip_if.env: {var} is set")));
                }
            }
            Skip::Command(c) => {
                let c = substitute(c, values);
                let (sample, _) = run_aux(decl, "skip_if.command", &c)?;
                if sample.exit.success() {
                    return Ok(Some(format!("skip_if.command: '{c}' exited 0")));
                }
            }
        }
    }
    Ok(None)
}

impl State {
    fn run_teardown(&mut self) -> Result<(), String> {
        let Some(t) = self.teardown.take() else {
            return Ok(());
        };
        match t.run_captured(self.decl.timeout) {
            Ok((s, _)) if s.exit.success() => Ok(()),
            Ok((s, c)) => Err(format!(
                "key 'teardown' ended with {}{}",
                s.exit,
                stderr_tail(&c)
            )),
            Err(e) => Err(format!("key 'teardown': {e}")),
        }
    }

    /// One run: its sample (shell cost subtracted) and parsed numbers;
    /// the shell's empty command runs just before it.
    fn run_once(&mut self) -> Result<(Sample, Vec<f64>), String> {
        self.shell
            .run_once()
            .map_err(|e| format!("key 'shell': {e}"))?;
        let (mut s, c) = self
            .command
            .run_captured(self.decl.timeout)
            .map_err(|e| format!("key 'command': {e}"))?;
        if !s.exit.success() {
            return Err(format!(
                "key 'command' ended with {} on run {}{}",
                s.exit,
                self.runs + 1,
                stderr_tail(&c)
            ));
        }
        let numbers = match &self.decl.parser {
            Some(p) => extract(p, &c)?,
            None => Vec::new(),
        };
        let cost = self.shell.cost();
        s.wall_s = (s.wall_s - cost.wall_s).max(1e-9);
        s.user_s = (s.user_s - cost.user_s).max(0.0);
        s.sys_s = (s.sys_s - cost.sys_s).max(0.0);
        self.runs += 1;
        self.last = Some(c);
        Ok((s, numbers))
    }
}

impl Drop for DeclaredBenchmark {
    fn drop(&mut self) {
        // A failed measurement never reaches `validate`: tear down here.
        if let Some(state) = self.state.as_mut() {
            let _ = state.run_teardown();
        }
    }
}

impl Benchmark for DeclaredBenchmark {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let file = PathBuf::from(ctx.str_param(FILE_PARAM)?);
        let decl =
            super::find(&file, &self.name).map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        let values: BTreeMap<String, String> = ctx
            .params
            .iter()
            .filter(|(k, _)| *k != FILE_PARAM)
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        if let Some(why) = skip_reason(&decl, &values).map_err(BenchmarkError::Failed)? {
            return Err(BenchmarkError::Skipped(why));
        }
        if let Some(setup) = &decl.setup {
            let (s, c) = run_aux(&decl, "setup", &substitute(setup, &values))
                .map_err(BenchmarkError::Failed)?;
            if !s.exit.success() {
                return Err(BenchmarkError::Failed(format!(
                    "key 'setup' ended with {}{}",
                    s.exit,
                    stderr_tail(&c)
                )));
            }
        }
        let shell = Calibration::measure(&decl.shell, SHELL_CALIBRATION_RUNS, false)
            .map_err(|e| BenchmarkError::Failed(format!("key 'shell': {e}")))?;
        self.state = Some(State {
            command: shell_spawn(&decl, &substitute(&decl.command, &values)),
            teardown: decl
                .teardown
                .as_ref()
                .map(|t| shell_spawn(&decl, &substitute(t, &values))),
            shell,
            last: None,
            runs: 0,
            values,
            decl,
        });
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let state = warpt_harness::prepared_mut(&mut self.state)?;
        let mut defs = vec![SeriesDef::new(
            "wall_time_s",
            "s",
            false,
            &[],
            Convert::Time(1.0),
        )];
        defs.extend(
            state
                .decl
                .metrics
                .iter()
                .map(|m| SeriesDef::new(&m.name, &m.unit, m.higher_is_better, &[], Convert::Value)),
        );
        let measuring = measure.measuring_flag();
        let mut failure: Option<String> = None;
        let mut cpu: [Vec<f64>; 3] = Default::default();
        let m = measure.run(&MeasurePolicy::share_of(ctx, 1), &self.name, &defs, |out| {
            // After a failure, samples are placeholders: the run fails.
            let got = match failure {
                Some(_) => None,
                None => match state.run_once() {
                    Ok(x) => Some(x),
                    Err(e) => {
                        failure = Some(e);
                        None
                    }
                },
            };
            match got {
                Some((s, numbers)) => {
                    out[0] = s.wall_s;
                    out[1..].copy_from_slice(&numbers);
                    if measuring.load(Ordering::Relaxed) {
                        cpu[0].push(s.user_s);
                        cpu[1].push(s.sys_s);
                        cpu[2].push(s.peak_rss_bytes);
                    }
                }
                None => {
                    out[0] = 1e-9;
                    out[1..].fill(0.0);
                }
            }
        });
        if let Some(e) = failure {
            return Err(BenchmarkError::Failed(e));
        }
        let mut metrics = m.metrics;
        // Peak RSS is known to the byte; CPU times of short runs are a few
        // clock ticks whose CI would grade the whole result: they are
        // details (means), not metrics.
        let rss = SeriesDef::new("peak_rss_bytes", "B", false, &[], Convert::Value);
        metrics.push(rss.metric(&cpu[2], Some(m.stop_reason)));
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let mut warnings = Vec::new();
        let wall = metrics.first().map_or(0.0, |w| w.value);
        let spawn = state.shell.cost().wall_s;
        if wall < spawn {
            warnings.push(format!(
                "the command takes less time ({wall:.3e} s) than the shell's own spawn ({:.3e} s, subtracted): its time is within the calibration's noise",
                spawn
            ));
        }
        let d = &state.decl;
        let details = vec![
            ("user_time_s_mean".into(), ParamValue::Float(mean(&cpu[0]))),
            ("sys_time_s_mean".into(), ParamValue::Float(mean(&cpu[1]))),
            (
                "declared_in".into(),
                ParamValue::Str(d.file.display().to_string()),
            ),
            (
                "command".into(),
                ParamValue::Str(state.command.argv[2].clone()),
            ),
            ("shell".into(), ParamValue::Str(d.shell.clone())),
            ("shell_spawn_wall_s".into(), ParamValue::Float(spawn)),
            ("runs".into(), ParamValue::Int(state.runs as i64)),
            (
                "timer".into(),
                ParamValue::from(
                    "spawn to reap (wait4), the shell's spawn time subtracted (the median of its empty command's runs, one before each run)",
                ),
            ),
        ];
        Ok(Measured {
            metrics,
            details,
            warnings,
        })
    }

    fn validate(&mut self, _ctx: &RunContext) -> Validation {
        let Some(state) = self.state.as_mut() else {
            return Validation::fail("nothing was run");
        };
        let verdict = match &state.decl.tolerances {
            None => Validation::pass(format!(
                "every one of {} runs exited 0{}",
                state.runs,
                if state.decl.metrics.is_empty() {
                    String::new()
                } else {
                    format!(
                        " and the parser found its {} number(s) in each",
                        state.decl.metrics.len()
                    )
                }
            )),
            Some(t) => {
                let dir = &state.decl.dir;
                let reference = dir.join(substitute(&t.reference, &state.values));
                let actual = match &t.output {
                    Some(f) => {
                        let p = dir.join(substitute(f, &state.values));
                        std::fs::read_to_string(&p)
                            .map_err(|e| format!("key 'tolerances.output': {}: {e}", p.display()))
                    }
                    None => Ok(state
                        .last
                        .as_ref()
                        .map(|c| String::from_utf8_lossy(&c.stdout).into_owned())
                        .unwrap_or_default()),
                };
                let expected = std::fs::read_to_string(&reference).map_err(|e| {
                    format!("key 'tolerances.reference': {}: {e}", reference.display())
                });
                match (actual, expected) {
                    (Err(e), _) | (_, Err(e)) => Validation::fail(e),
                    (Ok(a), Ok(e)) => match compare(&a, &e, t.abs, t.rel) {
                        Ok(n) => Validation::pass(format!(
                            "the last run's output matches {} ({n} numbers within abs {} + rel {})",
                            reference.display(),
                            t.abs,
                            t.rel
                        )),
                        Err(why) => Validation::fail(format!(
                            "tolerances: the last run's output differs from {}: {why}",
                            reference.display()
                        )),
                    },
                }
            }
        };
        match state.run_teardown() {
            Ok(()) => verdict,
            Err(e) => Validation::fail(e),
        }
    }
}
