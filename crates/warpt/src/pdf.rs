//! HTML printed to PDF by headless Chromium (`report --format pdf`):
//! warpt's reports are HTML with inline SVG, and a browser is the renderer
//! that prints them as they look.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use warpt_run::UsageError;

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
/// [`BROWSERS`] on PATH; a usage error naming the package otherwise.
pub fn chromium() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("WARPT_CHROMIUM").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    BROWSERS.iter().find_map(|b| on_path(b)).ok_or_else(|| {
        UsageError(
            "--format pdf prints the HTML report with headless Chromium, and none was found \
             (chromium, chromium-browser, google-chrome): install Debian's `chromium` package \
             (apt-get install chromium), or set WARPT_CHROMIUM to a Chromium or Chrome binary"
                .into(),
        )
        .into()
    })
}

/// Prints `html` to the PDF file `out`.
pub fn print(html: &str, out: &Path) -> Result<()> {
    let browser = chromium()?;
    let dir = tempfile::tempdir().context("a temporary directory for the browser")?;
    let page = dir.path().join("report.html");
    std::fs::write(&page, html).with_context(|| format!("writing {}", page.display()))?;
    let out_abs = if out.is_absolute() {
        out.to_path_buf()
    } else {
        std::env::current_dir()?.join(out)
    };
    let mut print_to = std::ffi::OsString::from("--print-to-pdf=");
    print_to.push(&out_abs);
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
        .with_context(|| format!("starting {}", browser.display()))?;
    let written = std::fs::metadata(&out_abs).is_ok_and(|m| m.len() > 0);
    if !result.status.success() || !written {
        anyhow::bail!(
            "{} did not print {} ({}): {}",
            browser.display(),
            out.display(),
            result.status,
            String::from_utf8_lossy(&result.stderr).trim()
        );
    }
    Ok(())
}
