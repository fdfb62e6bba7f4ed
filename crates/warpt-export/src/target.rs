//! Writing a document without ever leaving half a file.
//!
//! The destination is checked before any work (a temporary file is created
//! beside it, which proves the directory is writable), the document is
//! written into that temporary file, and it is renamed over the target.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::format::{Document, ExportError};

/// A destination that has been checked and reserved.
pub struct ExportTarget {
    path: PathBuf,
    temp: NamedTempFile,
}

/// `path` with `tag` inserted before its extension (`out.json` -> `out-bigger.json`).
fn tagged(path: &Path, tag: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{tag}"),
    };
    path.with_file_name(name)
}

impl ExportTarget {
    /// Checks that `path` can be written and reserves a temporary file beside it.
    pub fn prepare(path: &Path) -> Result<ExportTarget, ExportError> {
        if path.is_dir() {
            return Err(ExportError::Destination(format!(
                "export path '{}' is a directory; give a file name, e.g. {}/results.json",
                path.display(),
                path.display()
            )));
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(ExportError::Destination(format!(
                "cannot write export '{}': directory '{}' does not exist",
                path.display(),
                dir.display()
            )));
        }
        let temp = tempfile::Builder::new()
            .prefix(".warpt-export-")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(|e| {
                ExportError::Destination(format!(
                    "cannot write export '{}': {e}; choose a writable location",
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

    /// Writes `doc` and moves it into place; a [`Document::Parts`] goes to
    /// one file per part beside the path, its tag before the extension.
    /// The paths written.
    pub fn write(self, doc: &Document) -> Result<Vec<PathBuf>, ExportError> {
        match doc {
            Document::Text(t) => Ok(vec![self.write_bytes(t.as_bytes())?]),
            Document::Binary(b) => Ok(vec![self.write_bytes(b)?]),
            Document::Parts { parts, .. } => {
                // Every part's place is checked before the first is written.
                let targets = parts
                    .iter()
                    .map(|(tag, _)| ExportTarget::prepare(&tagged(&self.path, tag)))
                    .collect::<Result<Vec<_>, _>>()?;
                targets
                    .into_iter()
                    .zip(parts)
                    .map(|(t, (_, text))| t.write_bytes(text.as_bytes()))
                    .collect()
            }
        }
    }

    /// Writes any document pretty-printed as JSON and moves it into place.
    pub fn write_json(self, doc: &impl serde::Serialize) -> Result<PathBuf, ExportError> {
        let json = serde_json::to_string_pretty(doc)?;
        self.write_bytes((json + "\n").as_bytes())
    }

    /// Writes `text` as it is and moves it into place.
    pub fn write_text(self, text: &str) -> Result<PathBuf, ExportError> {
        self.write_bytes(text.as_bytes())
    }

    fn write_bytes(mut self, bytes: &[u8]) -> Result<PathBuf, ExportError> {
        let temp_path = self.temp.path().display().to_string();
        self.temp
            .write_all(bytes)
            .and_then(|()| self.temp.as_file().sync_all())
            .map_err(|source| ExportError::Io {
                what: format!("writing {temp_path}"),
                source,
            })?;
        let path = self.path.clone();
        self.temp.persist(&path).map_err(|e| ExportError::Io {
            what: format!("moving the export into place at {}", path.display()),
            source: e.error,
        })?;
        // Exports are meant to be shared: 0644 rather than the temp file's 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = fs::set_permissions(&path, fs::Permissions::from_mode(0o644));
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_land_beside_the_path_and_bad_places_are_refused_before_writing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("gab.json");
        let doc = Document::Parts {
            whole: "{}".into(),
            parts: vec![("bigger", "[1]".into()), ("smaller", "[2]".into())],
        };
        let written = ExportTarget::prepare(&out)
            .and_then(|t| t.write(&doc))
            .expect("written");
        assert_eq!(
            written,
            [
                dir.path().join("gab-bigger.json"),
                dir.path().join("gab-smaller.json")
            ]
        );
        assert_eq!(fs::read_to_string(&written[1]).ok().as_deref(), Some("[2]"));
        assert!(!out.exists(), "the reserved name itself holds nothing");

        let e = ExportTarget::prepare(dir.path())
            .err()
            .expect("a directory");
        assert!(
            e.is_usage() && e.to_string().contains("is a directory"),
            "{e}"
        );
        let e = ExportTarget::prepare(&dir.path().join("no/such.json"))
            .err()
            .expect("no folder");
        assert!(e.to_string().contains("does not exist"), "{e}");
        let left: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    }
}
