//! The `pytest` suite: tests measured by warpt's pytest plugin
//! (`pytest --warpt`, docs/python.md).
//!
//! The plugin starts one `benchmark run` of this suite for a pytest
//! session, naming each test that uses the `benchmark` fixture by its node
//! id, and gives the Unix socket it listens on in [`SOCKET_ENV`]: not a
//! parameter, so a test's results from two sessions have the same
//! parameters and share a noise history. Each benchmark
//! connects there when its turn comes and drives the test's function
//! through the benchmark protocol (docs/protocol.md), so the stopping
//! rule, statistics, store and export are the harness's own. The suite has
//! no fixed list: any node id is a benchmark of it.

use std::path::PathBuf;

use warpt_harness::{Benchmark, BenchmarkError, Suite};
use warpt_model::{BenchmarkComponent, BenchmarkKind, BenchmarkSpec, ClockProbe, Params};

use crate::external::{ExternalBenchmark, FileRun};

/// The suite's name, in the store and in ids.
pub const SUITE: &str = "pytest";

/// Measurement seconds per test when nothing says otherwise:
/// pytest-benchmark's `--benchmark-max-time` default. The stopping rule
/// may stop sooner, or go on to three times that for a noisy test.
pub const DEFAULT_DURATION_S: f64 = 1.0;

/// The environment variable naming the Unix socket the plugin listens on.
/// Only the process that starts warpt sets it (a server's remote caller
/// cannot), and warpt drives the test's code through it.
pub const SOCKET_ENV: &str = "WARPT_PYTEST_SOCKET";

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
        // A test's code runs in pytest's process, and a session has many
        // short tests: the clock alone, briefly, before and after each.
        .clock_probe(ClockProbe::Brief)
        .check(|_: &Params| socket().map(drop))
        .metric("latency_ms")
        .build()
}

/// The plugin's socket, from [`SOCKET_ENV`]: given, and it exists.
fn socket() -> Result<PathBuf, String> {
    socket_from(std::env::var_os(SOCKET_ENV))
}

fn socket_from(value: Option<std::ffi::OsString>) -> Result<PathBuf, String> {
    match value {
        Some(s) if !s.is_empty() => {
            let path = PathBuf::from(s);
            if path.exists() {
                Ok(path)
            } else {
                Err(format!("{SOCKET_ENV}: {} does not exist", path.display()))
            }
        }
        _ => Err(format!(
            "the pytest suite is run by the pytest plugin (pytest --warpt), which sets \
             {SOCKET_ENV} to the socket it listens on"
        )),
    }
}

/// How the test `nodeid` is driven: through the plugin's socket.
pub fn file_run(nodeid: &str) -> Result<FileRun, BenchmarkError> {
    Ok(FileRun {
        file: PathBuf::from(nodeid),
        connect: Some(socket().map_err(BenchmarkError::Failed)?),
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
        assert!(spec("t.py::t").params.is_empty());
        assert!(socket_from(None).unwrap_err().contains("pytest --warpt"));
        assert!(
            socket_from(Some("".into()))
                .unwrap_err()
                .contains(SOCKET_ENV)
        );
        assert!(
            socket_from(Some("/no/such/socket".into()))
                .unwrap_err()
                .contains("does not exist")
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        std::fs::write(&path, "").unwrap();
        assert_eq!(socket_from(Some(path.clone().into())).unwrap(), path);
    }
}
