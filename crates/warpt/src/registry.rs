//! The suites this build offers: adding a suite is one line here.

use std::path::{Path, PathBuf};

use anyhow::Result;
use warpt_exec::declared::{self, BENCH_FILE, Origin, UserSuite};
use warpt_harness::Registry;
use warpt_model::{BenchmarkComponent, BenchmarkId};

use crate::UsageError;

/// Every suite compiled into this binary; the fault-injection suite only
/// when `WARPT_SELFTEST=1` (workers inherit the variable, so they agree).
/// Its `user` suite declares nothing but creates any declared benchmark by
/// name (the benchmark reads its declaration from its `file` parameter):
/// what a worker and the runner need.
pub fn registry() -> Registry {
    with_user(UserSuite::default())
}

/// [`registry`] with the benchmarks declared in `config_file` (warpt's
/// configuration file, if one was found) and in `./warpt-bench.toml`, for
/// the commands that plan, list or describe them. A declaration that does
/// not check out is a usage error naming the file, benchmark and key.
pub fn registry_declaring(config_file: Option<&Path>) -> Result<Registry> {
    let mut files: Vec<(PathBuf, Origin)> = Vec::new();
    if let Some(c) = config_file {
        files.push((c.to_path_buf(), Origin::Config));
    }
    let local = PathBuf::from(BENCH_FILE);
    if local.is_file() {
        files.push((local, Origin::BenchFile));
    }
    let declared = declared::load(&files).map_err(|e| UsageError(e.to_string()))?;
    Ok(with_user(UserSuite::new(declared)))
}

/// [`registry_declaring`] with the configuration file found without `--config`.
pub fn registry_found() -> Result<Registry> {
    registry_declaring(warpt_run::config::default_file()?.as_deref())
}

/// The suites of this binary, as the run layer asks for them.
pub struct Builtin;

impl warpt_run::run::Suites for Builtin {
    fn declaring(&self, config_file: Option<&Path>) -> Result<Registry> {
        registry_declaring(config_file)
    }

    fn plain(&self) -> Registry {
        registry()
    }
}

fn with_user(user: UserSuite) -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(warpt_micro::MICRO));
    r.extend(Box::new(warpt_gpu::GPU_BENCHMARKS));
    r.extend(Box::new(warpt_linpack::gemm::GEMM_BENCHMARKS));
    r.register(Box::new(warpt_linpack::LINPACK));
    r.extend(Box::new(warpt_gpu::GPU_LINPACK));
    r.register(Box::new(warpt_pepbench::PEPBENCH));
    r.register(Box::new(warpt_userbench::suite::HarnessSuite));
    r.register(Box::new(warpt_userbench::pytest::PytestSuite));
    r.register(Box::new(warpt_mlperf::MLPERF));
    r.register(Box::new(warpt_biobench::BIOBENCH));
    r.register(Box::new(user));
    if std::env::var("WARPT_SELFTEST").is_ok_and(|v| v == "1") {
        r.register(Box::new(warpt_selftest::SelftestSuite));
    }
    // What a run chosen by component (`--component`, or nothing named)
    // runs for each.
    use BenchmarkComponent::*;
    for (component, suite, name) in [
        (Cpu, "micro", "cpu_flops"),
        (Gpu, "micro", "gpu_flops"),
        (Ram, "micro", "mem_bandwidth"),
        (Ram, "micro", "mem_latency"),
        (Storage, "micro", "disk_io"),
        (Network, "micro", "net_bandwidth"),
        (Network, "micro", "net_latency"),
        (System, "pepbench", "end_to_end_infer"),
    ] {
        r.stands_for(component, BenchmarkId::new(suite, name));
    }
    r
}

#[cfg(test)]
mod tests {
    use warpt_model::{BenchmarkSpec, ParamValue};

    /// Every benchmark built in (the user suite declares none here).
    fn specs() -> Vec<BenchmarkSpec> {
        let specs = super::registry().all_specs();
        assert!(specs.len() > 20, "{} specs", specs.len());
        specs
    }

    /// Every text parameter of every benchmark is one of: a kind (a
    /// command, an input or output path, a secret's variable, an address:
    /// what `warpt serve` guards), a fixed set of choices, or a plain value
    /// this list names after checking it runs nothing and opens no file. A
    /// new parameter that names a file or a command fails here until its
    /// declaration says so.
    #[test]
    fn every_text_parameter_is_a_declared_kind_a_choice_or_a_reviewed_value() {
        const PLAIN: &[(&str, &str)] = &[
            (
                "ops",
                "disk_io's list of tests, checked against a fixed set",
            ),
            (
                "model",
                "llm_serve's model name, sent to the server as text (elsewhere a preset choice)",
            ),
            ("n", "gemm's comma-separated matrix orders"),
            (
                "kwargs",
                "JSON handed to the user's own (command-kind) file",
            ),
            (
                "defaults",
                "JSON of bench.yaml's run settings (timing, cold_cache, ...) for the user's own file",
            ),
        ];
        let mut kinds_seen = 0;
        for spec in specs() {
            kinds_seen += spec.param_kinds.len();
            for (k, v) in &spec.params {
                if !matches!(v, ParamValue::Str(_))
                    || spec.param_kinds.contains_key(k)
                    || spec.param_choices.contains_key(k)
                {
                    continue;
                }
                assert!(
                    PLAIN.iter().any(|(name, _)| name == k),
                    "{}: text parameter '{k}' has no kind and no choices; if it names a file or \
                     a command, declare it so (Param::input_path, Param::command, ...)",
                    spec.id
                );
            }
        }
        assert!(kinds_seen >= 20, "only {kinds_seen} kinds declared");
    }

    /// A number without bounds fails in a worker instead of at plan time:
    /// every numeric parameter declares its range, and every default meets
    /// its own declaration.
    #[test]
    fn every_number_has_a_range_and_every_default_meets_its_declaration() {
        for spec in specs() {
            for (k, v) in &spec.params {
                let number = match v {
                    ParamValue::Int(i) => Some(*i as f64),
                    ParamValue::Float(f) => Some(*f),
                    _ => None,
                };
                if let Some(x) = number {
                    let range = spec.param_ranges.get(k).unwrap_or_else(|| {
                        panic!("{}: numeric parameter '{k}' declares no range", spec.id)
                    });
                    assert!(
                        range.contains(x),
                        "{}: '{k}' = {x} is outside {range}",
                        spec.id
                    );
                }
                if let (Some(choices), ParamValue::Str(s)) = (spec.param_choices.get(k), v) {
                    assert!(
                        choices.contains(s),
                        "{}: '{k}' = '{s}' is not one of {choices:?}",
                        spec.id
                    );
                }
            }
            for k in spec
                .param_help
                .keys()
                .chain(spec.param_ranges.keys())
                .chain(spec.param_choices.keys())
                .chain(spec.param_kinds.keys())
                .chain(spec.param_units.keys())
            {
                assert!(
                    spec.params.contains_key(k),
                    "{}: '{k}' is described but not a parameter",
                    spec.id
                );
            }
        }
    }
}
