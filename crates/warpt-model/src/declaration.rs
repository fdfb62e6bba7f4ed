//! Declaring a benchmark: each parameter once ([`Param`]: name, default,
//! help, what its value may be, unit), and the spec built from them
//! ([`SpecBuilder`], from [`BenchmarkSpec::builder`]).
//!
//! A parameter's constructor says what its value is, so a declaration
//! cannot leave it out: a number comes with its range, a string with its
//! choices or with what it names (a file read or written, a command, a
//! secret's variable, an address), or is declared a plain value on
//! purpose ([`Param::text`]). The plan checks every declaration before
//! anything runs; the few rules that tie parameters together go in one
//! [`ParamCheck`].

use std::fmt;
use std::ops::{RangeFrom, RangeInclusive};
use std::sync::Arc;

use crate::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkSpec, ClockProbe, ParamKind,
    ParamRange, ParamValue, Params, StageLimits,
};

/// What a parameter's value may be.
#[derive(Debug, Clone, PartialEq)]
enum Constraint {
    /// A number within bounds.
    Range(ParamRange),
    /// One of a fixed set of strings.
    Choices(Vec<String>),
    /// A string naming something warpt acts on.
    Kind(ParamKind),
    /// A flag, or a string that is only a value (a model's name, a tag).
    Plain,
}

/// One parameter of a benchmark, declared once.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    name: String,
    default: ParamValue,
    help: String,
    constraint: Constraint,
    unit: Option<String>,
}

impl Param {
    fn new(name: &str, default: ParamValue, constraint: Constraint) -> Self {
        Param {
            name: name.into(),
            default,
            help: String::new(),
            constraint,
            unit: None,
        }
    }

    /// A whole number within `range` (`1..`, `0..=100`).
    pub fn int(name: &str, default: i64, range: impl Into<ParamRange>) -> Self {
        Param::new(
            name,
            ParamValue::Int(default),
            Constraint::Range(range.into()),
        )
    }

    /// A real number within `range` (`0.0..=1.0`, `0.0..`).
    pub fn float(name: &str, default: f64, range: impl Into<ParamRange>) -> Self {
        Param::new(
            name,
            ParamValue::Float(default),
            Constraint::Range(range.into()),
        )
    }

    /// A flag.
    pub fn flag(name: &str, default: bool) -> Self {
        Param::new(name, ParamValue::Bool(default), Constraint::Plain)
    }

    /// One of `choices`; such a parameter sweeps like a number
    /// (`--param precision=f32,bf16`).
    pub fn choice(name: &str, default: &str, choices: &[&str]) -> Self {
        Param::new(
            name,
            ParamValue::from(default),
            Constraint::Choices(choices.iter().map(|c| c.to_string()).collect()),
        )
    }

    /// Free text that is only a value: it names no file, command, secret
    /// or address (those have constructors of their own, which a server
    /// facing remote callers needs to see).
    pub fn text(name: &str, default: &str) -> Self {
        Param::new(name, ParamValue::from(default), Constraint::Plain)
    }

    /// Text naming something warpt acts on: a file it reads or writes, a
    /// command it runs, a secret's variable, an address it connects to.
    pub fn names(kind: ParamKind, name: &str, default: &str) -> Self {
        Param::new(name, ParamValue::from(default), Constraint::Kind(kind))
    }

    /// A file or directory warpt reads.
    pub fn input_path(name: &str, default: &str) -> Self {
        Param::names(ParamKind::InputPath, name, default)
    }

    /// A file or directory warpt writes.
    pub fn output_path(name: &str, default: &str) -> Self {
        Param::names(ParamKind::OutputPath, name, default)
    }

    /// A command line warpt runs.
    pub fn command(name: &str, default: &str) -> Self {
        Param::names(ParamKind::Command, name, default)
    }

    /// What the parameter means, for `describe` and `--help`.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = help.into();
        self
    }

    /// The unit of a numeric value (`MiB`, `s`).
    pub fn unit(mut self, unit: impl Into<String>) -> Self {
        self.unit = Some(unit.into());
        self
    }

    /// The parameter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its default value.
    pub fn default_value(&self) -> &ParamValue {
        &self.default
    }

    /// Whether a comma list of values sweeps it (numbers, flags and
    /// choices; other text may hold commas of its own).
    pub fn sweeps(&self) -> bool {
        match self.constraint {
            Constraint::Kind(_) => false,
            Constraint::Plain => !matches!(self.default, ParamValue::Str(_)),
            Constraint::Range(_) | Constraint::Choices(_) => true,
        }
    }
}

/// A rule across parameters (`insert_size` at least `read_length`), or a
/// check of what a value refers to, run by the plan after every
/// declaration is met: `Err` says what is wrong, naming the parameter.
#[derive(Clone)]
pub struct ParamCheck(Arc<CheckFn>);

/// The function behind a [`ParamCheck`].
type CheckFn = dyn Fn(&Params) -> Result<(), String> + Send + Sync;

impl ParamCheck {
    /// A check of `f`.
    pub fn new(f: impl Fn(&Params) -> Result<(), String> + Send + Sync + 'static) -> Self {
        ParamCheck(Arc::new(f))
    }

    /// Runs the check.
    pub fn run(&self, params: &Params) -> Result<(), String> {
        (self.0)(params)
    }
}

impl fmt::Debug for ParamCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ParamCheck(..)")
    }
}

/// Specs compare by their data: a check is behaviour, and a spec read back
/// from JSON has none.
impl PartialEq for ParamCheck {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl From<RangeFrom<i64>> for ParamRange {
    fn from(r: RangeFrom<i64>) -> Self {
        ParamRange::at_least(r.start as f64)
    }
}

impl From<RangeInclusive<i64>> for ParamRange {
    fn from(r: RangeInclusive<i64>) -> Self {
        ParamRange::between(*r.start() as f64, *r.end() as f64)
    }
}

impl From<RangeFrom<f64>> for ParamRange {
    fn from(r: RangeFrom<f64>) -> Self {
        ParamRange::at_least(r.start)
    }
}

impl From<RangeInclusive<f64>> for ParamRange {
    fn from(r: RangeInclusive<f64>) -> Self {
        ParamRange::between(*r.start(), *r.end())
    }
}

/// Builds a [`BenchmarkSpec`]: everything optional starts empty.
#[derive(Debug, Clone)]
pub struct SpecBuilder {
    spec: BenchmarkSpec,
}

impl BenchmarkSpec {
    /// A spec for `suite/name`: synthetic, no components, parameters or
    /// metrics until the builder adds them.
    pub fn builder(suite: &str, name: &str) -> SpecBuilder {
        SpecBuilder {
            spec: BenchmarkSpec {
                id: BenchmarkId::new(suite, name),
                components: Vec::new(),
                kind: BenchmarkKind::Synthetic,
                description: None,
                default_duration_seconds: None,
                external_tool: None,
                params: Params::new(),
                param_help: Default::default(),
                param_choices: Default::default(),
                param_kinds: Default::default(),
                param_ranges: Default::default(),
                param_units: Default::default(),
                timeouts: StageLimits::default(),
                metrics: Vec::new(),
                clock_probe: ClockProbe::Full,
                check: None,
            },
        }
    }
}

impl SpecBuilder {
    /// A component the benchmark exercises.
    pub fn component(mut self, c: BenchmarkComponent) -> Self {
        self.spec.components.push(c);
        self
    }

    /// Several components at once, in order (`.components([Cpu, Ram])`).
    pub fn components(mut self, cs: impl IntoIterator<Item = BenchmarkComponent>) -> Self {
        self.spec.components.extend(cs);
        self
    }

    /// Synthetic (the default), application or domain.
    pub fn kind(mut self, kind: BenchmarkKind) -> Self {
        self.spec.kind = kind;
        self
    }

    /// The paragraph `benchmark describe` prints.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.spec.description = Some(text.into());
        self
    }

    /// Measurement time when `--duration` is not given, in seconds.
    pub fn duration(mut self, seconds: f64) -> Self {
        self.spec.default_duration_seconds = Some(seconds);
        self
    }

    /// The external program the benchmark drives.
    pub fn external_tool(mut self, tool: impl Into<String>) -> Self {
        self.spec.external_tool = Some(tool.into());
        self
    }

    /// Declares a parameter; a later one of the same name replaces it.
    pub fn param(mut self, p: Param) -> Self {
        let s = &mut self.spec;
        let name = p.name.clone();
        s.param_help.remove(&name);
        s.param_choices.remove(&name);
        s.param_kinds.remove(&name);
        s.param_ranges.remove(&name);
        s.param_units.remove(&name);
        if !p.help.is_empty() {
            s.param_help.insert(name.clone(), p.help);
        }
        match p.constraint {
            // An open range (a user's own parameter) bounds nothing.
            Constraint::Range(r) if r == ParamRange::default() => {}
            Constraint::Range(r) => {
                s.param_ranges.insert(name.clone(), r);
            }
            Constraint::Choices(c) => {
                s.param_choices.insert(name.clone(), c);
            }
            Constraint::Kind(k) => {
                s.param_kinds.insert(name.clone(), k);
            }
            Constraint::Plain => {}
        }
        if let Some(u) = p.unit {
            s.param_units.insert(name.clone(), u);
        }
        s.params.insert(name, p.default);
        self
    }

    /// Declares each of `params` in turn (a table shared by benchmarks).
    pub fn params(self, params: impl IntoIterator<Item = Param>) -> Self {
        params.into_iter().fold(self, SpecBuilder::param)
    }

    /// The rule across parameters the plan runs after the declarations.
    pub fn check(
        mut self,
        check: impl Fn(&Params) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.spec.check = Some(ParamCheck::new(check));
        self
    }

    /// Stage time limits instead of the defaults.
    pub fn timeouts(mut self, limits: StageLimits) -> Self {
        self.spec.timeouts = limits;
        self
    }

    /// How the core's speed is read around each series (default: a full
    /// reading).
    pub fn clock_probe(mut self, probe: ClockProbe) -> Self {
        self.spec.clock_probe = probe;
        self
    }

    /// A metric the benchmark reports (call once per metric).
    pub fn metric(mut self, name: impl Into<String>) -> Self {
        self.spec.metrics.push(name.into());
        self
    }

    /// The spec.
    pub fn build(self) -> BenchmarkSpec {
        self.spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_fills_every_table_of_the_spec() {
        let spec = BenchmarkSpec::builder("micro", "demo")
            .component(BenchmarkComponent::Cpu)
            .duration(2.0)
            .param(
                Param::int("size_mb", 64, 1..)
                    .help("array size")
                    .unit("MiB"),
            )
            .param(Param::choice("precision", "f32", &["f32", "bf16"]))
            .param(Param::input_path("input", ""))
            .param(Param::text("tag", "x"))
            .param(Param::float("ratio", 0.5, 0.0..=1.0))
            .metric("gflops")
            .build();
        assert_eq!(spec.id, BenchmarkId::new("micro", "demo"));
        assert_eq!(spec.params["size_mb"], ParamValue::Int(64));
        assert_eq!(spec.param_help["size_mb"], "array size");
        assert_eq!(spec.param_units["size_mb"], "MiB");
        assert_eq!(spec.param_ranges["size_mb"], ParamRange::at_least(1.0));
        assert_eq!(spec.param_ranges["ratio"], ParamRange::between(0.0, 1.0));
        assert_eq!(spec.param_choices["precision"], ["f32", "bf16"]);
        assert_eq!(spec.param_kinds["input"], ParamKind::InputPath);
        assert!(!spec.param_kinds.contains_key("tag"));
        assert!(!spec.param_help.contains_key("tag"), "no empty help");
        assert_eq!(spec.metrics, ["gflops"]);
        assert_eq!(spec.default_duration_seconds, Some(2.0));
    }

    #[test]
    fn a_later_declaration_replaces_an_earlier_one() {
        let spec = BenchmarkSpec::builder("s", "b")
            .param(Param::choice("mode", "a", &["a", "b"]).help("old"))
            .param(Param::output_path("mode", "out"))
            .build();
        assert!(!spec.param_choices.contains_key("mode"));
        assert!(!spec.param_help.contains_key("mode"));
        assert_eq!(spec.param_kinds["mode"], ParamKind::OutputPath);
        assert_eq!(spec.params["mode"], ParamValue::from("out"));
    }

    #[test]
    fn numbers_flags_and_choices_sweep_other_text_does_not() {
        assert!(Param::int("n", 1, 1..).sweeps());
        assert!(Param::flag("f", true).sweeps());
        assert!(Param::choice("c", "a", &["a"]).sweeps());
        assert!(!Param::text("t", "a,b").sweeps());
        assert!(!Param::command("cmd", "true").sweeps());
    }

    #[test]
    fn the_check_runs_and_is_not_data() {
        fn even(p: &Params) -> Result<(), String> {
            match p.get("n") {
                Some(ParamValue::Int(n)) if n % 2 == 1 => Err("parameter 'n' must be even".into()),
                _ => Ok(()),
            }
        }
        let spec = BenchmarkSpec::builder("s", "b")
            .param(Param::int("n", 2, 0..))
            .check(even)
            .build();
        let check = spec.check.clone().expect("declared");
        assert!(check.run(&spec.params).is_ok());
        let odd: Params = [("n".to_string(), ParamValue::Int(3))].into();
        assert_eq!(check.run(&odd).unwrap_err(), "parameter 'n' must be even");
        let json = serde_json::to_string(&spec).unwrap();
        assert!(!json.contains("check"), "{json}");
        let back: BenchmarkSpec = serde_json::from_str(&json).unwrap();
        assert!(back.check.is_none());
    }
}
