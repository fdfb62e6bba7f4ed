//! The `pytest` suite: tests measured by warpt's pytest plugin
//! (`pytest --warpt`, docs/python.md).
//!
//! The plugin starts one `benchmark run` of this suite for a pytest
//! session, naming each test that uses the `benchmark` fixture by its node
//! id and giving the Unix socket it listens on (`socket`). Each benchmark
//! connects there when its turn comes and drives the test's function
//! through the benchmark protocol (docs/protocol.md), so the stopping
//! rule, statistics, store and export are the harness's own. The suite has
//! no fixed list: any node id is a benchmark of it.

use std::path::PathBuf;

use warpt_harness::{Benchmark, BenchmarkError, RunContext, Suite};
use warpt_model::{BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params};

use crate::external::{ExternalBenchmark, FileRun};

/// The suite's name, in the store and in ids.
pub const SUITE: &str = "pytest";

/// Measurement seconds per test when nothing says otherwise:
/// pytest-benchmark's `--benchmark-max-time` default. The stopping rule
/// may stop sooner, or go on to three times that for a noisy test.
pub const DEFAULT_DURATION_S: f64 = 1.0;

/// The pytest plugin's tests.
#[derive(Debug)]
pub struct PytestSuite;

/// The spec of the test `nodeid`.
pub fn spec(nodeid: &str) -> BenchmarkSpec {
    BenchmarkSpec::builder(SUITE, nodeid)
        .component(BenchmarkComponent::Cpu)
        .kind(BenchmarkKind::Application)
        .description(
            "A pytest test's benchmark() call, measured by warpt through the pytest plugin \
             (pytest --warpt; docs/python.md).",
        )
        .duration(DEFAULT_DURATION_S)
        .external_tool("pytest")
        .params(vec![Param::command("socket", "").help(
            "the Unix socket the pytest plugin listens on (the plugin sets it); warpt \
                 drives the test's code through it, so it is a command",
        )])
        .check(check_socket)
        .metric("latency_ms")
        .build()
}

/// The socket is given and exists.
fn check_socket(params: &Params) -> Result<(), String> {
    match params.get("socket").and_then(ParamValue::as_str) {
        Some("") | None => Err(
            "parameter 'socket': the pytest suite is run by the pytest plugin \
             (pytest --warpt), which gives it"
                .into(),
        ),
        Some(s) if !std::path::Path::new(s).exists() => {
            Err(format!("parameter 'socket': {s} does not exist"))
        }
        Some(_) => Ok(()),
    }
}

/// How the test `nodeid` is driven in a run with `ctx`'s parameters.
pub fn file_run(ctx: &RunContext, nodeid: &str) -> Result<FileRun, BenchmarkError> {
    Ok(FileRun {
        file: PathBuf::from(nodeid),
        connect: Some(PathBuf::from(ctx.str_param("socket")?)),
        ..FileRun::default()
    })
}

impl Suite for PytestSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "pytest tests using the benchmark fixture, measured by `pytest --warpt` (docs/python.md)"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        // No fixed list: the plugin names the tests it collected.
        Vec::new()
    }

    fn spec_of(&self, name: &str) -> Option<BenchmarkSpec> {
        // A node id names a test in a file: `path::test`.
        name.contains("::").then(|| spec(name))
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        Some(Box::new(ExternalBenchmark::pytest(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_node_id_is_a_benchmark_and_nothing_else_is() {
        let s = PytestSuite
            .spec_of("tests/test_x.py::test_sum[10]")
            .expect("a node id");
        assert_eq!(s.id.suite, SUITE);
        assert_eq!(s.id.name, "tests/test_x.py::test_sum[10]");
        assert!(PytestSuite.spec_of("gemm").is_none());
        assert!(PytestSuite.specs().is_empty());
    }

    #[test]
    fn the_socket_must_be_given_and_exist() {
        let mut p = spec("t.py::t").params;
        assert!(check_socket(&p).unwrap_err().contains("pytest --warpt"));
        p.insert("socket".into(), ParamValue::from("/no/such/socket"));
        assert!(check_socket(&p).unwrap_err().contains("does not exist"));
    }
}
