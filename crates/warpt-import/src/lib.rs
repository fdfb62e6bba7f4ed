//! What other benchmarking tools wrote, as warpt suite runs: one file (or
//! criterion's directory) in, one [`BenchmarkSuiteRun`] out, raw samples
//! kept wherever the file has them so `compare` can test them.
//!
//! - [`detect`]: which format a file is, from its content;
//! - [`hyperfine`]: `hyperfine --export-json` (recorded as the `exec`
//!   suite, so it compares with `warpt exec` runs);
//! - [`criterion`]: the files under `target/criterion/**/new/`;
//! - [`gbench`]: Google Benchmark's `--benchmark_format=json`, repetitions
//!   and aggregates;
//! - [`pytest_benchmark`]: `pytest --benchmark-json`;
//! - [`common`]: metrics, results and run ids shared by all of them.

pub mod common;
pub mod criterion;
pub mod detect;
pub mod gbench;
pub mod hyperfine;
pub mod pytest_benchmark;

use std::path::Path;

pub use detect::detect;
use warpt_model::BenchmarkSuiteRun;

/// A format warpt imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// hyperfine's `--export-json`.
    Hyperfine,
    /// criterion's `target/criterion` directory.
    Criterion,
    /// Google Benchmark's JSON.
    Gbench,
    /// pytest-benchmark's JSON.
    PytestBenchmark,
}

impl Format {
    /// Every format, in the order error messages list them.
    pub const ALL: [Format; 4] = [
        Format::Hyperfine,
        Format::Criterion,
        Format::Gbench,
        Format::PytestBenchmark,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Hyperfine => "hyperfine",
            Format::Criterion => "criterion",
            Format::Gbench => "gbench",
            Format::PytestBenchmark => "pytest-benchmark",
        }
    }

    /// What the user points warpt at, for error messages.
    pub fn what(self) -> &'static str {
        match self {
            Format::Hyperfine => "hyperfine --export-json FILE",
            Format::Criterion => "criterion's target/criterion directory",
            Format::Gbench => "Google Benchmark --benchmark_format=json",
            Format::PytestBenchmark => "pytest --benchmark-json FILE",
        }
    }

    /// The format called `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// The formats and what each is, one line, for error messages.
pub fn accepted() -> String {
    Format::ALL
        .iter()
        .map(|f| format!("{} ({})", f.name(), f.what()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file or directory cannot be read.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// It is none of the formats warpt imports.
    #[error(
        "{path}: not a format warpt imports; accepted: warpt's own JSON export, {}",
        accepted()
    )]
    Unrecognised {
        /// The path.
        path: String,
    },
    /// It looked like `format` but is not a well-formed one.
    #[error("{path}: not a valid {format} file: {message}")]
    Malformed {
        /// The path.
        path: String,
        /// The format it was read as.
        format: &'static str,
        /// What is wrong.
        message: String,
    },
    /// It looked like warpt's own export but does not load as one.
    #[error("{path}: not a warpt export: {message}")]
    NotAnExport {
        /// The path.
        path: String,
        /// Why.
        message: String,
    },
    /// `--format` names no format.
    #[error("--format {0}: accepted: warpt, {list}", list = accepted())]
    UnknownFormat(String),
}

/// Reads any input `results import` takes: warpt's own export, or a tool's
/// file in the format named `forced` (`warpt` or a [`Format`] name) or
/// recognised from its content. Returns the format's name and the run.
pub fn read_any(
    path: &Path,
    forced: Option<&str>,
) -> Result<(&'static str, BenchmarkSuiteRun), ImportError> {
    let (format, run) = read_unchecked(path, forced)?;
    // Figures that are not finite numbers (times near 1e308 whose mean
    // overflows, or a file's own `inf`) would be stored as no number at
    // all: refused here, naming the file and the field.
    if let Some(at) = run.non_finite() {
        return Err(ImportError::Malformed {
            path: path.display().to_string(),
            format,
            message: format!("{at}: not a finite number"),
        });
    }
    Ok((format, run))
}

fn read_unchecked(
    path: &Path,
    forced: Option<&str>,
) -> Result<(&'static str, BenchmarkSuiteRun), ImportError> {
    let shown = path.display().to_string();
    let own = |text: &str| {
        warpt_model::load_suite_run(text).map_err(|e| ImportError::NotAnExport {
            path: shown.clone(),
            message: e.to_string(),
        })
    };
    let tool = |format| import(path, format).map(|(f, run)| (f.name(), run));
    match forced {
        Some("warpt") => Ok(("warpt", own(&common::read(path)?)?)),
        Some(name) => tool(Some(
            Format::from_name(name).ok_or_else(|| ImportError::UnknownFormat(name.into()))?,
        )),
        None => {
            if !path.is_dir() {
                let text = common::read(path)?;
                let doc: Option<serde_json::Value> = serde_json::from_str(&text).ok();
                if doc
                    .as_ref()
                    .is_some_and(|d| d.get("suite").is_some() && d.get("benchmarks").is_some())
                {
                    return Ok(("warpt", own(&text)?));
                }
            }
            tool(None)
        }
    }
}

/// Reads `path` as `format` (detected from the content when `None`).
pub fn import(
    path: &Path,
    format: Option<Format>,
) -> Result<(Format, BenchmarkSuiteRun), ImportError> {
    let shown = path.display().to_string();
    let format = match format {
        Some(f) => f,
        None => detect(path)?.ok_or(ImportError::Unrecognised {
            path: shown.clone(),
        })?,
    };
    let malformed = |message: String| ImportError::Malformed {
        path: shown.clone(),
        format: format.name(),
        message,
    };
    let run = match format {
        Format::Criterion => criterion::import(path).map_err(malformed)?,
        json_format => {
            let text = common::read(path)?;
            let doc: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| malformed(format!("not JSON: {e}")))?;
            let at = common::file_time(path);
            match json_format {
                Format::Hyperfine => hyperfine::import(&doc, &text, at),
                Format::Gbench => gbench::import(&doc, &text, at),
                _ => pytest_benchmark::import(&doc, &text, at),
            }
            .map_err(malformed)?
        }
    };
    Ok((format, run))
}
