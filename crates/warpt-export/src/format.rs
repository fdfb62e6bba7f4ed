//! The [`Format`] trait, the kinds of [`Input`] a format renders, the
//! [`Document`] it renders to and the [`ExportError`]s on the way.

use std::io::Write;
use std::path::{Path, PathBuf};

use warpt_exec::JobResult;
use warpt_model::{BenchmarkSuiteRun, TelemetrySample};
use warpt_report::Comparison;
use warpt_report::fleet::MachineReport;

/// A kind of input, named by a marker type: what its formats are given.
///
/// The marker carries no data; [`Input::Data`] is what a format of this kind
/// reads, borrowed for the call.
pub trait Input: 'static {
    /// What a format of this kind renders.
    type Data<'a>: ?Sized;
}

/// One run, and how it compared with a baseline when one was given
/// (`results export`, `benchmark run --export`, `ci pr --junit`).
pub enum Run {}

/// What [`Run`]'s formats read.
#[derive(Clone, Copy)]
pub struct RunExport<'a> {
    /// The run written.
    pub run: &'a BenchmarkSuiteRun,
    /// Its comparison with a baseline (JUnit fails the benchmarks it found
    /// regressed); the other formats ignore it.
    pub baseline: Option<&'a Comparison>,
}

impl Input for Run {
    type Data<'a> = RunExport<'a>;
}

/// Runs compared with the first, with an optional monitor timeline (`warpt report`).
pub enum Report {}

impl Input for Report {
    type Data<'a> = warpt_report::report::Input;
}

/// Machines compared across stored runs (`warpt report --by machine`).
pub enum Machines {}

impl Input for Machines {
    type Data<'a> = MachineReport;
}

/// Two runs' comparison (`benchmark compare`).
pub enum Compared {}

impl Input for Compared {
    type Data<'a> = Comparison;
}

/// `warpt exec`'s results, in hyperfine's shapes (`--export-json`, ...).
pub enum Exec {}

impl Input for Exec {
    type Data<'a> = [JobResult];
}

/// One telemetry sample (`warpt monitor --prometheus`).
pub enum Telemetry {}

impl Input for Telemetry {
    type Data<'a> = TelemetrySample;
}

/// An output format for inputs of kind `K`: what it renders. Its name, its
/// line of help and whether it needs a file are its [`crate::Entry`] in the
/// kind's registry.
pub trait Format<K: Input>: Sync {
    /// Renders `input`.
    fn render(&self, input: &K::Data<'_>) -> Result<Document, ExportError>;
}

/// What a format rendered.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    /// One text document.
    Text(String),
    /// Several files from one input (github-action-benchmark's two lists): on
    /// stdout `whole`, to a path each part beside it, its tag before the
    /// extension (`out.json` to `out-bigger.json`).
    Parts {
        /// The parts in one document, for stdout.
        whole: String,
        /// Each part with its tag.
        parts: Vec<(&'static str, String)>,
    },
    /// A binary file (PDF): only to a path.
    Binary(Vec<u8>),
}

impl Document {
    /// The document as text: one text document, or the parts in one; none
    /// for a binary one.
    pub fn into_text(self) -> Option<String> {
        match self {
            Document::Text(t) | Document::Parts { whole: t, .. } => Some(t),
            Document::Binary(_) => None,
        }
    }

    /// Pretty-printed JSON with a final line break.
    pub fn json(value: &impl serde::Serialize) -> Result<Document, ExportError> {
        Ok(Document::Text(serde_json::to_string_pretty(value)? + "\n"))
    }

    /// Writes the document to `path` (through an [`crate::ExportTarget`]) or,
    /// without one, to stdout; the paths written.
    pub fn write(&self, path: Option<&Path>) -> Result<Vec<PathBuf>, ExportError> {
        match path {
            Some(p) => crate::ExportTarget::prepare(p)?.write(self),
            None => {
                let text: &[u8] = match self {
                    Document::Text(t) | Document::Parts { whole: t, .. } => t.as_bytes(),
                    Document::Binary(_) => {
                        return Err(ExportError::NeedsFile(
                            "a binary document goes to a file: give -o PATH".into(),
                        ));
                    }
                };
                let mut out = std::io::stdout().lock();
                out.write_all(text)
                    .and_then(|()| out.flush())
                    .map_err(|source| ExportError::Io {
                        what: "writing to stdout".into(),
                        source,
                    })?;
                Ok(Vec::new())
            }
        }
    }
}

/// Why a document was not rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The destination cannot be written (a directory, a missing or
    /// read-only folder): the user's to fix.
    #[error("{0}")]
    Destination(String),
    /// A binary format without a file to go to: the user's to fix.
    #[error("{0}")]
    NeedsFile(String),
    /// A name no format of this kind has: the user's to fix.
    #[error("unknown {kind} format '{name}'; choose one of {known}")]
    Unknown {
        /// The kind of input (`report`, `run`, ...).
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// The names there are.
        known: String,
    },
    /// A tool the format needs is not installed (Chromium for PDF): the
    /// user's to fix, and the message says how.
    #[error("{0}")]
    Unavailable(String),
    /// A tool the format runs failed.
    #[error("{0}")]
    Tool(String),
    /// Reading or writing a file.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Serialising JSON.
    #[error("serialising the document: {0}")]
    Json(#[from] serde_json::Error),
}

impl ExportError {
    /// Whether the user can fix it (exit status 2, HTTP 400).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ExportError::Destination(_)
                | ExportError::NeedsFile(_)
                | ExportError::Unknown { .. }
                | ExportError::Unavailable(_)
        )
    }
}
