//! PDF: the HTML report printed by headless Chromium. warpt's reports are
//! HTML with inline SVG, and a browser is the renderer that prints them as
//! they look.

use std::path::{Path, PathBuf};
use std::process::Command;

use warpt_report::fleet::MachineReport;

use crate::format::{Document, ExportError, Format, Machines, Report};

/// The HTML report printed to PDF.
pub struct Pdf;

impl Format<Report> for Pdf {
    fn render(&self, input: &warpt_report::report::Input) -> Result<Document, ExportError> {
        print(&warpt_report::report::html(input))
    }
}

impl Format<Machines> for Pdf {
    fn render(&self, input: &MachineReport) -> Result<Document, ExportError> {
        print(&warpt_report::fleet::render::html(input))
    }
}

/// The browsers tried, in order, when `WARPT_CHROMIUM` is not set.
const BROWSERS: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The Chromium to print with: `WARPT_CHROMIUM`, else the first of
/// [`BROWSERS`] on PATH; an error naming the package otherwise.
fn chromium() -> Result<PathBuf, ExportError> {
    if let Some(p) = std::env::var_os("WARPT_CHROMIUM").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    BROWSERS.iter().find_map(|b| on_path(b)).ok_or_else(|| {
        ExportError::Unavailable(
            "--format pdf prints the HTML report with headless Chromium, and none was found \
             (chromium, chromium-browser, google-chrome): install Debian's `chromium` package \
             (apt-get install chromium), or set WARPT_CHROMIUM to a Chromium or Chrome binary"
                .into(),
        )
    })
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> ExportError {
    move |source| ExportError::Io { what, source }
}

/// `html` printed to PDF, in a scratch directory of its own: the bytes.
fn print(html: &str) -> Result<Document, ExportError> {
    let browser = chromium()?;
    let dir = tempfile::tempdir().map_err(io("a temporary directory for the browser".into()))?;
    let page = dir.path().join("report.html");
    std::fs::write(&page, html).map_err(io(format!("writing {}", page.display())))?;
    let out = dir.path().join("report.pdf");
    let mut print_to = std::ffi::OsString::from("--print-to-pdf=");
    print_to.push(&out);
    let mut profile = std::ffi::OsString::from("--user-data-dir=");
    profile.push(dir.path().join("profile"));
    let result = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-pdf-header-footer",
        ])
        .arg(profile)
        .arg(print_to)
        .arg(format!("file://{}", page.display()))
        .output()
        .map_err(io(format!("starting {}", browser.display())))?;
    let bytes = read_printed(&out);
    match bytes {
        Some(b) if result.status.success() => Ok(Document::Binary(b)),
        _ => Err(ExportError::Tool(format!(
            "{} did not print the report ({}): {}",
            browser.display(),
            result.status,
            String::from_utf8_lossy(&result.stderr).trim()
        ))),
    }
}

/// The printed file's bytes, if it is there and not empty.
fn read_printed(out: &Path) -> Option<Vec<u8>> {
    std::fs::read(out).ok().filter(|b| !b.is_empty())
}
