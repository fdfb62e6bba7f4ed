//! Where a store lives: a SQLite file, or a PostgreSQL database that many
//! machines share.

use std::fmt;
use std::path::{Path, PathBuf};

/// A store's location, as given by `--store`, `WARPT_STORE` or `store =`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (created with its directory on first use).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (`postgres://` or `postgresql://`).
    Postgres(String),
}

impl Location {
    /// Reads a `--store` value: a `postgres://` or `postgresql://` URL is a
    /// PostgreSQL database, anything else a SQLite file's path.
    pub fn parse(s: &str) -> Self {
        if is_postgres_url(s) {
            Location::Postgres(s.to_string())
        } else {
            Location::Sqlite(PathBuf::from(s))
        }
    }

    /// [`Location::parse`] of a path-typed value (a flag parsed as a path).
    pub fn from_path(p: &Path) -> Self {
        match p.to_str() {
            Some(s) => Location::parse(s),
            None => Location::Sqlite(p.to_path_buf()),
        }
    }

    /// Whether anything is there yet: a SQLite file exists; a PostgreSQL
    /// database is taken to (connecting says otherwise).
    pub fn exists(&self) -> bool {
        match self {
            Location::Sqlite(p) => p.exists(),
            Location::Postgres(_) => true,
        }
    }

    /// The location as given, password included: for a child process's
    /// `--store`, never for a message.
    pub fn as_arg(&self) -> std::ffi::OsString {
        match self {
            Location::Sqlite(p) => p.clone().into_os_string(),
            Location::Postgres(url) => url.into(),
        }
    }

    /// The SQLite file, if it is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }
}

/// Whether `s` is a PostgreSQL URL.
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// The URL with its password replaced by `***`, for messages and logs.
pub fn redact(url: &str) -> String {
    warpt_model::redact_secrets(url)
}

impl fmt::Display for Location {
    /// The path, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_postgres_and_everything_else_a_file() {
        assert!(matches!(
            Location::parse("postgres://u@h/db"),
            Location::Postgres(_)
        ));
        assert!(matches!(
            Location::parse("postgresql://h/db"),
            Location::Postgres(_)
        ));
        assert_eq!(
            Location::parse("results.db"),
            Location::Sqlite("results.db".into())
        );
        assert_eq!(
            Location::parse("./postgres://x"),
            Location::Sqlite("./postgres://x".into())
        );
    }

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(
            Location::parse("postgresql://a:b@c/d").to_string(),
            "postgresql://a:***@c/d"
        );
    }
}
