//! The `user` suite: the benchmarks declared in the files warpt read.
//!
//! Each spec carries the declaring file as its `file` parameter, so a
//! worker process (which reads no configuration) finds the declaration
//! again by that path and the benchmark's name.

use std::collections::BTreeMap;
use std::path::Path;

use warpt_harness::{Benchmark, Suite};
use warpt_model::{BenchmarkKind, BenchmarkSpec, Param, ParamRange, ParamValue, Params};

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
    let mut metrics: Vec<String> = MEASURED.iter().map(|m| m.to_string()).collect();
    metrics.extend(d.metrics.iter().map(|m| m.name.clone()));
    let mut b = BenchmarkSpec::builder(SUITE, &d.name)
        .kind(BenchmarkKind::Application)
        .description(
            d.description
                .clone()
                .unwrap_or_else(|| format!("`{}`, declared in {}", d.command, d.file.display())),
        )
        .duration(d.duration.unwrap_or(DEFAULT_DURATION_S))
        .external_tool(d.shell.clone());
    for c in &d.components {
        b = b.component(*c);
    }
    for (k, values) in &d.params {
        if let Some(p) = declared_param(k, values) {
            b = b.param(p);
        }
    }
    // The declaring file runs its own commands.
    b = b
        .param(
            Param::command(FILE_PARAM, &d.file.display().to_string())
                .help("the file that declares this benchmark"),
        )
        .check({
            let (name, file) = (d.name.clone(), d.file.clone());
            move |p| check_file(&name, &file, p)
        });
    for m in metrics {
        b = b.metric(m);
    }
    b.build()
}

/// A parameter the user declared with its values: a text value pasted
/// into the commands as it is is a command, unless it has choices (then
/// it must be one of them); a number is checked as one, with no bounds
/// but the user's.
fn declared_param(name: &str, values: &[ParamValue]) -> Option<Param> {
    let listed: Vec<String> = values.iter().map(ToString::to_string).collect();
    let help = format!(
        "{{{name}}} in the commands; declared: {}",
        listed.join(", ")
    );
    let p = match values.first()? {
        ParamValue::Str(first) if values.len() > 1 => {
            let choices: Vec<&str> = listed.iter().map(String::as_str).collect();
            Param::choice(name, first, &choices)
        }
        ParamValue::Str(first) => Param::command(name, first),
        ParamValue::Int(v) => Param::int(name, *v, ParamRange::default()),
        ParamValue::Float(v) => Param::float(name, *v, ParamRange::default()),
        ParamValue::Bool(v) => Param::flag(name, *v),
    };
    Some(p.help(help))
}

/// The file a run names (the declaring one, or another) declares the
/// benchmark `name`.
fn check_file(name: &str, declaring: &Path, params: &Params) -> Result<(), String> {
    match params.get(FILE_PARAM).and_then(ParamValue::as_str) {
        Some(f) if Path::new(f) == declaring => Ok(()),
        Some(f) => super::find(Path::new(f), name)
            .map(|_| ())
            .map_err(|e| format!("parameter 'file': {e}")),
        None => Err("parameter 'file' must name the declaring file".into()),
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
