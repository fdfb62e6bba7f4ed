//! Writing a suite run to a JSON file without ever leaving half a file.
//!
//! The destination is checked before any benchmark runs (a temporary file is
//! created beside it, which proves the directory is writable), the results
//! are written into that temporary file, and it is renamed over the target.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tempfile::NamedTempFile;
use warpt_model::BenchmarkSuiteRun;

use crate::UsageError;

/// An export destination that has been checked and reserved.
pub struct ExportTarget {
    path: PathBuf,
    temp: NamedTempFile,
}

/// The default export file name for a plan label, e.g.
/// `warpt_benchmark_micro_20261122_013000_a1b2c3.json`.
pub fn default_file_name(label: &str) -> String {
    let now = jiff::Timestamp::now();
    format!(
        "warpt_benchmark_{}_{}_{}.json",
        sanitize(label),
        now.strftime("%Y%m%d_%H%M%S"),
        warpt_harness::random_suffix()
    )
}

fn sanitize(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl ExportTarget {
    /// Checks that `path` can be written and reserves a temporary file beside it.
    pub fn prepare(path: &Path) -> Result<ExportTarget> {
        if path.is_dir() {
            return Err(UsageError(format!(
                "export path '{}' is a directory; give a file name, e.g. {}/results.json",
                path.display(),
                path.display()
            ))
            .into());
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(UsageError(format!(
                "cannot write export '{}': directory '{}' does not exist",
                path.display(),
                dir.display()
            ))
            .into());
        }
        let temp = tempfile::Builder::new()
            .prefix(".warpt-export-")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(|e| {
                UsageError(format!(
                    "cannot write export '{}': {e}; choose a writable location with --export-file",
                    path.display()
                ))
            })?;
        Ok(ExportTarget {
            path: path.to_path_buf(),
            temp,
        })
    }

    /// Where the export will land.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `run` pretty-printed and moves it into place.
    pub fn write(self, run: &BenchmarkSuiteRun) -> Result<PathBuf> {
        self.write_json(run)
    }

    /// Writes any document pretty-printed and moves it into place.
    pub fn write_json(self, doc: &impl serde::Serialize) -> Result<PathBuf> {
        let json = serde_json::to_string_pretty(doc).context("serialising the document")?;
        self.write_text(&(json + "\n"))
    }

    /// Writes `text` as it is and moves it into place.
    pub fn write_text(mut self, text: &str) -> Result<PathBuf> {
        self.temp
            .write_all(text.as_bytes())
            .and_then(|_| self.temp.as_file().sync_all())
            .with_context(|| format!("writing {}", self.temp.path().display()))?;
        let path = self.path.clone();
        self.temp
            .persist(&path)
            .with_context(|| format!("moving the export into place at {}", path.display()))?;
        // Exports are meant to be shared: 0644 rather than the temp file's 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = fs::set_permissions(&path, fs::Permissions::from_mode(0o644));
        }
        Ok(path)
    }
}

/// Says what the monitor cost (its own CPU time, `overhead`, a share of
/// one core) and writes its `timeline` to `target` (`--monitor-output`),
/// if one was given.
pub fn finish_timeline(
    timeline: &[warpt_model::TelemetrySample],
    overhead: f64,
    target: Option<ExportTarget>,
) -> Result<()> {
    eprintln!(
        "monitor: {} samples; its own CPU time was {:.3}% of one core",
        timeline.len(),
        overhead * 100.0
    );
    if let Some(target) = target {
        let shown = target.path().display().to_string();
        target.write_json(&timeline)?;
        eprintln!("monitor timeline written to {shown}");
    }
    Ok(())
}
