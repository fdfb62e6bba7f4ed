//! For tests: the same test on both backends, each in a store of its own.
//!
//! PostgreSQL tests run where `WARPT_TEST_POSTGRES_URL` names a server and a
//! user who may create databases (`scripts/test` starts one); each test
//! gets a fresh database, dropped when it ends.

use std::path::Path;

use postgres::{Client, NoTls};

use crate::Location;

/// The variable naming the test server's URL (its `postgres` database).
pub const POSTGRES_ENV: &str = "WARPT_TEST_POSTGRES_URL";

/// A store made for one test: a SQLite file in a temporary directory, or a
/// fresh PostgreSQL database.
pub struct TestStore {
    /// Where it is.
    pub location: Location,
    /// The admin URL and database name to drop afterwards (PostgreSQL).
    drop: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
}

/// `url` with its database (the path) replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[scheme_end..];
    let path_start = rest.find('/').map(|i| scheme_end + i);
    let query_start = url[scheme_end..].find('?').map(|i| scheme_end + i);
    let end_of_authority = path_start.or(query_start).unwrap_or(url.len());
    let query = query_start.map_or("", |q| &url[q..]);
    format!("{}/{db}{query}", &url[..end_of_authority])
}

impl TestStore {
    /// A SQLite store in a new temporary directory (not yet created).
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
        TestStore {
            location: Location::Sqlite(dir.path().join("results.db")),
            drop: None,
            _dir: Some(dir),
        }
    }

    /// A fresh, empty PostgreSQL database, or `None` (with a note on
    /// stderr) when no test server is configured.
    pub fn postgres() -> Option<Self> {
        let Ok(admin) = std::env::var(POSTGRES_ENV) else {
            eprintln!("{POSTGRES_ENV} unset: scripts/test starts the PostgreSQL these tests use");
            return None;
        };
        let name = format!(
            "warpt_test_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        admin_client(&admin)
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("creating the test database {name}: {e:?}"));
        Some(TestStore {
            location: Location::Postgres(with_database(&admin, &name)),
            drop: Some((admin, name)),
            _dir: None,
        })
    }

    /// The SQLite file, if the store is one.
    pub fn path(&self) -> Option<&Path> {
        self.location.sqlite_path()
    }

    /// The location as a `--store` / `WARPT_STORE` value.
    pub fn arg(&self) -> std::ffi::OsString {
        self.location.as_arg()
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        if let Some((admin, name)) = self.drop.take() {
            // Best effort: a database left behind is only disk.
            let _ = admin_client(&admin)
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

/// A connection as the test server's admin user.
pub fn admin_client(url: &str) -> Client {
    Client::connect(url, NoTls).unwrap_or_else(|e| panic!("connecting to {url}: {e:?}"))
}

/// Runs `check` on a SQLite store, and on a PostgreSQL one where a test
/// server is configured.
pub fn on_both(check: impl Fn(&TestStore)) {
    eprintln!("-- on SQLite");
    check(&TestStore::sqlite());
    if let Some(pg) = TestStore::postgres() {
        eprintln!("-- on PostgreSQL");
        check(&pg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_replaced_and_the_rest_kept() {
        assert_eq!(
            with_database("postgres://u:p@h:5432/postgres?sslmode=disable", "t1"),
            "postgres://u:p@h:5432/t1?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h", "t2"), "postgres://u@h/t2");
        assert_eq!(
            with_database("postgresql://h?user=u", "t3"),
            "postgresql://h/t3?user=u"
        );
    }
}
