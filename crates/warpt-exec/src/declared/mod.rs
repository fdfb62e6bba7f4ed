//! Benchmarks declared in configuration: `[[benchmarks]]` tables in
//! `warpt.toml` or in a `warpt-bench.toml` beside the code, run as the
//! `user` suite under the whole harness.
//!
//! - [`file`]: the tables as written, checked into [`Declared`] benchmarks;
//! - [`parse`]: a run's output into numbers (a regex's named groups, JSON
//!   pointers) and its output against a reference file (`tolerances`);
//! - [`bench`]: one declared benchmark as a warpt `Benchmark` (skip
//!   conditions, set-up, runs measured as `warpt exec` measures them,
//!   validation, tear-down);
//! - [`suite`]: the `user` suite that offers them.
//!
//! ```toml
//! [[benchmarks]]
//! name = "sort"
//! setup = "seq {n} | shuf > input.txt"
//! command = "sort -n input.txt | tail -1"
//! teardown = "rm -f input.txt"
//! params = { n = [10000, 100000] }          # a matrix: one run of the benchmark per value
//! parse = { regex = '^(?P<largest>\d+)$' }
//! metrics.largest = { unit = "count", direction = "higher" }
//! skip_if = { missing = "shuf" }
//! ```

pub mod bench;
pub mod file;
pub mod parse;
pub mod suite;

use std::path::{Path, PathBuf};

pub use file::{Declared, MetricDecl, Parser, Skip, Stream, Tolerances};
pub use suite::{SUITE, UserSuite};

/// The file of declarations beside the code.
pub const BENCH_FILE: &str = "warpt-bench.toml";

/// A declaration that cannot be used, naming the file, the benchmark and the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct DeclareError(String);

impl DeclareError {
    pub(crate) fn new(file: &Path, benchmark: &str, message: String) -> Self {
        DeclareError(format!("{}: {benchmark}: {message}", file.display()))
    }

    fn of_file(file: &Path, message: String) -> Self {
        DeclareError(format!("{}: {message}", file.display()))
    }
}

/// Where a file of declarations came from, which decides what else it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// warpt's configuration file: its other keys are the configuration's.
    Config,
    /// A `warpt-bench.toml`: nothing but `[[benchmarks]]`.
    BenchFile,
}

/// The benchmarks declared in `path`.
pub fn load_file(path: &Path, origin: Origin) -> Result<Vec<Declared>, DeclareError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DeclareError::of_file(path, format!("cannot read it: {e}")))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| DeclareError::of_file(path, e.message().trim().into()))?;
    if origin == Origin::BenchFile
        && let Some(k) = table.keys().find(|k| *k != "benchmarks")
    {
        return Err(DeclareError::of_file(
            path,
            format!("unknown key '{k}': a {BENCH_FILE} holds only [[benchmarks]] tables"),
        ));
    }
    let Some(list) = table.get("benchmarks") else {
        return Ok(Vec::new());
    };
    let list = list.as_array().ok_or_else(|| {
        DeclareError::of_file(
            path,
            "key 'benchmarks' must be an array of tables ([[benchmarks]])".into(),
        )
    })?;
    let absolute = std::path::absolute(path)
        .map_err(|e| DeclareError::of_file(path, format!("cannot resolve its path: {e}")))?;
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            if !t.is_table() {
                return Err(DeclareError::of_file(
                    path,
                    format!("benchmarks[{i}] is not a table"),
                ));
            }
            Declared::from_toml(&absolute, i, t)
        })
        .collect()
}

/// The benchmarks declared in every file of `files`, names unique across them.
pub fn load(files: &[(PathBuf, Origin)]) -> Result<Vec<Declared>, DeclareError> {
    let mut all: Vec<Declared> = Vec::new();
    for (path, origin) in files {
        for d in load_file(path, *origin)? {
            if let Some(first) = all.iter().find(|x| x.name == d.name) {
                return Err(DeclareError::new(
                    &d.file,
                    &format!("benchmark '{}'", d.name),
                    format!(
                        "key 'name': '{}' is also declared in {}",
                        d.name,
                        first.file.display()
                    ),
                ));
            }
            all.push(d);
        }
    }
    Ok(all)
}

/// The one benchmark `name` of `file`, for a worker that has only the
/// parameter naming the file.
pub fn find(file: &Path, name: &str) -> Result<Declared, DeclareError> {
    let origin = if file.file_name().is_some_and(|f| f == BENCH_FILE) {
        Origin::BenchFile
    } else {
        Origin::Config
    };
    load_file(file, origin)?
        .into_iter()
        .find(|d| d.name == name)
        .ok_or_else(|| {
            DeclareError::of_file(file, format!("declares no benchmark called '{name}'"))
        })
}
