//! HTML: one self-contained page with SVG charts, no network needed to view it.

use warpt_report::fleet::MachineReport;

use crate::format::{Document, ExportError, Format, Machines, Report};

/// One self-contained HTML file.
pub struct Html;

impl Format<Report> for Html {
    fn render(&self, input: &warpt_report::report::Input) -> Result<Document, ExportError> {
        Ok(Document::Text(warpt_report::report::html(input)))
    }
}

impl Format<Machines> for Html {
    fn render(&self, input: &MachineReport) -> Result<Document, ExportError> {
        Ok(Document::Text(warpt_report::fleet::render::html(input)))
    }
}
