//! JSON: warpt's own export of a run (what `results import` and `benchmark
//! compare` read), and the JSON form of reports and comparisons.

use warpt_report::Comparison;
use warpt_report::fleet::MachineReport;

use crate::format::{Compared, Document, ExportError, Format, Machines, Report, Run, RunExport};

/// JSON, pretty-printed.
pub struct Json;

impl Format<Run> for Json {
    fn render(&self, input: &RunExport<'_>) -> Result<Document, ExportError> {
        Document::json(input.run)
    }
}

impl Format<Report> for Json {
    fn render(&self, input: &warpt_report::report::Input) -> Result<Document, ExportError> {
        Document::json(&warpt_report::report::json(input))
    }
}

impl Format<Machines> for Json {
    fn render(&self, input: &MachineReport) -> Result<Document, ExportError> {
        Document::json(input)
    }
}

impl Format<Compared> for Json {
    fn render(&self, input: &Comparison) -> Result<Document, ExportError> {
        Ok(Document::Text(warpt_report::render::json(input)? + "\n"))
    }
}
