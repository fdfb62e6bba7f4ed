//! Markdown: reports and comparisons for a pull request, a wiki or a terminal.

use warpt_report::Comparison;
use warpt_report::fleet::MachineReport;

use crate::format::{Compared, Document, ExportError, Format, Machines, Report};

/// Markdown.
pub struct Markdown;

impl Format<Report> for Markdown {
    fn render(&self, input: &warpt_report::report::Input) -> Result<Document, ExportError> {
        Ok(Document::Text(warpt_report::report::markdown(input)))
    }
}

impl Format<Machines> for Markdown {
    fn render(&self, input: &MachineReport) -> Result<Document, ExportError> {
        Ok(Document::Text(warpt_report::fleet::render::markdown(input)))
    }
}

impl Format<Compared> for Markdown {
    fn render(&self, input: &Comparison) -> Result<Document, ExportError> {
        Ok(Document::Text(warpt_report::render::markdown(input)))
    }
}
