//! The configuration hierarchy: built-in defaults < `warpt.toml` < `WARPT_*`
//! environment variables < command-line flags, with the source of every
//! effective value kept for `warpt config show` and the manifest.
//!
//! The file is the first of: `--config PATH`, `./warpt.toml`,
//! `$XDG_CONFIG_HOME/warpt/warpt.toml` (`~/.config/warpt/warpt.toml`).
//!
//! ```toml
//! duration = 2.0            # seconds of measurement per benchmark
//! burnin_seconds = 0.5
//! seed = 7
//! precision = 1.0           # percent: target half-width of the median's 95% CI
//! timeout_multiplier = 1.5
//! suite_timeout = 14400     # seconds the whole run may take (0: no limit)
//! percentiles = [50, 90, 99.9]  # added to every metric's stats (`p99.9`)
//! description = "after the BIOS update"   # recorded with every run
//!
//! [labels]                  # like --label, recorded with every run
//! rack = "b7"
//! in_process = false
//! store = "results.db"      # the result history (default: $XDG_DATA_HOME/warpt/results.db)
//!
//! [timeouts]                # stage limits for every benchmark, seconds
//! setup = 60
//!
//! [benchmark_timeouts."micro/mem_latency"]   # for one benchmark
//! measure = 120
//!
//! [params]                  # like --param, applied where a benchmark knows the key
//! array_mb = 256
//!
//! [[benchmarks]]            # your own commands: the `user` suite (docs/exec.md)
//! name = "build"
//! command = "make -B -j2"
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;
use toml::Spanned;
use warpt_model::StageLimits;

use crate::UsageError;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "from")]
pub enum Source {
    /// warpt's built-in default.
    Default,
    /// The configuration file at this path.
    File(String),
    /// This environment variable.
    Env(String),
    /// A command-line flag.
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {p}"),
            Source::Env(v) => write!(f, "env {v}"),
            Source::Flag(x) => write!(f, "flag {x}"),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Its source.
    pub source: Source,
}

impl<T> Setting<T> {
    fn default(value: T) -> Self {
        Setting {
            value,
            source: Source::Default,
        }
    }

    fn set(&mut self, value: T, source: Source) {
        self.value = value;
        self.source = source;
    }
}

/// The effective configuration of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Config {
    /// The file read, if any.
    pub file: Option<String>,
    /// Measurement seconds per benchmark (`None`: each benchmark's own).
    pub duration: Setting<Option<f64>>,
    /// Warm-up seconds per benchmark.
    pub burnin_seconds: Setting<f64>,
    /// Seed.
    pub seed: Setting<u64>,
    /// Target CI half-width, percent.
    pub precision: Setting<f64>,
    /// Stage-limit multiplier.
    pub timeout_multiplier: Setting<f64>,
    /// Seconds the whole run may take (0: no limit).
    pub suite_timeout: Setting<f64>,
    /// Percentiles added to every metric's stats.
    pub percentiles: Setting<warpt_model::Percentiles>,
    /// Labels recorded with the run, each from its layer.
    pub labels: BTreeMap<String, Setting<String>>,
    /// The run's description.
    pub description: Setting<Option<String>>,
    /// Run benchmarks in-process.
    pub in_process: Setting<bool>,
    /// Stage limits for every benchmark.
    pub timeouts: Setting<StageLimits>,
    /// Stage limits for named benchmarks (`suite/name`).
    pub benchmark_timeouts: BTreeMap<String, Setting<StageLimits>>,
    /// Parameter overrides applied where a selected benchmark knows the key.
    pub params: BTreeMap<String, Setting<String>>,
    /// The result store (`None`: the default under the XDG data directory).
    pub store: Setting<Option<String>>,
}

/// The flags that take part in the hierarchy (`None`: not given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    /// `--duration`.
    pub duration: Option<f64>,
    /// `--burnin-seconds`.
    pub burnin_seconds: Option<f64>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--precision`.
    pub precision: Option<f64>,
    /// `--timeout-multiplier`.
    pub timeout_multiplier: Option<f64>,
    /// `--suite-timeout`.
    pub suite_timeout: Option<f64>,
    /// `--percentiles`.
    pub percentiles: Option<warpt_model::Percentiles>,
    /// `--label key=value`, repeated (each checked already).
    pub labels: Vec<(String, String)>,
    /// `--description`.
    pub description: Option<String>,
    /// `--in-process` (only ever turns it on).
    pub in_process: bool,
    /// `--store`.
    pub store: Option<PathBuf>,
}

/// The file's shape. Unknown keys are errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    duration: Option<Spanned<f64>>,
    burnin_seconds: Option<Spanned<f64>>,
    seed: Option<u64>,
    precision: Option<Spanned<f64>>,
    timeout_multiplier: Option<Spanned<f64>>,
    suite_timeout: Option<Spanned<f64>>,
    percentiles: Option<Spanned<Vec<f64>>>,
    description: Option<Spanned<String>>,
    #[serde(default)]
    labels: BTreeMap<String, Spanned<String>>,
    in_process: Option<bool>,
    store: Option<String>,
    timeouts: Option<FileLimits>,
    #[serde(default)]
    benchmark_timeouts: BTreeMap<String, FileLimits>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    /// `[[benchmarks]]`: declared benchmarks, read by the `user` suite
    /// (warpt-exec checks them; the binary's registry reads them).
    #[serde(default, rename = "benchmarks")]
    _benchmarks: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    setup: Option<Spanned<f64>>,
    warmup: Option<Spanned<f64>>,
    measure: Option<Spanned<f64>>,
    validate: Option<Spanned<f64>>,
}

impl Config {
    /// Built-in defaults only.
    pub fn defaults() -> Config {
        Config {
            file: None,
            duration: Setting::default(None),
            burnin_seconds: Setting::default(1.0),
            seed: Setting::default(42),
            precision: Setting::default(1.0),
            timeout_multiplier: Setting::default(1.0),
            suite_timeout: Setting::default(warpt_harness::SUITE_LIMIT.as_secs_f64()),
            percentiles: Setting::default(warpt_model::Percentiles::default()),
            labels: BTreeMap::new(),
            description: Setting::default(None),
            in_process: Setting::default(false),
            timeouts: Setting::default(StageLimits::default()),
            benchmark_timeouts: BTreeMap::new(),
            params: BTreeMap::new(),
            store: Setting::default(None),
        }
    }

    /// Resolves the hierarchy: defaults, then the file (`explicit` or the
    /// first found), then `WARPT_*` variables from `env`, then `flags`.
    pub fn load(
        explicit: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        flags: &Flags,
    ) -> Result<Config> {
        let mut c = Config::defaults();
        if let Some(path) = find_file(explicit, env)? {
            c.apply_file(&path)?;
        }
        c.apply_env(env)?;
        c.apply_flags(flags);
        Ok(c)
    }

    fn apply_file(&mut self, path: &Path) -> Result<()> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("cannot read config file {shown}: {e}")))?;
        let file: FileConfig = toml::from_str(&text).map_err(|e| {
            let at = e
                .span()
                .map(|s| position(&text, s.start))
                .unwrap_or_default();
            UsageError(format!("{shown}{at}: {}", e.message().trim()))
        })?;
        let src = || Source::File(shown.clone());
        let check = |key: &str, v: &Spanned<f64>, positive: bool| -> Result<f64> {
            let x = *v.get_ref();
            let bad = !x.is_finite() || x < 0.0 || (positive && x == 0.0);
            if bad {
                let what = if positive {
                    "a positive number"
                } else {
                    "a number >= 0"
                };
                return Err(UsageError(format!(
                    "{shown}{}: key '{key}' must be {what}, not {x}",
                    position(&text, v.span().start)
                ))
                .into());
            }
            Ok(x)
        };
        if let Some(v) = &file.duration {
            self.duration.set(Some(check("duration", v, false)?), src());
        }
        if let Some(v) = &file.burnin_seconds {
            self.burnin_seconds
                .set(check("burnin_seconds", v, false)?, src());
        }
        if let Some(v) = file.seed {
            self.seed.set(v, src());
        }
        if let Some(v) = &file.precision {
            let p = check("precision", v, true)?;
            self.precision.set(p, src());
        }
        if let Some(v) = &file.timeout_multiplier {
            self.timeout_multiplier
                .set(check("timeout_multiplier", v, true)?, src());
        }
        if let Some(v) = &file.suite_timeout {
            self.suite_timeout
                .set(check("suite_timeout", v, false)?, src());
        }
        if let Some(v) = &file.percentiles {
            let ps = warpt_model::Percentiles::new(v.get_ref()).map_err(|why| {
                UsageError(format!(
                    "{shown}{}: key 'percentiles': {why}",
                    position(&text, v.span().start)
                ))
            })?;
            self.percentiles.set(ps, src());
        }
        if let Some(v) = &file.description {
            if let Some(why) = warpt_model::labels::description_problem(v.get_ref()) {
                return Err(UsageError(format!(
                    "{shown}{}: key 'description': {why}",
                    position(&text, v.span().start)
                ))
                .into());
            }
            self.description.set(Some(v.get_ref().clone()), src());
        }
        for (k, v) in &file.labels {
            use warpt_model::labels::{key_problem, value_problem};
            if let Some(why) = key_problem(k).or_else(|| value_problem(k, v.get_ref())) {
                return Err(UsageError(format!(
                    "{shown}{}: labels.{k}: {why}",
                    position(&text, v.span().start)
                ))
                .into());
            }
            self.labels.insert(
                k.clone(),
                Setting {
                    value: v.get_ref().clone(),
                    source: src(),
                },
            );
        }
        if let Some(v) = file.in_process {
            self.in_process.set(v, src());
        }
        if let Some(v) = &file.store {
            self.store.set(Some(v.clone()), src());
        }
        let limits = |prefix: &str, l: &FileLimits| -> Result<StageLimits> {
            let one = |name: &str, v: &Option<Spanned<f64>>| -> Result<Option<f64>> {
                v.as_ref()
                    .map(|v| check(&format!("{prefix}.{name}"), v, true))
                    .transpose()
            };
            Ok(StageLimits {
                setup: one("setup", &l.setup)?,
                warmup: one("warmup", &l.warmup)?,
                measure: one("measure", &l.measure)?,
                validate: one("validate", &l.validate)?,
            })
        };
        if let Some(l) = &file.timeouts {
            self.timeouts.set(limits("timeouts", l)?, src());
        }
        for (id, l) in &file.benchmark_timeouts {
            let value = limits(&format!("benchmark_timeouts.\"{id}\""), l)?;
            self.benchmark_timeouts.insert(
                id.clone(),
                Setting {
                    value,
                    source: src(),
                },
            );
        }
        for (k, v) in &file.params {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(UsageError(format!(
                        "{shown}: params.{k} must be a string, number or boolean, not {}",
                        other.type_str()
                    ))
                    .into());
                }
            };
            self.params.insert(
                k.clone(),
                Setting {
                    value: text,
                    source: src(),
                },
            );
        }
        self.file = Some(shown);
        Ok(())
    }

    fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<()> {
        fn number(var: &str, text: &str, positive: bool) -> Result<f64> {
            let v: f64 = text.trim().parse().map_err(|_| {
                UsageError(format!(
                    "environment variable {var}='{text}' is not a number"
                ))
            })?;
            if !v.is_finite() || v < 0.0 || (positive && v == 0.0) {
                return Err(UsageError(format!(
                    "environment variable {var}={text} is out of range"
                ))
                .into());
            }
            Ok(v)
        }
        let src = |v: &str| Source::Env(v.to_string());
        if let Some(t) = env("WARPT_DURATION") {
            self.duration.set(
                Some(number("WARPT_DURATION", &t, false)?),
                src("WARPT_DURATION"),
            );
        }
        if let Some(t) = env("WARPT_BURNIN_SECONDS") {
            self.burnin_seconds.set(
                number("WARPT_BURNIN_SECONDS", &t, false)?,
                src("WARPT_BURNIN_SECONDS"),
            );
        }
        if let Some(t) = env("WARPT_SEED") {
            let v = t.trim().parse().map_err(|_| {
                UsageError(format!(
                    "environment variable WARPT_SEED='{t}' is not a whole number"
                ))
            })?;
            self.seed.set(v, src("WARPT_SEED"));
        }
        if let Some(t) = env("WARPT_PRECISION") {
            self.precision
                .set(number("WARPT_PRECISION", &t, true)?, src("WARPT_PRECISION"));
        }
        if let Some(t) = env("WARPT_TIMEOUT_MULTIPLIER") {
            self.timeout_multiplier.set(
                number("WARPT_TIMEOUT_MULTIPLIER", &t, true)?,
                src("WARPT_TIMEOUT_MULTIPLIER"),
            );
        }
        if let Some(t) = env("WARPT_SUITE_TIMEOUT") {
            self.suite_timeout.set(
                number("WARPT_SUITE_TIMEOUT", &t, false)?,
                src("WARPT_SUITE_TIMEOUT"),
            );
        }
        if let Some(t) = env("WARPT_PERCENTILES") {
            let ps = warpt_model::Percentiles::parse(&t).map_err(|why| {
                UsageError(format!(
                    "environment variable WARPT_PERCENTILES='{t}': {why}"
                ))
            })?;
            self.percentiles.set(ps, src("WARPT_PERCENTILES"));
        }
        if let Some(t) = env("WARPT_STORE").filter(|t| !t.is_empty()) {
            self.store.set(Some(t), src("WARPT_STORE"));
        }
        if let Some(t) = env("WARPT_IN_PROCESS") {
            let v = match t.trim() {
                "1" | "true" | "yes" => true,
                "0" | "false" | "no" | "" => false,
                _ => {
                    return Err(UsageError(format!(
                        "environment variable WARPT_IN_PROCESS='{t}' is not 0 or 1"
                    ))
                    .into());
                }
            };
            self.in_process.set(v, src("WARPT_IN_PROCESS"));
        }
        if let Some(t) = env("WARPT_PARAMS") {
            for pair in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').ok_or_else(|| {
                    UsageError(format!(
                        "environment variable WARPT_PARAMS: '{pair}' is not key=value"
                    ))
                })?;
                self.params.insert(
                    k.trim().to_string(),
                    Setting {
                        value: v.to_string(),
                        source: src("WARPT_PARAMS"),
                    },
                );
            }
        }
        Ok(())
    }

    /// This configuration with `flags` on top: what a run with those flags
    /// resolves to when the layers below were read earlier (`warpt serve`
    /// reads its file and environment once, at start).
    pub fn with_flags(mut self, flags: &Flags) -> Config {
        self.apply_flags(flags);
        self
    }

    fn apply_flags(&mut self, flags: &Flags) {
        let src = |f: &str| Source::Flag(f.to_string());
        if let Some(v) = flags.duration {
            self.duration.set(Some(v), src("--duration"));
        }
        if let Some(v) = flags.burnin_seconds {
            self.burnin_seconds.set(v, src("--burnin-seconds"));
        }
        if let Some(v) = flags.seed {
            self.seed.set(v, src("--seed"));
        }
        if let Some(v) = flags.precision {
            self.precision.set(v, src("--precision"));
        }
        if let Some(v) = flags.timeout_multiplier {
            self.timeout_multiplier.set(v, src("--timeout-multiplier"));
        }
        if let Some(v) = flags.suite_timeout {
            self.suite_timeout.set(v, src("--suite-timeout"));
        }
        if let Some(v) = &flags.percentiles {
            self.percentiles.set(v.clone(), src("--percentiles"));
        }
        for (k, v) in &flags.labels {
            self.labels.insert(
                k.clone(),
                Setting {
                    value: v.clone(),
                    source: src("--label"),
                },
            );
        }
        if let Some(v) = &flags.description {
            self.description.set(Some(v.clone()), src("--description"));
        }
        if flags.in_process {
            self.in_process.set(true, src("--in-process"));
        }
        if let Some(p) = &flags.store {
            self.store
                .set(Some(p.display().to_string()), src("--store"));
        }
    }
}

/// `:LINE:COLUMN` of byte `offset` in `text` (1-based).
fn position(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!(":{line}:{col}")
}

/// The configuration file a command without `--config` reads, if any.
pub fn default_file() -> Result<Option<PathBuf>> {
    find_file(None, &|k| std::env::var(k).ok())
}

/// The configuration file to read: `explicit` (which must exist), else
/// `./warpt.toml`, else the XDG one.
fn find_file(
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<PathBuf>> {
    if let Some(p) = explicit {
        if !p.is_file() {
            return Err(UsageError(format!(
                "config file '{}' does not exist or is not a file",
                p.display()
            ))
            .into());
        }
        return Ok(Some(p.to_path_buf()));
    }
    let local = PathBuf::from("warpt.toml");
    if local.is_file() {
        return Ok(Some(local));
    }
    let base = env("XDG_CONFIG_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")));
    Ok(base
        .map(|b| b.join("warpt").join("warpt.toml"))
        .filter(|p| p.is_file()))
}

#[cfg(test)]
mod tests;
