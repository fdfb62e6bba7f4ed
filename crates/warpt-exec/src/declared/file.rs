//! `[[benchmarks]]` tables as written, checked into [`Declared`]
//! benchmarks: every key known, every regex compiled, every parsed number
//! given a unit and a direction — before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use warpt_model::{BenchmarkComponent, ParamValue};

use super::DeclareError;

/// The metrics warpt measures itself on every run of a declared command
/// (user and system CPU time are details: see [`super::bench`]).
pub const MEASURED: [&str; 2] = ["wall_time_s", "peak_rss_bytes"];

/// The parameter that names the declaring file (set by warpt, not the user).
pub const FILE_PARAM: &str = "file";

/// One benchmark declared in a file.
#[derive(Debug, Clone)]
pub struct Declared {
    /// `name`: unique across the files read.
    pub name: String,
    /// The file that declares it (absolute).
    pub file: PathBuf,
    /// The file's directory: where its commands run and relative paths start.
    pub dir: PathBuf,
    /// `description`.
    pub description: Option<String>,
    /// `components` (default: cpu).
    pub components: Vec<BenchmarkComponent>,
    /// `command`: one shell string, `{NAME}` substituted from `params`.
    pub command: String,
    /// `setup`: run once before the warm-up.
    pub setup: Option<String>,
    /// `teardown`: run once at the end, whatever happened.
    pub teardown: Option<String>,
    /// `shell` (default `sh`).
    pub shell: String,
    /// `timeout`: the limit of one run.
    pub timeout: Option<Duration>,
    /// `duration`: measurement seconds when no flag or configuration says.
    pub duration: Option<f64>,
    /// `parse`: how the output becomes metrics.
    pub parser: Option<Parser>,
    /// `metrics`: one per number the parser yields, in the parser's order.
    pub metrics: Vec<MetricDecl>,
    /// `params`: each key's values; more than one is a matrix to sweep,
    /// the first is the default.
    pub params: BTreeMap<String, Vec<ParamValue>>,
    /// `tolerances`.
    pub tolerances: Option<Tolerances>,
    /// `skip_if`: any one that holds skips the benchmark.
    pub skip_if: Vec<Skip>,
}

/// A number the parser yields and what it means.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricDecl {
    /// Metric name (a regex group or a JSON pointer's key).
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// `direction = "higher"`.
    pub higher_is_better: bool,
}

/// Which of the command's streams the parser reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output (the default).
    Stdout,
    /// Standard error.
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// How a run's output becomes numbers.
#[derive(Debug, Clone)]
pub enum Parser {
    /// `parse.regex`: each named group of each pattern is one metric,
    /// taken from the pattern's first match (`^` and `$` match at line
    /// ends).
    Regex {
        /// The stream read.
        stream: Stream,
        /// The compiled patterns.
        patterns: Vec<Regex>,
    },
    /// `parse.json`: the output is one JSON document; each metric is the
    /// number at a JSON pointer (RFC 6901).
    Json {
        /// The stream read.
        stream: Stream,
        /// Metric name and pointer.
        pointers: Vec<(String, String)>,
    },
}

/// `tolerances`: the last run's output against a reference file.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerances {
    /// The expected output (relative to the declaring file; `{NAME}` substituted).
    pub reference: String,
    /// A file the command writes, compared instead of its stdout.
    pub output: Option<String>,
    /// Absolute tolerance of each number.
    pub abs: f64,
    /// Relative tolerance of each number (of the reference's value).
    pub rel: f64,
}

/// One `skip_if` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// `command`: skipped when this shell command exits 0.
    Command(String),
    /// `missing`: skipped when this program is not on `PATH`.
    Missing(String),
    /// `env`: skipped when this environment variable is set and not empty.
    Env(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBenchmark {
    name: String,
    command: String,
    description: Option<String>,
    components: Option<Vec<String>>,
    setup: Option<String>,
    teardown: Option<String>,
    shell: Option<String>,
    timeout: Option<f64>,
    duration: Option<f64>,
    parse: Option<RawParse>,
    #[serde(default)]
    metrics: BTreeMap<String, RawMetric>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    tolerances: Option<RawTolerances>,
    skip_if: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParse {
    regex: Option<toml::Value>,
    json: Option<BTreeMap<String, String>>,
    stream: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    unit: String,
    direction: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTolerances {
    reference: String,
    output: Option<String>,
    abs: Option<f64>,
    rel: Option<f64>,
}

/// A string or a list of strings (`regex`, `missing`, `env`).
fn strings(v: &toml::Value, key: &str) -> Result<Vec<String>, String> {
    match v {
        toml::Value::String(s) => Ok(vec![s.clone()]),
        toml::Value::Array(a) if !a.is_empty() => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("key '{key}': every item must be a string"))
            })
            .collect(),
        _ => Err(format!(
            "key '{key}' must be a string or a non-empty list of strings"
        )),
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn scalar(v: &toml::Value) -> Option<ParamValue> {
    match v {
        toml::Value::Integer(i) => Some(ParamValue::Int(*i)),
        toml::Value::Float(f) => Some(ParamValue::Float(*f)),
        toml::Value::Boolean(b) => Some(ParamValue::Bool(*b)),
        toml::Value::String(s) => Some(ParamValue::Str(s.clone())),
        _ => None,
    }
}

fn param_values(key: &str, v: &toml::Value) -> Result<Vec<ParamValue>, String> {
    let values = match v {
        toml::Value::Array(a) => a
            .iter()
            .map(|x| {
                scalar(x).ok_or_else(|| {
                    format!("key 'params.{key}': a list of strings, numbers or booleans")
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        other => vec![scalar(other).ok_or_else(|| {
            format!("key 'params.{key}' must be a string, number, boolean or a list of them")
        })?],
    };
    let Some(first) = values.first() else {
        return Err(format!("key 'params.{key}' is an empty list"));
    };
    if values
        .iter()
        .any(|v| std::mem::discriminant(v) != std::mem::discriminant(first))
    {
        return Err(format!(
            "key 'params.{key}': every value must have the same type"
        ));
    }
    if values.len() > 1 {
        for v in &values {
            if let ParamValue::Str(s) = v
                && s.contains(',')
            {
                return Err(format!(
                    "key 'params.{key}': value '{s}' holds a comma, which separates a matrix's values"
                ));
            }
        }
    }
    Ok(values)
}

impl Declared {
    /// Checks table `index` of `file`'s `[[benchmarks]]`.
    pub(crate) fn from_toml(
        file: &Path,
        index: usize,
        table: &toml::Value,
    ) -> Result<Declared, DeclareError> {
        let label = table.get("name").and_then(toml::Value::as_str).map_or_else(
            || format!("benchmarks[{index}]"),
            |n| format!("benchmark '{n}'"),
        );
        let err = |message: String| DeclareError::new(file, &label, message);
        let raw: RawBenchmark = table
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| err(e.message().trim().to_string()))?;
        if !valid_name(&raw.name) {
            return Err(err(format!(
                "key 'name': '{}' must be letters, digits, '_', '-' or '.'",
                raw.name
            )));
        }
        if raw.command.trim().is_empty() {
            return Err(err("key 'command' is empty".into()));
        }
        let components = match &raw.components {
            None => vec![BenchmarkComponent::Cpu],
            Some(list) if list.is_empty() => {
                return Err(err("key 'components' is an empty list".into()));
            }
            Some(list) => list
                .iter()
                .map(|c| {
                    c.parse::<BenchmarkComponent>()
                        .map_err(|e| err(format!("key 'components': {e}")))
                })
                .collect::<Result<_, _>>()?,
        };
        let positive = |key: &str, v: Option<f64>| -> Result<Option<f64>, DeclareError> {
            match v {
                Some(x) if !(x.is_finite() && x > 0.0) => Err(err(format!(
                    "key '{key}' must be a positive number of seconds, not {x}"
                ))),
                other => Ok(other),
            }
        };
        let timeout = positive("timeout", raw.timeout)?.map(Duration::from_secs_f64);
        let duration = positive("duration", raw.duration)?;

        let (parser, produced) = match &raw.parse {
            None => (None, Vec::new()),
            Some(p) => {
                let (parser, names) = parser_of(p).map_err(err)?;
                (Some(parser), names)
            }
        };
        let mut metrics = Vec::new();
        for name in &produced {
            let m = raw.metrics.get(name).ok_or_else(|| {
                err(format!(
                    "key 'metrics.{name}' is missing: the parser yields '{name}', give its unit and direction (metrics.{name} = {{ unit = \"...\", direction = \"higher\" }})"
                ))
            })?;
            let higher_is_better = match m.direction.as_str() {
                "higher" => true,
                "lower" => false,
                other => {
                    return Err(err(format!(
                        "key 'metrics.{name}.direction': '{other}' is not 'higher' or 'lower'"
                    )));
                }
            };
            if m.unit.trim().is_empty() {
                return Err(err(format!("key 'metrics.{name}.unit' is empty")));
            }
            metrics.push(MetricDecl {
                name: name.clone(),
                unit: m.unit.clone(),
                higher_is_better,
            });
        }
        if let Some(extra) = raw.metrics.keys().find(|k| !produced.contains(k)) {
            let why = if MEASURED.contains(&extra.as_str()) {
                "warpt measures it on every run".to_string()
            } else if produced.is_empty() {
                "there is no 'parse' to yield it".to_string()
            } else {
                format!("the parser yields only {}", produced.join(", "))
            };
            return Err(err(format!("key 'metrics.{extra}': {why}")));
        }

        let mut params = BTreeMap::new();
        for (k, v) in &raw.params {
            if k == FILE_PARAM {
                return Err(err(format!(
                    "key 'params.{k}' is reserved: warpt records the declaring file under it"
                )));
            }
            if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || k.is_empty() {
                return Err(err(format!(
                    "key 'params.{k}': a parameter name is letters, digits and '_'"
                )));
            }
            params.insert(k.clone(), param_values(k, v).map_err(err)?);
        }

        let tolerances = match &raw.tolerances {
            None => None,
            Some(t) => {
                let nonneg = |key: &str, v: Option<f64>| -> Result<f64, DeclareError> {
                    let x = v.unwrap_or(0.0);
                    if !(x.is_finite() && x >= 0.0) {
                        return Err(err(format!("key 'tolerances.{key}' must be >= 0, not {x}")));
                    }
                    Ok(x)
                };
                Some(Tolerances {
                    reference: t.reference.clone(),
                    output: t.output.clone(),
                    abs: nonneg("abs", t.abs)?,
                    rel: nonneg("rel", t.rel)?,
                })
            }
        };
        let skip_if = match &raw.skip_if {
            None => Vec::new(),
            Some(v) => skips(v).map_err(err)?,
        };
        let file = file.to_path_buf();
        let dir = file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(Declared {
            name: raw.name,
            file,
            dir,
            description: raw.description,
            components,
            command: raw.command,
            setup: raw.setup,
            teardown: raw.teardown,
            shell: raw.shell.unwrap_or_else(|| "sh".into()),
            timeout,
            duration,
            parser,
            metrics,
            params,
            tolerances,
            skip_if,
        })
    }
}

/// The parser of `parse` and the metric names it yields, in order.
fn parser_of(p: &RawParse) -> Result<(Parser, Vec<String>), String> {
    let stream = match p.stream.as_deref() {
        None | Some("stdout") => Stream::Stdout,
        Some("stderr") => Stream::Stderr,
        Some(other) => {
            return Err(format!(
                "key 'parse.stream': '{other}' is not 'stdout' or 'stderr'"
            ));
        }
    };
    match (&p.regex, &p.json) {
        (Some(_), Some(_)) => Err("keys 'parse.regex' and 'parse.json': give one of them".into()),
        (None, None) => Err("key 'parse' needs 'regex' or 'json'".into()),
        (Some(r), None) => {
            let mut patterns = Vec::new();
            let mut names: Vec<String> = Vec::new();
            for text in strings(r, "parse.regex")? {
                let re = RegexBuilder::new(&text)
                    .multi_line(true)
                    .build()
                    .map_err(|e| {
                        format!(
                            "key 'parse.regex': '{text}' does not compile: {}",
                            e.to_string().replace('\n', " ")
                        )
                    })?;
                let groups: Vec<String> = re.capture_names().flatten().map(String::from).collect();
                if groups.is_empty() {
                    return Err(format!(
                        "key 'parse.regex': '{text}' has no named group; name each number, e.g. (?P<rate>[0-9.]+)"
                    ));
                }
                for g in groups {
                    if names.contains(&g) {
                        return Err(format!("key 'parse.regex': group '{g}' is named twice"));
                    }
                    names.push(g);
                }
                patterns.push(re);
            }
            Ok((Parser::Regex { stream, patterns }, names))
        }
        (None, Some(map)) => {
            if map.is_empty() {
                return Err("key 'parse.json' is empty: map metric names to JSON pointers".into());
            }
            for (name, pointer) in map {
                if !(pointer.is_empty() || pointer.starts_with('/')) {
                    return Err(format!(
                        "key 'parse.json.{name}': '{pointer}' is not a JSON pointer (it starts with '/', e.g. /results/0/mean)"
                    ));
                }
            }
            let pointers: Vec<(String, String)> =
                map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let names = pointers.iter().map(|(k, _)| k.clone()).collect();
            Ok((Parser::Json { stream, pointers }, names))
        }
    }
}

/// `skip_if`: a command string, or a table of `command`, `missing`, `env`.
fn skips(v: &toml::Value) -> Result<Vec<Skip>, String> {
    match v {
        toml::Value::String(c) => Ok(vec![Skip::Command(c.clone())]),
        toml::Value::Table(t) => {
            let mut out = Vec::new();
            for (k, v) in t {
                let key = format!("skip_if.{k}");
                let list = strings(v, &key)?;
                match k.as_str() {
                    "command" => out.extend(list.into_iter().map(Skip::Command)),
                    "missing" => out.extend(list.into_iter().map(Skip::Missing)),
                    "env" => out.extend(list.into_iter().map(Skip::Env)),
                    _ => {
                        return Err(format!(
                            "key '{key}' is unknown; skip_if takes command, missing and env"
                        ));
                    }
                }
            }
            Ok(out)
        }
        _ => Err(
            "key 'skip_if' must be a shell command or a table of command, missing and env".into(),
        ),
    }
}
