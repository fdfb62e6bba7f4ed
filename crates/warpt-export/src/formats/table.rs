//! Aligned columns for the terminal (benchstat-like).

use warpt_report::Comparison;

use crate::format::{Compared, Document, ExportError, Format};

/// Aligned columns.
pub struct Table;

impl Format<Compared> for Table {
    fn render(&self, input: &Comparison) -> Result<Document, ExportError> {
        Ok(Document::Text(warpt_report::render::text(input)))
    }
}
