//! The formats each kind of input can be written in: the one list the
//! command line's `--format` values and the server's come from.

use crate::format::{Compared, Exec, ExportError, Format, Input, Machines, Report, Run, Telemetry};
use crate::formats::{
    Bmf, Csv, Gab, Html, HyperfineCsv, HyperfineJson, HyperfineMarkdown, Json, Junit, Markdown,
    Pdf, Prometheus, Table,
};

/// The formats of one kind of input, in the order `--help` lists them.
pub struct Registry<K: Input> {
    kind: &'static str,
    formats: &'static [&'static dyn Format<K>],
}

impl<K: Input> Registry<K> {
    /// The kind of input, as errors name it (`run`, `report`, ...).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Every format, in order.
    pub fn formats(&self) -> &'static [&'static dyn Format<K>] {
        self.formats
    }

    /// The format called `name`; an error naming the known ones otherwise.
    pub fn get(&self, name: &str) -> Result<&'static dyn Format<K>, ExportError> {
        self.formats
            .iter()
            .copied()
            .find(|f| f.name() == name)
            .ok_or_else(|| ExportError::Unknown {
                kind: self.kind,
                name: name.to_string(),
                known: self.names().join(", "),
            })
    }

    /// The formats' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.formats.iter().map(|f| f.name()).collect()
    }
}

/// One run: `results export --format`.
pub static RUN: Registry<Run> = Registry {
    kind: "run",
    formats: &[&Bmf, &Gab, &Junit, &Csv, &Json],
};

/// Runs compared with the first: `report --format`.
pub static REPORT: Registry<Report> = Registry {
    kind: "report",
    formats: &[&Markdown, &Html, &Json, &Pdf],
};

/// Machines across stored runs: `report --by machine --format`.
pub static MACHINES: Registry<Machines> = Registry {
    kind: "report",
    formats: &[&Markdown, &Html, &Json, &Pdf],
};

/// A comparison: `benchmark compare --format`.
pub static COMPARISON: Registry<Compared> = Registry {
    kind: "comparison",
    formats: &[&Table, &Markdown, &Json],
};

/// `warpt exec`'s results in hyperfine's shapes: `--export-json`,
/// `--export-markdown`, `--export-csv`.
pub static EXEC: Registry<Exec> = Registry {
    kind: "exec",
    formats: &[&HyperfineJson, &HyperfineMarkdown, &HyperfineCsv],
};

/// A telemetry sample: `monitor --prometheus`.
pub static TELEMETRY: Registry<Telemetry> = Registry {
    kind: "telemetry",
    formats: &[&Prometheus],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn unique<K: Input>(r: &Registry<K>) {
        let mut names = r.names();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "{} formats named twice", r.kind());
    }

    #[test]
    fn each_kind_names_each_format_once_and_refuses_others_by_name() {
        unique(&RUN);
        unique(&REPORT);
        unique(&MACHINES);
        unique(&COMPARISON);
        unique(&EXEC);
        unique(&TELEMETRY);
        assert_eq!(REPORT.names(), ["md", "html", "json", "pdf"]);
        assert!(REPORT.get("pdf").is_ok_and(|f| f.needs_file()));
        let e = RUN
            .get("xlsx")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            e,
            "unknown run format 'xlsx'; choose one of bmf, gab, junit, csv, json"
        );
    }
}
