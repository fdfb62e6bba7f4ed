//! Which benchmark, and how it is meant to run.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BenchmarkComponent, BenchmarkKind, ClockProbe, ParamCheck, Params};

/// The identity of a benchmark: its suite and its name within the suite.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct BenchmarkId {
    /// Suite name, e.g. `micro`, `linpack`.
    pub suite: String,
    /// Benchmark name within the suite, e.g. `cpu_flops`.
    pub name: String,
}

impl BenchmarkId {
    /// Builds an id from its two parts.
    pub fn new(suite: impl Into<String>, name: impl Into<String>) -> Self {
        BenchmarkId {
            suite: suite.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for BenchmarkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.suite, self.name)
    }
}

/// An available benchmark: what it measures and the parameters it accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkSpec {
    /// Suite and name.
    pub id: BenchmarkId,
    /// The components this benchmark exercises.
    pub components: Vec<BenchmarkComponent>,
    /// Synthetic, application or domain.
    pub kind: BenchmarkKind,
    /// One paragraph for `warpt benchmark describe`.
    #[serde(default)]
    pub description: Option<String>,
    /// Measurement time used when `--duration` is not given, in seconds.
    #[serde(default)]
    pub default_duration_seconds: Option<f64>,
    /// An external program this benchmark drives, if any.
    #[serde(default)]
    pub external_tool: Option<String>,
    /// Parameters and their default values; `--param key=value` overrides
    /// them and must match the default's type.
    #[serde(default, deserialize_with = "crate::params::null_as_default")]
    pub params: Params,
    /// What each parameter means, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub param_help: BTreeMap<String, String>,
    /// The allowed values of string parameters that take one of a fixed set
    /// (`precision`: f32, bf16, f16). Such a parameter sweeps like a number
    /// (`--param precision=f32,bf16`), and a value outside the set is a
    /// usage error before anything runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub param_choices: BTreeMap<String, Vec<String>>,
    /// Parameters that are more than a value: a command run by a shell, a
    /// file or directory read, or one written. A parameter not listed is a
    /// plain value. The CLI runs them as given; `warpt serve` refuses them
    /// from remote callers unless its operator allowed them
    /// (`--allow-commands`, `--allow-paths DIR`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub param_kinds: BTreeMap<String, ParamKind>,
    /// The bounds of numeric parameters, by name: a value outside is a
    /// usage error when the plan is made, before any worker starts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub param_ranges: BTreeMap<String, ParamRange>,
    /// The unit of numeric parameters (`MiB`, `s`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub param_units: BTreeMap<String, String>,
    /// Stage time limits this benchmark needs instead of the defaults
    /// (e.g. a long setup); `--timeout-multiplier` still scales them.
    #[serde(default, skip_serializing_if = "StageLimits::is_empty")]
    pub timeouts: StageLimits,
    /// The metric names this benchmark reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
    /// How the core's speed is read around each series, when the harness
    /// reads it (benchmarks of the CPU or memory).
    #[serde(default, skip_serializing_if = "ClockProbe::is_full")]
    pub clock_probe: ClockProbe,
    /// The rule across parameters the plan runs after every declared
    /// constraint is met; behaviour, so never serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub check: Option<ParamCheck>,
}

/// What a parameter's value names, beyond being a value.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A command line that warpt runs (through `sh -c` or as a program).
    Command,
    /// A file or directory warpt reads.
    InputPath,
    /// A file or directory warpt writes (or where a command writes).
    OutputPath,
    /// The name of an environment variable holding a secret (an API key)
    /// that warpt sends somewhere: only the operator may set it.
    Secret,
    /// A network address warpt connects to (an endpoint URL, a host): a
    /// secret the operator configured is sent only to the operator's own.
    Address,
}

impl ParamKind {
    /// How messages name the kind: `command`, `input path`, `output path`,
    /// `secret's environment variable`.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKind::Command => "command",
            ParamKind::InputPath => "input path",
            ParamKind::OutputPath => "output path",
            ParamKind::Secret => "secret's environment variable",
            ParamKind::Address => "network address",
        }
    }
}

/// The inclusive bounds of a numeric parameter; `None` leaves that side
/// open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParamRange {
    /// The smallest value allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest value allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl ParamRange {
    /// At least `min`.
    pub fn at_least(min: f64) -> Self {
        ParamRange {
            min: Some(min),
            max: None,
        }
    }

    /// From `min` to `max`, both included.
    pub fn between(min: f64, max: f64) -> Self {
        ParamRange {
            min: Some(min),
            max: Some(max),
        }
    }

    /// Whether `v` lies within the bounds.
    pub fn contains(&self, v: f64) -> bool {
        self.min.is_none_or(|m| v >= m) && self.max.is_none_or(|m| v <= m)
    }
}

impl fmt::Display for ParamRange {
    /// `1..`, `..=0.9`, `0..=0.9`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = self.min {
            write!(f, "{m}")?;
        }
        f.write_str("..")?;
        if let Some(m) = self.max {
            write!(f, "={m}")?;
        }
        Ok(())
    }
}

/// Time limits of the stages of a benchmark run, in seconds; `None` leaves
/// the stage at its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageLimits {
    /// Preparation (data generation, allocation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<f64>,
    /// Warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<f64>,
    /// Measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<f64>,
    /// Validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<f64>,
}

impl StageLimits {
    /// Whether no stage has a limit set.
    pub fn is_empty(&self) -> bool {
        *self == StageLimits::default()
    }

    /// `self` with every limit `other` sets taking precedence.
    pub fn overridden_by(self, other: StageLimits) -> StageLimits {
        StageLimits {
            setup: other.setup.or(self.setup),
            warmup: other.warmup.or(self.warmup),
            measure: other.measure.or(self.measure),
            validate: other.validate.or(self.validate),
        }
    }
}
