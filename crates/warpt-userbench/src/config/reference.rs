//! bench.yaml's `reference`: what a kernel's answer must match.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a kernel's answer must match: bench.yaml's `reference`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    /// A Python function called with the kernel's arguments: in `file`
    /// (relative to the config's directory), or in the kernel's own file.
    Callable {
        /// Its file, when not the kernel's.
        file: Option<PathBuf>,
        /// Its name.
        function: String,
    },
    /// A JSON file of the expected numbers (relative to the config's
    /// directory).
    Expected(PathBuf),
}

impl Reference {
    /// `FILE.json`, `FILE.py:FUNCTION` or `FUNCTION`.
    pub fn parse(text: &str) -> Result<Reference, String> {
        let text = text.trim();
        if text.ends_with(".json") {
            return Ok(Reference::Expected(PathBuf::from(text)));
        }
        let (file, function) = match text.rsplit_once(':') {
            Some((f, func)) if f.ends_with(".py") => (Some(PathBuf::from(f)), func),
            Some(_) => {
                return Err(format!(
                    "reference: '{text}' is none of FILE.json, FILE.py:FUNCTION or FUNCTION"
                ));
            }
            None => (None, text),
        };
        if !identifier(function) {
            return Err(format!(
                "reference: '{function}' is not a Python function name (the forms: \
                 FILE.json, FILE.py:FUNCTION, FUNCTION)"
            ));
        }
        Ok(Reference::Callable {
            file,
            function: function.to_string(),
        })
    }

    /// The reference of one combination: `{precision}` and `{backend}` in
    /// a file's name replaced by its values.
    pub fn for_combination(self, precision: Option<&str>, backend: Option<&str>) -> Reference {
        match self {
            Reference::Expected(p) => {
                let name = p
                    .to_string_lossy()
                    .replace("{precision}", precision.unwrap_or(""))
                    .replace("{backend}", backend.unwrap_or(""));
                Reference::Expected(PathBuf::from(name))
            }
            other => other,
        }
    }

    /// With relative paths made relative to `dir` (the config's).
    pub fn under(self, dir: &Path) -> Reference {
        match self {
            Reference::Expected(p) => Reference::Expected(dir.join(p)),
            Reference::Callable { file, function } => Reference::Callable {
                file: file.map(|f| dir.join(f)),
                function,
            },
        }
    }
}

/// Whether `name` is a Python identifier (ASCII letters, digits and `_`,
/// not starting with a digit).
pub(super) fn identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
