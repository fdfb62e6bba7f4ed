//! What `warpt exec` was asked to run: the commands, after parameter
//! substitution, as argv through the shell or split without one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::ExecError;
use crate::spawn::{Output, Spawn};

/// What `warpt exec` measures besides time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Measure {
    /// Wall, user and system time and peak memory (hyperfine's measures).
    #[default]
    Time,
    /// The same, and each command's executed instructions.
    Instructions,
}

/// How command strings become processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shell {
    /// `SHELL -c COMMAND` (default `sh`); its own spawn time is measured
    /// and subtracted, as hyperfine does.
    Path(String),
    /// `-N` / `--shell none`: split into argv by POSIX shell rules.
    None,
}

/// A parameter swept over the commands (`{NAME}` is substituted).
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// The name.
    pub name: String,
    /// Its values, in order.
    pub values: Vec<String>,
}

impl Parameter {
    /// The parameter hyperfine's flags give: `--parameter-scan NAME MIN
    /// MAX` (`step`, default 1) or `--parameter-list NAME V1,V2,...`; none
    /// when neither is given.
    pub fn from_flags(
        scan: &[String],
        step: Option<f64>,
        list: &[String],
    ) -> Result<Option<Self>, ExecError> {
        match (scan, list) {
            ([name, min, max], []) => {
                let num = |v: &str, what: &str| {
                    v.parse::<f64>().map_err(|_| {
                        ExecError::Usage(format!(
                            "--parameter-scan {name}: {what} '{v}' is not a number"
                        ))
                    })
                };
                let (min, max) = (num(min, "MIN")?, num(max, "MAX")?);
                Ok(Some(Parameter::scan(name, min, max, step.unwrap_or(1.0))?))
            }
            ([], [name, values]) => Ok(Some(Parameter {
                name: name.clone(),
                values: values.split(',').map(str::to_string).collect(),
            })),
            _ => Ok(None),
        }
    }

    /// `--parameter-scan NAME MIN MAX [--parameter-step-size D]`: MIN,
    /// MIN + D, ... up to MAX (integers print without a decimal point).
    pub fn scan(name: &str, min: f64, max: f64, step: f64) -> Result<Self, ExecError> {
        if step.is_nan() || step <= 0.0 || !min.is_finite() || !max.is_finite() || max < min {
            return Err(ExecError::Usage(format!(
                "--parameter-scan {name}: needs MIN <= MAX and a step above 0 (got {min}, {max}, step {step})"
            )));
        }
        let n = ((max - min) / step + 1e-9).floor() as usize + 1;
        if n > 100_000 {
            return Err(ExecError::Usage(format!(
                "--parameter-scan {name}: {n} values is too many"
            )));
        }
        let integral = [min, max, step].iter().all(|v| v.fract() == 0.0);
        let values = (0..n)
            .map(|i| {
                let v = min + step * i as f64;
                if integral {
                    format!("{}", v as i64)
                } else {
                    format!("{}", (v * 1e9).round() / 1e9)
                }
            })
            .collect();
        Ok(Parameter {
            name: name.into(),
            values,
        })
    }
}

/// Everything `warpt exec` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecPlan {
    /// The command strings, as given.
    pub commands: Vec<String>,
    /// `--command-name`s, in order (missing ones: the command text).
    pub names: Vec<String>,
    /// `--shell`.
    pub shell: Shell,
    /// `--prepare`: before every run (one for all commands, or one each).
    pub prepare: Vec<String>,
    /// `--setup`: once per command before its runs.
    pub setup: Option<String>,
    /// `--cleanup`: once per command after its runs.
    pub cleanup: Option<String>,
    /// `--parameter-scan` / `--parameter-list`.
    pub parameter: Option<Parameter>,
    /// `--input`.
    pub input: Option<PathBuf>,
    /// `--output`.
    pub output: Output,
    /// `--warmup`: unmeasured runs per command first.
    pub warmup: u32,
    /// `--runs`: exactly this many measured runs.
    pub runs: Option<u32>,
    /// `--min-runs`.
    pub min_runs: u32,
    /// `--max-runs`.
    pub max_runs: u32,
    /// `--min-time`: measure at least this long per command.
    pub min_time: Duration,
    /// `--max-time`: and at most this long per command.
    pub max_time: Duration,
    /// Stop once the median's 95% CI half-width is within this share of it.
    pub target_rel_ci: f64,
    /// `--ignore-failure`: a non-zero exit is recorded, not fatal.
    pub ignore_failure: bool,
    /// Interleave the commands round by round (default) or run each in turn.
    pub interleave: bool,
    /// `--duet`: the two commands at the same time on separate CPUs
    /// ([`crate::duet`]).
    pub duet: bool,
    /// `--timeout`: a run past this is killed and the command timed out.
    pub timeout: Option<Duration>,
    /// Seed of the per-round orders.
    pub seed: u64,
    /// `--measure`: time alone, or instructions too.
    pub measure: Measure,
    /// `--label key=value`: recorded in the run's manifest.
    pub labels: BTreeMap<String, String>,
    /// `--description`: recorded in the run's manifest.
    pub description: Option<String>,
}

/// One command at one parameter value: a benchmark of the `exec` suite.
#[derive(Debug, Clone)]
pub struct Job {
    /// Its name (the command text after substitution, or its `--command-name`).
    pub name: String,
    /// The command text after substitution.
    pub text: String,
    /// The parameter's value, if swept.
    pub params: BTreeMap<String, String>,
    /// The measured command.
    pub spawn: Spawn,
    /// Before each run.
    pub prepare: Option<Spawn>,
    /// Once before.
    pub setup: Option<Spawn>,
    /// Once after.
    pub cleanup: Option<Spawn>,
}

fn substitute(text: &str, p: Option<(&str, &str)>) -> String {
    match p {
        Some((name, value)) => text.replace(&format!("{{{name}}}"), value),
        None => text.to_string(),
    }
}

impl ExecPlan {
    /// `commands` with hyperfine's defaults, as `warpt exec` without flags
    /// plans them: through `sh`, no warm-up, 10 to 100,000 runs within 3 to
    /// 60 seconds until the median is known within 1%, interleaved, output
    /// discarded.
    pub fn new(commands: Vec<String>) -> ExecPlan {
        ExecPlan {
            commands,
            names: Vec::new(),
            shell: Shell::Path("sh".into()),
            prepare: Vec::new(),
            setup: None,
            cleanup: None,
            parameter: None,
            input: None,
            output: Output::Null,
            warmup: 0,
            runs: None,
            min_runs: 10,
            max_runs: 100_000,
            min_time: Duration::from_secs(3),
            max_time: Duration::from_secs(60),
            target_rel_ci: 0.01,
            ignore_failure: false,
            interleave: true,
            duet: false,
            timeout: None,
            seed: 42,
            measure: Measure::Time,
            labels: BTreeMap::new(),
            description: None,
        }
    }

    /// Argv of `text` under the plan's shell.
    pub fn argv(&self, text: &str) -> Result<Vec<String>, ExecError> {
        match &self.shell {
            Shell::Path(sh) => Ok(vec![sh.clone(), "-c".into(), text.into()]),
            Shell::None => {
                let argv = shell_words::split(text).map_err(|e| {
                    ExecError::Usage(format!("cannot split '{text}' without a shell: {e}"))
                })?;
                if argv.is_empty() {
                    return Err(ExecError::Usage("an empty command".into()));
                }
                Ok(argv)
            }
        }
    }

    fn spawn_of(&self, text: &str, output: Output, input: bool) -> Result<Spawn, ExecError> {
        Ok(Spawn {
            argv: self.argv(text)?,
            input: if input { self.input.clone() } else { None },
            output,
            own_group: true,
            cwd: None,
        })
    }

    /// The jobs, command by command, value by value.
    pub fn jobs(&self) -> Result<Vec<Job>, ExecError> {
        if self.commands.is_empty() {
            return Err(ExecError::Usage("give at least one command".into()));
        }
        if self.min_time > self.max_time {
            return Err(ExecError::Usage(format!(
                "--min-time {} is above --max-time {}",
                self.min_time.as_secs_f64(),
                self.max_time.as_secs_f64()
            )));
        }
        if self.min_runs > self.max_runs {
            return Err(ExecError::Usage(format!(
                "--min-runs {} is above --max-runs {}",
                self.min_runs, self.max_runs
            )));
        }
        if self.prepare.len() > 1 && self.prepare.len() != self.commands.len() {
            return Err(ExecError::Usage(format!(
                "--prepare given {} times for {} commands: give it once, or once per command",
                self.prepare.len(),
                self.commands.len()
            )));
        }
        if self.names.len() > self.commands.len() {
            return Err(ExecError::Usage(format!(
                "{} --command-name for {} commands",
                self.names.len(),
                self.commands.len()
            )));
        }
        if self.duet && self.timeout.is_some() {
            return Err(ExecError::Usage(
                "--duet and --timeout cannot be combined: the time limit watches one run at a time"
                    .into(),
            ));
        }
        let values: Vec<Option<(&str, &str)>> = match &self.parameter {
            Some(p) => p
                .values
                .iter()
                .map(|v| Some((p.name.as_str(), v.as_str())))
                .collect(),
            None => vec![None],
        };
        let mut jobs = Vec::new();
        for (i, command) in self.commands.iter().enumerate() {
            for value in &values {
                let text = substitute(command, *value);
                let name = match self.names.get(i) {
                    Some(n) => substitute(n, *value),
                    None => text.clone(),
                };
                let prepare = match self.prepare.len() {
                    0 => None,
                    1 => Some(&self.prepare[0]),
                    _ => Some(&self.prepare[i]),
                };
                let quiet = Output::Null;
                jobs.push(Job {
                    name,
                    params: value
                        .map(|(k, v)| BTreeMap::from([(k.to_string(), v.to_string())]))
                        .unwrap_or_default(),
                    spawn: self.spawn_of(&text, self.output.clone(), true)?,
                    prepare: prepare
                        .map(|p| self.spawn_of(&substitute(p, *value), quiet.clone(), false))
                        .transpose()?,
                    setup: self
                        .setup
                        .as_ref()
                        .map(|p| self.spawn_of(&substitute(p, *value), quiet.clone(), false))
                        .transpose()?,
                    cleanup: self
                        .cleanup
                        .as_ref()
                        .map(|p| self.spawn_of(&substitute(p, *value), quiet.clone(), false))
                        .transpose()?,
                    text,
                });
            }
        }
        if self.duet && jobs.len() != 2 {
            return Err(ExecError::Usage(format!(
                "--duet measures two commands against each other, and these make {} (with the \
                 parameter's values)",
                jobs.len()
            )));
        }
        Ok(jobs)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hyperfines_parameter_flags_become_one_parameter() {
        let scan = Parameter::from_flags(&strings(&["n", "1", "2"]), Some(0.5), &[]).unwrap();
        assert_eq!(scan.unwrap().values, ["1", "1.5", "2"]);
        let list = Parameter::from_flags(&[], None, &strings(&["t", "a,b"])).unwrap();
        assert_eq!(list.unwrap().values, ["a", "b"]);
        assert!(Parameter::from_flags(&[], None, &[]).unwrap().is_none());
        let bad = Parameter::from_flags(&strings(&["n", "x", "2"]), None, &[]).unwrap_err();
        assert!(bad.to_string().contains("MIN 'x' is not a number"), "{bad}");
    }

    #[test]
    fn scans_and_lists_expand_every_command() {
        let p = Parameter::scan("n", 1.0, 4.0, 1.0).unwrap();
        assert_eq!(p.values, ["1", "2", "3", "4"]);
        let p = Parameter::scan("x", 0.0, 0.3, 0.1).unwrap();
        assert_eq!(p.values, ["0", "0.1", "0.2", "0.3"]);
        assert!(Parameter::scan("x", 2.0, 1.0, 1.0).is_err());
        assert!(Parameter::scan("x", 1.0, 2.0, 0.0).is_err());
    }
}
