//! The `user` suite: the benchmarks declared in the files warpt read.
//!
//! Each spec carries the declaring file as its `file` parameter, so a
//! worker process (which reads no configuration) finds the declaration
//! again by that path and the benchmark's name.

use std::collections::BTreeMap;

use warpt_harness::{Benchmark, Suite};
use warpt_model::{BenchmarkId, BenchmarkKind, BenchmarkSpec, ParamKind, ParamValue, Params};

use super::bench::DeclaredBenchmark;
use super::file::{Declared, FILE_PARAM, MEASURED};

/// The suite's name, in the store and in ids.
pub const SUITE: &str = "user";

/// Measurement seconds of a declared benchmark when nothing else says.
pub const DEFAULT_DURATION_S: f64 = 3.0;

/// The declared benchmarks (none in a worker: it creates them by name).
#[derive(Debug, Clone, Default)]
pub struct UserSuite {
    declared: Vec<Declared>,
}

impl UserSuite {
    /// The suite of `declared`.
    pub fn new(declared: Vec<Declared>) -> Self {
        UserSuite { declared }
    }

    fn get(&self, name: &str) -> Option<&Declared> {
        self.declared.iter().find(|d| d.name == name)
    }
}

fn spec_of(d: &Declared) -> BenchmarkSpec {
    let mut params: Params = d
        .params
        .iter()
        .filter_map(|(k, v)| v.first().map(|first| (k.clone(), first.clone())))
        .collect();
    params.insert(
        FILE_PARAM.into(),
        ParamValue::Str(d.file.display().to_string()),
    );
    let mut param_help: BTreeMap<String, String> = d
        .params
        .iter()
        .map(|(k, v)| {
            let listed: Vec<String> = v.iter().map(ToString::to_string).collect();
            (
                k.clone(),
                format!("{{{k}}} in the commands; declared: {}", listed.join(", ")),
            )
        })
        .collect();
    param_help.insert(
        FILE_PARAM.into(),
        "the file that declares this benchmark".into(),
    );
    let param_choices = d
        .params
        .iter()
        .filter(|(_, v)| v.len() > 1 && matches!(v[0], ParamValue::Str(_)))
        .map(|(k, v)| (k.clone(), v.iter().map(ToString::to_string).collect()))
        .collect();
    // The declaring file runs its own commands, and a free text value is
    // pasted into them as it is: both are commands (a number is checked
    // as one, and a text with declared choices must be one of them).
    let mut param_kinds: BTreeMap<String, ParamKind> = d
        .params
        .iter()
        .filter(|(_, v)| v.len() == 1 && matches!(v[0], ParamValue::Str(_)))
        .map(|(k, _)| (k.clone(), ParamKind::Command))
        .collect();
    param_kinds.insert(FILE_PARAM.into(), ParamKind::Command);
    let mut metrics: Vec<String> = MEASURED.iter().map(|m| m.to_string()).collect();
    metrics.extend(d.metrics.iter().map(|m| m.name.clone()));
    BenchmarkSpec {
        id: BenchmarkId::new(SUITE, &d.name),
        components: d.components.clone(),
        kind: BenchmarkKind::Application,
        description: Some(
            d.description
                .clone()
                .unwrap_or_else(|| format!("`{}`, declared in {}", d.command, d.file.display())),
        ),
        default_duration_seconds: Some(d.duration.unwrap_or(DEFAULT_DURATION_S)),
        external_tool: Some(d.shell.clone()),
        params,
        param_help,
        param_kinds,
        param_ranges: Default::default(),
        param_choices,
        timeouts: Default::default(),
        metrics,
    }
}

impl Suite for UserSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "Your commands, declared as [[benchmarks]] in warpt.toml or warpt-bench.toml (docs/exec.md)"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        self.declared.iter().map(spec_of).collect()
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        Some(Box::new(DeclaredBenchmark::new(name)))
    }

    fn check_params(&self, name: &str, params: &Params) -> Result<(), String> {
        let Some(d) = self.get(name) else {
            return Ok(());
        };
        match params.get(FILE_PARAM).and_then(ParamValue::as_str) {
            Some(f) if std::path::Path::new(f) == d.file => Ok(()),
            Some(f) => super::find(std::path::Path::new(f), name)
                .map(|_| ())
                .map_err(|e| format!("parameter 'file': {e}")),
            None => Err("parameter 'file' must name the declaring file".into()),
        }
    }

    fn matrix(&self, name: &str) -> BTreeMap<String, String> {
        self.get(name)
            .map(|d| {
                d.params
                    .iter()
                    .filter(|(_, v)| v.len() > 1)
                    .map(|(k, v)| {
                        let listed: Vec<String> = v.iter().map(ToString::to_string).collect();
                        (k.clone(), listed.join(","))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}
