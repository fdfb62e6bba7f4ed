//! The formats each kind of input can be written in: the one list the
//! command line's `--format` values and the server's come from.

use crate::format::{
    Compared, Document, Exec, ExportError, Format, Input, Machines, Report, Run, Telemetry,
};
use crate::formats::{
    Bmf, Csv, Gab, Html, HyperfineCsv, HyperfineJson, HyperfineMarkdown, Json, Junit, Markdown,
    Pdf, Prometheus, Table,
};

/// A format as a registry lists it: its name, its line of help, and whether
/// it writes a binary file (which cannot go to stdout).
pub struct Entry<K: Input> {
    name: &'static str,
    about: &'static str,
    needs_file: bool,
    format: &'static dyn Format<K>,
}

impl<K: Input> Entry<K> {
    /// A text format.
    const fn text(name: &'static str, about: &'static str, format: &'static dyn Format<K>) -> Self {
        Entry {
            name,
            about,
            needs_file: false,
            format,
        }
    }

    /// A binary format: only to a file.
    const fn binary(
        name: &'static str,
        about: &'static str,
        format: &'static dyn Format<K>,
    ) -> Self {
        Entry {
            needs_file: true,
            ..Entry::text(name, about, format)
        }
    }

    /// The name `--format` takes (for `warpt exec`, the `--export-NAME` flag's).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One line for `--help`: what the file holds.
    pub fn about(&self) -> &'static str {
        self.about
    }

    /// Whether the format writes a binary file, and so cannot go to stdout.
    pub fn needs_file(&self) -> bool {
        self.needs_file
    }

    /// Renders `input` in this format.
    pub fn render(&self, input: &K::Data<'_>) -> Result<Document, ExportError> {
        self.format.render(input)
    }
}

/// The formats of one kind of input, in the order `--help` lists them.
pub struct Registry<K: Input> {
    kind: &'static str,
    entries: &'static [Entry<K>],
}

impl<K: Input> Registry<K> {
    /// The kind of input, as errors name it (`run`, `report`, ...).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Every format, in order.
    pub fn formats(&self) -> &'static [Entry<K>] {
        self.entries
    }

    /// The format called `name`; an error naming the known ones otherwise.
    pub fn get(&self, name: &str) -> Result<&'static Entry<K>, ExportError> {
        self.entries
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| ExportError::Unknown {
                kind: self.kind,
                name: name.to_string(),
                known: self.names().join(", "),
            })
    }

    /// The formats' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|f| f.name).collect()
    }
}

/// One run: `results export --format`.
pub static RUN: Registry<Run> = Registry {
    kind: "run",
    entries: &[
        Entry::text("bmf", "Bencher Metric Format JSON", &Bmf),
        Entry::text(
            "gab",
            "github-action-benchmark customBiggerIsBetter / customSmallerIsBetter JSON \
             (-o PATH writes PATH-bigger and PATH-smaller)",
            &Gab,
        ),
        Entry::text(
            "junit",
            "JUnit XML: one testcase per benchmark, regressions against --baseline fail",
            &Junit,
        ),
        Entry::text("csv", "CSV: one row per metric", &Csv),
        Entry::text(
            "json",
            "warpt's own export: the suite run, as `benchmark run --export` writes it",
            &Json,
        ),
    ],
};

/// A report's formats, for any kind of report their four types render;
/// `json` says what the JSON holds.
const fn reports<K: Input>(json: &'static str) -> [Entry<K>; 4]
where
    Markdown: Format<K>,
    Html: Format<K>,
    Json: Format<K>,
    Pdf: Format<K>,
{
    [
        Entry::text("md", "Markdown", &Markdown),
        Entry::text(
            "html",
            "one self-contained HTML file with SVG charts",
            &Html,
        ),
        Entry::text("json", json, &Json),
        Entry::binary(
            "pdf",
            "PDF: the HTML report printed by headless Chromium (needs -o)",
            &Pdf,
        ),
    ]
}

const REPORTS: [Entry<Report>; 4] = reports("JSON: the runs and the comparisons with the first");
const MACHINE_REPORTS: [Entry<Machines>; 4] =
    reports("JSON: the machines, the best per workload, the scaling");

/// Runs compared with the first: `report --format`.
pub static REPORT: Registry<Report> = Registry {
    kind: "report",
    entries: &REPORTS,
};

/// Machines across stored runs: `report --by machine --format`.
pub static MACHINES: Registry<Machines> = Registry {
    kind: "report",
    entries: &MACHINE_REPORTS,
};

/// A comparison: `benchmark compare --format`.
pub static COMPARISON: Registry<Compared> = Registry {
    kind: "comparison",
    entries: &[
        Entry::text("table", "aligned columns (benchstat-like)", &Table),
        Entry::text(
            "md",
            "a Markdown table (for a pull request comment)",
            &Markdown,
        ),
        Entry::text("json", "the whole comparison as JSON", &Json),
    ],
};

/// `warpt exec`'s results in hyperfine's shapes: `--export-json`,
/// `--export-markdown`, `--export-csv`.
pub static EXEC: Registry<Exec> = Registry {
    kind: "exec",
    entries: &[
        Entry::text(
            "json",
            "hyperfine's JSON: command, mean, stddev, median, times, exit codes",
            &HyperfineJson,
        ),
        Entry::text("markdown", "hyperfine's Markdown table", &HyperfineMarkdown),
        Entry::text(
            "csv",
            "hyperfine's CSV: a row per command, a column per parameter",
            &HyperfineCsv,
        ),
    ],
};

/// A telemetry sample: `monitor --prometheus`.
pub static TELEMETRY: Registry<Telemetry> = Registry {
    kind: "telemetry",
    entries: &[Entry::text(
        "prometheus",
        "the Prometheus text exposition format",
        &Prometheus,
    )],
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
        assert!(!REPORT.get("html").is_ok_and(|f| f.needs_file()));
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
