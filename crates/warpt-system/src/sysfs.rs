//! Reading sysfs and procfs: a file's trimmed text, a directory's entries,
//! either absent where the kernel does not offer them.

use std::fs;
use std::path::Path;

/// The text of `path` without surrounding whitespace; `None` where it
/// cannot be read or holds nothing.
pub(crate) fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The entries of directory `dir` that can be read; none where the
/// directory cannot.
pub(crate) fn entries(dir: impl AsRef<Path>) -> impl Iterator<Item = fs::DirEntry> {
    fs::read_dir(dir).into_iter().flatten().flatten()
}
