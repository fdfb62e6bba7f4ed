//! From what the user asked for (`--suite`, `--benchmark`, `--component`,
//! `--param`) to a plan: benchmarks with effective parameters, in order.

use std::collections::BTreeMap;

use warpt_model::{BenchmarkComponent, BenchmarkId, BenchmarkSpec, ParamError, ParamValue, Params};

use crate::Registry;

/// One parameter a selection sets: its name exactly as the plan looks it
/// up, and its value as text (parsed by the parameter's declared type).
///
/// Front ends build it from their own syntax and hand it over typed, never
/// as `NAME=VALUE` text to be split again: the command line splits at the
/// first `=` and trims the name (the shell's spacing), the server takes a
/// JSON key as it is. The plan then refuses a name that is not exactly a
/// declared parameter: ` command`, `command=`, a tab or another case is an
/// error naming it, never a name tidied into one that skips a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamArg {
    /// The parameter's name.
    pub name: String,
    /// Its value as text.
    pub value: String,
}

impl ParamArg {
    /// A parameter set to a value.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        ParamArg {
            name: name.into(),
            value: value.into(),
        }
    }
}

impl std::str::FromStr for ParamArg {
    type Err = PlanError;

    /// `NAME=VALUE` as a command line spells it: split at the first `=`,
    /// the name trimmed of the spacing around it.
    fn from_str(text: &str) -> Result<Self, PlanError> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| PlanError::MalformedParam(text.to_string()))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(PlanError::MalformedParam(text.to_string()));
        }
        Ok(ParamArg::new(name, value))
    }
}

/// Why `name` cannot be a parameter's name as given (the plan compares
/// names exactly): `None` when it can.
pub fn param_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.trim() != name {
        Some("has spaces around it")
    } else if name.contains('=') {
        Some("contains '='")
    } else if name.chars().any(char::is_control) {
        Some("contains a control character")
    } else {
        None
    }
}

/// What a front end allows a selection to set: asked with a selected
/// benchmark's spec, a parameter's exact name and its value as given;
/// `Err` says why not.
pub type Gate<'a> = &'a dyn Fn(&BenchmarkSpec, &str, &str) -> Result<(), String>;

/// The user's choice of what to run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// `--suite`.
    pub suite: Option<String>,
    /// `--benchmark`, repeatable.
    pub benchmarks: Vec<String>,
    /// `--component`, repeatable and comma-separated.
    pub components: Vec<BenchmarkComponent>,
    /// `--param key=value`: a name that is not exactly a parameter of a
    /// selected benchmark is an error.
    pub params: Vec<ParamArg>,
    /// Overrides from configuration (file, environment): applied where a
    /// selected benchmark knows the key, ignored elsewhere; `params` win.
    pub soft_params: BTreeMap<String, String>,
}

/// A benchmark in the plan, with the parameters it will run with.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedBenchmark {
    /// Its spec.
    pub spec: BenchmarkSpec,
    /// Defaults with the applicable `--param` overrides applied.
    pub params: Params,
    /// The swept parameters and this entry's value of each (empty when
    /// nothing is swept); they become tags of every metric of its result.
    pub sweep: BTreeMap<String, String>,
}

/// A component default that this build cannot run.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable {
    /// The component asked for.
    pub component: BenchmarkComponent,
    /// The benchmark that would stand for it.
    pub id: BenchmarkId,
    /// Why it is not in the plan.
    pub reason: String,
}

/// What a run will do.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The suite asked for, or `components` when chosen by component.
    pub suite: String,
    /// The components asked for.
    pub components: Vec<BenchmarkComponent>,
    /// The `SUITE_OR_COMPONENT` part of export file names.
    pub label: String,
    /// Benchmarks to run, in order, without duplicates.
    pub entries: Vec<PlannedBenchmark>,
    /// Component defaults left out, and why.
    pub unavailable: Vec<Unavailable>,
    /// `--param` overrides as given, by key.
    pub overrides: BTreeMap<String, String>,
}

/// A selection that cannot become a plan. Each message is one line naming
/// the input at fault and the valid choices.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// `--suite` names no registered suite.
    #[error("unknown suite '{name}'; available suites: {valid}")]
    UnknownSuite {
        /// What was given.
        name: String,
        /// The registered suites.
        valid: String,
    },
    /// `--benchmark` names nothing in the suite (or in any suite).
    #[error("unknown benchmark '{name}' in {scope}; available: {valid}")]
    UnknownBenchmark {
        /// What was given.
        name: String,
        /// `suite 'micro'` or `any suite`.
        scope: String,
        /// Benchmarks that exist there.
        valid: String,
    },
    /// `--benchmark` without `--suite` matches several suites.
    #[error("benchmark '{name}' exists in several suites ({suites}); choose one with --suite")]
    AmbiguousBenchmark {
        /// What was given.
        name: String,
        /// Suites that have it.
        suites: String,
    },
    /// `--param` without `=` or with an empty key.
    #[error("malformed --param '{0}': expected key=value, e.g. --param array_mb=256")]
    MalformedParam(String),
    /// A parameter name that cannot be one as given (spaces around it, `=`,
    /// a control character).
    #[error(
        "parameter name {name:?} {why}; parameters are named exactly as `benchmark describe` lists them"
    )]
    BadParamName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// `--param` key that no selected benchmark accepts.
    #[error("unknown parameter '{key}' for the selected benchmarks; they accept: {valid}")]
    UnknownParam {
        /// The key given.
        key: String,
        /// Keys the selected benchmarks accept.
        valid: String,
    },
    /// `--param` value of the wrong type.
    #[error("{0}")]
    BadParamValue(#[from] ParamError),
    /// A parameter the front end does not let this request set (a remote
    /// caller naming a command or a path the operator did not allow).
    #[error("{message}")]
    Refused {
        /// The parameter.
        parameter: String,
        /// Why, and what would allow it.
        message: String,
    },
    /// A benchmark refused its parameters before running.
    #[error("{id}: {message}")]
    InvalidParams {
        /// The benchmark.
        id: BenchmarkId,
        /// The parameter at fault, when one declaration was broken (a
        /// range, the choices); none for a rule across parameters.
        parameter: Option<String>,
        /// What is wrong and what would fix it.
        message: String,
    },
    /// The selection is valid but leaves nothing this build can run.
    #[error("nothing to run: {0}")]
    NothingToRun(String),
}

impl Plan {
    /// Resolves `selection` against `registry`.
    ///
    /// - `--suite` alone runs the suite's benchmarks; with `--benchmark`,
    ///   just those; with `--component`, those exercising a listed component.
    /// - `--benchmark` without `--suite` finds the name in any suite.
    /// - `--component` alone runs each component's default benchmarks.
    /// - Nothing at all runs every component's defaults that this build has.
    pub fn resolve(registry: &Registry, selection: &Selection) -> Result<Plan, PlanError> {
        Plan::resolve_gated(registry, selection, &|_, _, _| Ok(()))
    }

    /// [`Plan::resolve`], asking `gate` of every parameter the selection
    /// sets, for each selected benchmark that declares it (with its exact
    /// name and its value as given), before any benchmark checks its
    /// values (a check may read the file a value names). A gate's refusal
    /// is [`PlanError::Refused`]; the configuration's parameters are not
    /// asked (the operator's own).
    pub fn resolve_gated(
        registry: &Registry,
        selection: &Selection,
        gate: Gate<'_>,
    ) -> Result<Plan, PlanError> {
        let components = dedup(selection.components.clone());
        let mut unavailable = Vec::new();
        let mut specs: Vec<BenchmarkSpec> = Vec::new();
        let suite_label;
        let label;

        if let Some(name) = &selection.suite {
            let suite = registry
                .suite(name)
                .ok_or_else(|| PlanError::UnknownSuite {
                    name: name.clone(),
                    valid: registry.suite_names(),
                })?;
            let all = suite.specs();
            if selection.benchmarks.is_empty() {
                specs = all.clone();
            } else {
                for b in &selection.benchmarks {
                    let spec = suite
                        .spec_of(b)
                        .ok_or_else(|| PlanError::UnknownBenchmark {
                            name: b.clone(),
                            scope: format!("suite '{name}'"),
                            valid: names(&all),
                        })?;
                    specs.push(spec);
                }
            }
            if !components.is_empty() {
                let before = specs.clone();
                specs.retain(|s| s.components.iter().any(|c| components.contains(c)));
                if specs.is_empty() {
                    let offered = dedup(before.iter().flat_map(|s| s.components.clone()).collect());
                    return Err(PlanError::NothingToRun(format!(
                        "suite '{name}' has no selected benchmark for component {}; it covers: {}",
                        join(&components),
                        join(&offered)
                    )));
                }
            }
            suite_label = name.clone();
            label = name.clone();
        } else if !selection.benchmarks.is_empty() {
            let all = registry.all_specs();
            for b in &selection.benchmarks {
                // `suite/name` (as the error below lists them) or a bare name.
                let found: Vec<&BenchmarkSpec> = all
                    .iter()
                    .filter(|s| s.id.name == *b || s.id.to_string() == *b)
                    .collect();
                match found.as_slice() {
                    [] => {
                        return Err(PlanError::UnknownBenchmark {
                            name: b.clone(),
                            scope: "any suite".into(),
                            valid: all
                                .iter()
                                .map(|s| s.id.to_string())
                                .collect::<Vec<_>>()
                                .join(", "),
                        });
                    }
                    [one] => specs.push((*one).clone()),
                    many => {
                        return Err(PlanError::AmbiguousBenchmark {
                            name: b.clone(),
                            suites: many
                                .iter()
                                .map(|s| s.id.suite.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                        });
                    }
                }
            }
            if !components.is_empty() {
                specs.retain(|s| s.components.iter().any(|c| components.contains(c)));
                if specs.is_empty() {
                    return Err(PlanError::NothingToRun(format!(
                        "none of the named benchmarks exercises component {}",
                        join(&components)
                    )));
                }
            }
            suite_label = match dedup(specs.iter().map(|s| s.id.suite.clone()).collect()).as_slice()
            {
                [one] => one.clone(),
                _ => "mixed".into(),
            };
            label = suite_label.clone();
        } else {
            let wanted = if components.is_empty() {
                BenchmarkComponent::ALL.to_vec()
            } else {
                components.clone()
            };
            let mut undeclared = Vec::new();
            for c in &wanted {
                let ids = registry.component_defaults(*c);
                if ids.is_empty() {
                    undeclared.push(format!("{c}: no benchmark stands for it in this build"));
                }
                for id in ids {
                    match registry.spec(&id) {
                        Some(spec) => specs.push(spec),
                        None => unavailable.push(Unavailable {
                            component: *c,
                            reason: match registry.suite(&id.suite) {
                                Some(_) => format!("{id} is not implemented in this build yet"),
                                None => format!("suite '{}' is not in this build yet", id.suite),
                            },
                            id,
                        }),
                    }
                }
            }
            if specs.is_empty() {
                let why = unavailable
                    .iter()
                    .map(|u| format!("{}: {}", u.component, u.reason))
                    .chain(undeclared)
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(PlanError::NothingToRun(why));
            }
            suite_label = "components".into();
            label = if components.is_empty() {
                "all".to_string()
            } else {
                components
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join("-")
            };
        }

        let specs = dedup_by_id(specs);
        let strict = parse_overrides(&selection.params)?;
        check_known(&specs, &strict)?;
        for spec in &specs {
            for (name, value) in &strict {
                if spec.params.contains_key(name) {
                    gate(spec, name, value).map_err(|message| PlanError::Refused {
                        parameter: name.clone(),
                        message,
                    })?;
                }
            }
        }
        let mut overrides: BTreeMap<String, String> = selection
            .soft_params
            .iter()
            .filter(|(k, _)| specs.iter().any(|s| s.params.contains_key(*k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        overrides.extend(strict);
        gpu_device(&components, &specs, &mut overrides);
        let entries = apply_params(registry, &specs, &overrides)?;
        check_entries(registry, &entries)?;
        Ok(Plan {
            suite: suite_label,
            components,
            label,
            entries,
            unavailable,
            overrides,
        })
    }
}

impl Plan {
    /// The plan of a previous run: the same benchmarks in the same order,
    /// each with exactly the parameters it ran with (and the sweep tags
    /// it had). Every benchmark must still exist and accept those
    /// parameters with the same types.
    pub fn replay(
        registry: &Registry,
        suite: &str,
        components: &[BenchmarkComponent],
        label: &str,
        entries: &[(BenchmarkId, Params, BTreeMap<String, String>)],
    ) -> Result<Plan, PlanError> {
        let mut planned = Vec::new();
        for (id, params, sweep) in entries {
            let spec = registry
                .spec(id)
                .ok_or_else(|| PlanError::UnknownBenchmark {
                    name: id.to_string(),
                    scope: "this build".into(),
                    valid: registry
                        .all_specs()
                        .iter()
                        .map(|s| s.id.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
            for (key, value) in params {
                let default = spec
                    .params
                    .get(key)
                    .ok_or_else(|| PlanError::UnknownParam {
                        key: key.clone(),
                        valid: spec.params.keys().cloned().collect::<Vec<_>>().join(", "),
                    })?;
                default.parse_like(key, &value.to_string())?;
            }
            let mut effective = spec.params.clone();
            effective.extend(params.clone());
            planned.push(PlannedBenchmark {
                spec,
                params: effective,
                sweep: sweep.clone(),
            });
        }
        if planned.is_empty() {
            return Err(PlanError::NothingToRun(
                "the export holds no benchmark".into(),
            ));
        }
        Ok(Plan {
            suite: suite.to_string(),
            components: components.to_vec(),
            label: label.to_string(),
            entries: planned,
            unavailable: Vec::new(),
            overrides: BTreeMap::new(),
        })
    }
}

fn check_entries(registry: &Registry, entries: &[PlannedBenchmark]) -> Result<(), PlanError> {
    for e in entries {
        check_ranges(e)?;
        // A spec read back from an export carries no check: the
        // registry's declaration of the same benchmark does.
        let check = e
            .spec
            .check
            .clone()
            .or_else(|| registry.spec(&e.spec.id)?.check);
        if let Some(check) = check {
            check
                .run(&e.params)
                .map_err(|message| PlanError::InvalidParams {
                    id: e.spec.id.clone(),
                    parameter: None,
                    message,
                })?;
        }
    }
    Ok(())
}

/// Every numeric parameter within the range its spec declares, and every
/// real number finite (`inf` and `NaN` parse as numbers; no benchmark
/// takes them, and a time made of one panics).
fn check_ranges(e: &PlannedBenchmark) -> Result<(), PlanError> {
    for (key, value) in &e.params {
        if let ParamValue::Float(v) = value
            && !v.is_finite()
        {
            return Err(PlanError::InvalidParams {
                id: e.spec.id.clone(),
                parameter: Some(key.clone()),
                message: format!("parameter '{key}': {v} is not a finite number"),
            });
        }
    }
    for (key, range) in &e.spec.param_ranges {
        let value = match e.params.get(key) {
            Some(ParamValue::Int(v)) => *v as f64,
            Some(ParamValue::Float(v)) => *v,
            _ => continue,
        };
        if !range.contains(value) {
            let bound = match (range.min, range.max) {
                (Some(lo), Some(hi)) => format!("from {lo} to {hi}"),
                (Some(lo), None) => format!("at least {lo}"),
                (None, Some(hi)) => format!("at most {hi}"),
                (None, None) => "finite".to_string(),
            };
            return Err(PlanError::InvalidParams {
                id: e.spec.id.clone(),
                parameter: Some(key.clone()),
                message: format!("parameter '{key}' must be {bound}, not {value}"),
            });
        }
    }
    Ok(())
}

/// The parameters by name (a later one wins), each name checked to be
/// one as given: the lookup that follows is exact.
fn parse_overrides(raw: &[ParamArg]) -> Result<BTreeMap<String, String>, PlanError> {
    let mut out = BTreeMap::new();
    for p in raw {
        if let Some(why) = param_name_problem(&p.name) {
            return Err(PlanError::BadParamName {
                name: p.name.clone(),
                why,
            });
        }
        out.insert(p.name.clone(), p.value.clone());
    }
    Ok(out)
}

fn check_known(
    specs: &[BenchmarkSpec],
    overrides: &BTreeMap<String, String>,
) -> Result<(), PlanError> {
    for key in overrides.keys() {
        if !specs.iter().any(|s| s.params.contains_key(key)) {
            let valid = dedup(
                specs
                    .iter()
                    .flat_map(|s| s.params.keys().cloned())
                    .collect(),
            );
            return Err(PlanError::UnknownParam {
                key: key.clone(),
                valid: if valid.is_empty() {
                    "(no parameters)".into()
                } else {
                    valid.join(", ")
                },
            });
        }
    }
    Ok(())
}

/// Whether `text` sweeps parameter `key` of `spec`: a comma list for a
/// number, a boolean or a string with declared choices (any other string
/// may hold commas of its own).
pub fn is_sweep(spec: &BenchmarkSpec, key: &str, text: &str) -> bool {
    let sweepable = match spec.params.get(key) {
        Some(ParamValue::Str(_)) => spec.param_choices.contains_key(key),
        Some(_) => true,
        None => false,
    };
    sweepable && text.contains(',')
}

/// A string value outside the parameter's declared choices, as a plan error.
fn check_choice(spec: &BenchmarkSpec, key: &str, value: &ParamValue) -> Result<(), PlanError> {
    match (spec.param_choices.get(key), value) {
        (Some(choices), ParamValue::Str(v)) if !choices.iter().any(|c| c == v) => {
            Err(PlanError::InvalidParams {
                id: spec.id.clone(),
                parameter: Some(key.to_string()),
                message: format!(
                    "parameter '{key}': '{v}' is not one of {}",
                    choices.join(", ")
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Every combination of the overrides for `spec`: a sweep (`batch=1,8,32`)
/// multiplies the entries, in the order the values were given.
fn expand(
    spec: &BenchmarkSpec,
    overrides: &BTreeMap<String, String>,
) -> Result<Vec<PlannedBenchmark>, PlanError> {
    let mut combos = vec![(spec.params.clone(), BTreeMap::new())];
    for (k, text) in overrides {
        let Some(default) = spec.params.get(k) else {
            continue;
        };
        let sweep = is_sweep(spec, k, text);
        let values: Vec<ParamValue> = if sweep {
            text.split(',')
                .map(|t| default.parse_like(k, t.trim()))
                .collect::<Result<_, _>>()?
        } else {
            vec![default.parse_like(k, text)?]
        };
        for v in &values {
            check_choice(spec, k, v)?;
        }
        combos = combos
            .into_iter()
            .flat_map(|(params, tags)| {
                values.iter().map(move |v| {
                    let mut params = params.clone();
                    params.insert(k.clone(), v.clone());
                    let mut tags = tags.clone();
                    if sweep {
                        tags.insert(k.clone(), v.to_string());
                    }
                    (params, tags)
                })
            })
            .collect();
    }
    Ok(combos
        .into_iter()
        .map(|(params, sweep)| PlannedBenchmark {
            spec: spec.clone(),
            params,
            sweep,
        })
        .collect())
}

/// Every spec's entries: its suite's default matrix, under the overrides.
fn apply_params(
    registry: &Registry,
    specs: &[BenchmarkSpec],
    overrides: &BTreeMap<String, String>,
) -> Result<Vec<PlannedBenchmark>, PlanError> {
    let mut out = Vec::new();
    for spec in specs {
        let mut own = registry
            .suite(&spec.id.suite)
            .map(|s| s.matrix(&spec.id.name))
            .unwrap_or_default();
        own.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        out.extend(expand(spec, &own)?);
    }
    Ok(out)
}

/// `--component gpu` (without `cpu`) runs the benchmarks that choose their
/// device by a `device` parameter on the GPU: `device=cuda` for those that
/// offer it, unless the user named a device.
fn gpu_device(
    components: &[BenchmarkComponent],
    specs: &[BenchmarkSpec],
    overrides: &mut BTreeMap<String, String>,
) {
    let gpu_only = components.contains(&BenchmarkComponent::Gpu)
        && !components.contains(&BenchmarkComponent::Cpu);
    let offered = specs.iter().any(|s| {
        s.param_choices
            .get("device")
            .is_some_and(|c| c.iter().any(|d| d == "cuda"))
    });
    if gpu_only && offered {
        overrides
            .entry("device".into())
            .or_insert_with(|| "cuda".into());
    }
}

fn names(specs: &[BenchmarkSpec]) -> String {
    specs
        .iter()
        .map(|s| s.id.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn join(components: &[BenchmarkComponent]) -> String {
    components
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn dedup<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn dedup_by_id(specs: Vec<BenchmarkSpec>) -> Vec<BenchmarkSpec> {
    let mut out: Vec<BenchmarkSpec> = Vec::with_capacity(specs.len());
    for s in specs {
        if !out.iter().any(|o| o.id == s.id) {
            out.push(s);
        }
    }
    out
}
