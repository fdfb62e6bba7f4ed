//! Every format warpt writes a result in, behind one trait.
//!
//! A format is a type implementing [`Format`] for each kind of [`Input`] it
//! can render (a run, a report, a comparison, `warpt exec`'s results, a
//! telemetry sample), in one file under [`formats`]. Each kind of input has
//! one [`Registry`] ([`RUN`], [`REPORT`], [`MACHINES`], [`COMPARISON`],
//! [`EXEC`], [`TELEMETRY`]); the command line's `--format` values and the
//! server's come from there. Adding a format is one file and a line in a
//! registry.
//!
//! What a format renders is a [`Document`]; an [`ExportTarget`] writes it
//! without ever leaving half a file.

/// The trait, the kinds of input, what a format renders and the errors.
mod format;
/// One file per format.
pub mod formats;
/// The formats each kind of input can be written in.
mod registry;
/// A destination checked before any work, written whole or not at all.
mod target;

pub use format::{
    Compared, Document, Exec, ExportError, Format, Input, Machines, Report, Run, RunExport,
    Telemetry,
};
pub use registry::{COMPARISON, EXEC, Entry, MACHINES, REPORT, RUN, Registry, TELEMETRY};
pub use target::ExportTarget;
