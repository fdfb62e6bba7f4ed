//! Per-benchmark configuration: `bench.yaml` (or `bench.toml`) beside a
//! benchmark file, in seed 004's format, and the matrix it expands into.
//!
//! ```yaml
//! problem_size: {n: 256, seed: 7}   # keyword arguments for the benchmark
//! precisions: [fp32, fp64]          # each value one combination ...
//! backends: [cpu]                   # ... times each of these
//! tolerances: {rmse: 1.0e-6, relative_error: 1.0e-6, max_abs_error: 1.0e-5, max_rel_error: 1.0e-4}
//! reference: reference.py:matmul   # what a kernel's answer must match: a
//!                                   # callable (FILE:FUNCTION, or FUNCTION in
//!                                   # the kernel's own file) called with the
//!                                   # kernel's arguments, or a JSON file of
//!                                   # expected numbers ({precision} and
//!                                   # {backend} in its name are replaced)
//! function_name: step               # a kernel's function (run_benchmark)
//! ops_per_call: 2.0e6               # work per call: throughput_ops_per_sec
//! skip_conditions:
//!   - backend: cuda                 # which combinations (all without it)
//!     reason: "no CUDA here"
//!     check: "! nvidia-smi"         # a command whose success means skip
//!                                   # ($WARPT_PYTHON: the run's interpreter)
//! command: "sh build-and-run.sh {file}"  # files in another language:
//! extensions: [cpp]                 # ... these, run by this adapter command
//! timing: device                    # host | device | pytorch | triton
//! cold_cache: false                 # flush the cache before every call
//! device_hygiene: true              # gc, CUDA synchronize/empty_cache/peak reset
//! labels: {team: vision, dataset: imagenet}  # labels of every run of the tree
//! ```
//!
//! The run settings (`timing` and below) are the lowest layer: a
//! benchmark's `get_config()` beats them and a flag beats both.
//!
//! Unknown keys are errors, so a typo never silently does nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod reference;
pub use reference::Reference;
use reference::identifier;

/// A configuration file that cannot be used: the file, where, and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid YAML/TOML, or not the format.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the fault (0 when the parser gave none).
        line: usize,
        /// The parser's message, naming the key.
        message: String,
    },
    /// Both `bench.yaml` and `bench.toml` are present.
    #[error("{0}: both bench.yaml and bench.toml are here; keep one")]
    Both(PathBuf),
}

/// Accuracy tolerances of an optimized variant against its baseline, or
/// of a kernel's combinations against the file's `reference`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerances {
    /// Root-mean-square error.
    pub rmse: Option<f64>,
    /// ‖optimized − baseline‖₂ / ‖baseline‖₂.
    pub relative_error: Option<f64>,
    /// Largest absolute difference (`max_error` is its older name).
    #[serde(alias = "max_error")]
    pub max_abs_error: Option<f64>,
    /// Largest relative difference of one number (|a − b| / |b|, over the
    /// numbers whose expected value is not zero).
    pub max_rel_error: Option<f64>,
}

impl Tolerances {
    /// Without a configuration: a relative error of 1e-6, loose enough for
    /// a different summation order in f64, tight enough for a wrong answer.
    pub const DEFAULT: Tolerances = Tolerances {
        rmse: None,
        relative_error: Some(1e-6),
        max_abs_error: None,
        max_rel_error: None,
    };

    fn is_empty(&self) -> bool {
        self.rmse.is_none()
            && self.relative_error.is_none()
            && self.max_abs_error.is_none()
            && self.max_rel_error.is_none()
    }
}

/// One skip condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkipCondition {
    /// The backend it applies to; every combination without one.
    pub backend: Option<String>,
    /// The precision it applies to; every combination without one.
    pub precision: Option<String>,
    /// What the skip result says.
    pub reason: String,
    /// A shell command whose success (exit 0) means skip; skip always
    /// without one.
    pub check: Option<String>,
}

/// How a benchmark's calls are timed (docs/harness.md, "Timing modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// `perf_counter_ns` around a batch of calls, after a CUDA synchronize.
    Host,
    /// CUDA events around the batch when the benchmark uses CUDA, else the
    /// host timer (and the result says so).
    Device,
    /// `torch.utils.benchmark.Timer.blocked_autorange`, each block a sample.
    Pytorch,
    /// `triton.testing.do_bench`, each timed call a sample; skipped without
    /// a GPU.
    Triton,
}

impl Timing {
    /// The name in flags, files and `details.timing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Timing::Host => "host",
            Timing::Device => "device",
            Timing::Pytorch => "pytorch",
            Timing::Triton => "triton",
        }
    }
}

/// The file's contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    /// Keyword arguments for the benchmark.
    #[serde(default)]
    pub problem_size: Map<String, Value>,
    /// Precisions, each a combination.
    #[serde(default)]
    pub precisions: Vec<String>,
    /// Backends, each a combination.
    #[serde(default)]
    pub backends: Vec<String>,
    /// Accuracy tolerances.
    #[serde(default)]
    pub tolerances: Option<Tolerances>,
    /// When to skip a combination.
    #[serde(default)]
    pub skip_conditions: Vec<SkipCondition>,
    /// The timer.
    #[serde(default)]
    pub timing: Option<Timing>,
    /// Flush the cache (the GPU's L2, else the CPU's last level) before
    /// every call, each call timed on its own.
    #[serde(default)]
    pub cold_cache: Option<bool>,
    /// Clean up before the first timed call (`gc.collect`; with CUDA,
    /// synchronize, empty_cache, reset_peak_memory_stats). On by default.
    #[serde(default)]
    pub device_hygiene: Option<bool>,
    /// `pytorch` timing: blocked_autorange's `min_run_time`, seconds per
    /// request (0.05 by default).
    #[serde(default)]
    pub min_run_time: Option<f64>,
    /// `triton` timing: do_bench's warm-up, milliseconds (25).
    #[serde(default)]
    pub triton_warmup_ms: Option<f64>,
    /// `triton` timing: do_bench's repetition time, milliseconds (100).
    #[serde(default)]
    pub triton_rep_ms: Option<f64>,
    /// The adapter command for files in another language (run
    /// by `sh -c` in the file's directory, `{file}` replaced by the file's
    /// quoted path): it must speak docs/protocol.md on stdin and stdout.
    #[serde(default)]
    pub command: Option<String>,
    /// The function a kernel file defines (`run_benchmark` without it).
    #[serde(default)]
    pub function_name: Option<String>,
    /// Units of work one call does (1 without it: a call is an op):
    /// `throughput_ops_per_sec` is this over the seconds per call. A
    /// benchmark's `get_config()` may say instead.
    #[serde(default)]
    pub ops_per_call: Option<f64>,
    /// What a kernel's answer is checked against ([`Reference`]).
    #[serde(default)]
    pub reference: Option<String>,
    /// The file extensions `command` runs ([`Foreign::DEFAULT_EXTENSIONS`]
    /// when absent).
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    /// Labels every run of the tree carries ([`run_labels`]): what the
    /// code is, said where it lives (`--label` on the command line wins).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// The labels the bench.yaml files of a run (`configs`, by directory)
/// give it, merged: a key two files set to different values is an error
/// naming both.
pub fn run_labels(
    configs: &BTreeMap<PathBuf, BenchConfig>,
) -> Result<BTreeMap<String, String>, String> {
    let mut out: BTreeMap<String, (String, &Path)> = BTreeMap::new();
    for (dir, c) in configs {
        for (k, v) in &c.labels {
            match out.get(k) {
                Some((other, at)) if other != v => {
                    return Err(format!(
                        "label {k}: {} says '{other}' and {} says '{v}' (bench.yaml labels are the whole run's; \
                         give them once, or with --label)",
                        at.display(),
                        dir.display()
                    ));
                }
                Some(_) => {}
                None => {
                    out.insert(k.clone(), (v.clone(), dir.as_path()));
                }
            }
        }
    }
    Ok(out.into_iter().map(|(k, (v, _))| (k, v)).collect())
}

/// Benchmark files in another language and the adapter command that runs
/// them: bench.yaml's `command` and `extensions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Foreign {
    /// The command line, with `{file}` where the file's path goes.
    pub command: String,
    /// The extensions (without the dot) it runs.
    pub extensions: Vec<String>,
}

impl Foreign {
    /// The extensions `command` runs when bench.yaml names none: C, C++
    /// and Rust sources.
    pub const DEFAULT_EXTENSIONS: [&str; 5] = ["c", "cc", "cpp", "cxx", "rs"];

    /// Whether `file` is one of this command's.
    pub fn runs(&self, file: &Path) -> bool {
        file.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.extensions.iter().any(|x| x == e))
    }

    /// The shell command line for `file`: `{file}` replaced by its path,
    /// single-quoted for `sh`.
    pub fn line_for(&self, file: &Path) -> String {
        let quoted = format!("'{}'", file.display().to_string().replace('\'', "'\\''"));
        self.command.replace("{file}", &quoted)
    }
}

/// `--precision` / `--backends`: the matrix's values to run (empty: all).
/// A file whose bench.yaml has no such axis runs as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatrixFilter {
    /// Precisions kept.
    pub precisions: Vec<String>,
    /// Backends kept.
    pub backends: Vec<String>,
}

impl MatrixFilter {
    fn keeps(&self, precision: Option<&String>, backend: Option<&String>) -> bool {
        let on = |wanted: &[String], value: Option<&String>| {
            wanted.is_empty() || value.is_none_or(|v| wanted.contains(v))
        };
        on(&self.precisions, precision) && on(&self.backends, backend)
    }

    /// The values asked for that no file of `configs` declares, as
    /// `--precision X` / `--backends X` (a typo would otherwise run
    /// nothing, silently).
    pub fn unknown<'a>(&self, configs: impl IntoIterator<Item = &'a BenchConfig>) -> Vec<String> {
        let configs: Vec<&BenchConfig> = configs.into_iter().collect();
        let missing = |wanted: &[String], flag: &str, axis: fn(&BenchConfig) -> &[String]| {
            wanted
                .iter()
                .filter(|w| !configs.iter().any(|c| axis(c).contains(w)))
                .map(|w| format!("{flag} {w}"))
                .collect::<Vec<_>>()
        };
        let mut out = missing(&self.precisions, "--precision", |c| &c.precisions);
        out.extend(missing(&self.backends, "--backends", |c| &c.backends));
        out
    }
}

/// One combination of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Combination {
    /// Its tags on every metric: `precision`, `backend` when the file
    /// names them.
    pub tags: BTreeMap<String, String>,
    /// Keyword arguments: the problem size, `precision`, `backend`.
    pub kwargs: Map<String, Value>,
    /// Why it is skipped, when a skip condition holds.
    pub skip: Option<String>,
    /// The file's run settings (`timing`, `cold_cache`, ...), for the
    /// adapter's lowest layer.
    pub settings: Map<String, Value>,
    /// The adapter command for files in another language, if any.
    pub foreign: Option<Foreign>,
    /// What the answer must match, for this combination (a file's
    /// `{precision}` / `{backend}` replaced); relative paths are the
    /// config's directory's.
    pub reference: Option<Reference>,
}

impl BenchConfig {
    /// The configuration beside `file` (`bench.yaml`, `bench.yml` or
    /// `bench.toml` in its directory); the default without one.
    pub fn beside(file: &Path) -> Result<(BenchConfig, Option<PathBuf>), ConfigError> {
        let dir = file.parent().unwrap_or(Path::new("."));
        let yaml = ["bench.yaml", "bench.yml"]
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file());
        let toml = Some(dir.join("bench.toml")).filter(|p| p.is_file());
        match (yaml, toml) {
            (Some(_), Some(_)) => Err(ConfigError::Both(dir.to_path_buf())),
            (Some(p), None) | (None, Some(p)) => Ok((Self::load(&p)?, Some(p))),
            (None, None) => Ok((BenchConfig::default(), None)),
        }
    }

    /// Reads `path` (YAML, or TOML when it ends in `.toml`).
    pub fn load(path: &Path) -> Result<BenchConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |line: usize, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        };
        let config: BenchConfig = if path.extension().is_some_and(|e| e == "toml") {
            toml::from_str(&text).map_err(|e| {
                let line = e.span().map_or(0, |s| {
                    text[..s.start.min(text.len())].lines().count().max(1)
                });
                invalid(line, e.message().to_string())
            })?
        } else {
            if text.trim().is_empty() {
                return Ok(BenchConfig::default());
            }
            serde_yaml_ng::from_str(&text).map_err(|e| {
                let line = e.location().map_or(0, |l| l.line());
                invalid(line, e.to_string())
            })?
        };
        config.check().map_err(|message| {
            // The line that sets the key the message starts with.
            let key = message.split(':').next().unwrap_or_default();
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(key))
                .map_or(0, |i| i + 1);
            invalid(line, message)
        })?;
        Ok(config)
    }

    /// The adapter command for files in another language, if the file
    /// names one.
    pub fn foreign(&self) -> Option<Foreign> {
        let command = self.command.clone()?;
        let extensions = match &self.extensions {
            Some(e) => e
                .iter()
                .map(|x| x.trim_start_matches('.').to_string())
                .collect(),
            None => Foreign::DEFAULT_EXTENSIONS.map(str::to_string).to_vec(),
        };
        Some(Foreign {
            command,
            extensions,
        })
    }

    /// The run settings the file sets, by their names in `get_config()`.
    pub fn run_settings(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("timing", self.timing.map(|t| t.as_str().into()));
        put("cold_cache", self.cold_cache.map(Value::from));
        put("device_hygiene", self.device_hygiene.map(Value::from));
        put("min_run_time", self.min_run_time.map(Value::from));
        put("triton_warmup_ms", self.triton_warmup_ms.map(Value::from));
        put("triton_rep_ms", self.triton_rep_ms.map(Value::from));
        put("function_name", self.function_name.clone().map(Value::from));
        put("ops_per_call", self.ops_per_call.map(Value::from));
        m
    }

    /// The kernel function's name: `function_name`, else `run_benchmark`.
    pub fn kernel_function(&self) -> &str {
        self.function_name.as_deref().unwrap_or("run_benchmark")
    }

    /// Refuses values serde cannot: a `function_name` that is no Python
    /// identifier, an `ops_per_call` that is not a positive number, a
    /// `reference` of neither form.
    pub fn check(&self) -> Result<(), String> {
        if let Some(f) = &self.function_name
            && !identifier(f)
        {
            return Err(format!(
                "function_name: '{f}' is not a Python function name"
            ));
        }
        if let Some(x) = self.ops_per_call
            && !(x.is_finite() && x > 0.0)
        {
            return Err(format!("ops_per_call: {x} is not a number above 0"));
        }
        if let Some(r) = &self.reference {
            Reference::parse(r)?;
        }
        if let Some(why) = warpt_model::labels::labels_problem(&self.labels) {
            return Err(format!("labels: {why}"));
        }
        Ok(())
    }

    /// The tolerances that apply: the file's, else [`Tolerances::DEFAULT`].
    pub fn tolerances(&self) -> Tolerances {
        self.tolerances
            .filter(|t| !t.is_empty())
            .unwrap_or(Tolerances::DEFAULT)
    }

    /// The matrix: every precision × backend (one combination when the
    /// file names neither) that `filter` keeps, each with its skip verdict
    /// (checks run here, with `$WARPT_PYTHON` set to `python`).
    pub fn combinations(&self, python: &str, filter: &MatrixFilter) -> Vec<Combination> {
        let axis = |v: &[String]| -> Vec<Option<String>> {
            if v.is_empty() {
                vec![None]
            } else {
                v.iter().cloned().map(Some).collect()
            }
        };
        let mut out = Vec::new();
        for precision in axis(&self.precisions) {
            for backend in axis(&self.backends) {
                if !filter.keeps(precision.as_ref(), backend.as_ref()) {
                    continue;
                }
                let mut tags = BTreeMap::new();
                let mut kwargs = self.problem_size.clone();
                if let Some(p) = &precision {
                    tags.insert("precision".to_string(), p.clone());
                    kwargs.insert("precision".into(), Value::from(p.as_str()));
                }
                if let Some(b) = &backend {
                    tags.insert("backend".to_string(), b.clone());
                    kwargs.insert("backend".into(), Value::from(b.as_str()));
                }
                let skip = self
                    .skip_conditions
                    .iter()
                    .filter(|c| {
                        c.backend
                            .as_ref()
                            .is_none_or(|b| backend.as_ref() == Some(b))
                            && c.precision
                                .as_ref()
                                .is_none_or(|p| precision.as_ref() == Some(p))
                    })
                    .find(|c| {
                        c.check
                            .as_deref()
                            .is_none_or(|cmd| check_holds(cmd, python))
                    })
                    .map(|c| c.reason.clone());
                out.push(Combination {
                    tags,
                    kwargs,
                    skip,
                    settings: self.run_settings(),
                    foreign: self.foreign(),
                    reference: self
                        .reference
                        .as_deref()
                        .and_then(|r| Reference::parse(r).ok())
                        .map(|r| r.for_combination(precision.as_deref(), backend.as_deref())),
                });
            }
        }
        out
    }
}

/// Whether `command` succeeds under `sh -c` (its output discarded).
fn check_holds(command: &str, python: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("WARPT_PYTHON", python)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests;
