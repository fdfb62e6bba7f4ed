//! warpt's result history: every run recorded in an embedded SQLite file,
//! or in a PostgreSQL database that many machines share.
//!
//! - [`location`]: where a store lives (a path or a `postgres://` URL);
//! - [`db`]: one connection to either backend, and the SQL they share;
//! - [`copy`]: one store copied into another (`warpt results migrate`);
//! - [`schema`]: the tables and their migrations;
//! - [`write`]: recording suite runs and stress runs, machine fingerprints;
//! - [`read`]: reading runs back exactly, listing them;
//! - [`query`]: read-only SQL for `warpt results query`;
//! - [`noise`]: machines' noise profiles and run-level history for `compare`;
//! - [`matrix`]: headline figures by machine, for the machine × benchmark matrix;
//! - [`cross`]: every metric of a selection of runs by machine, for
//!   cross-machine reports and sick-node detection;
//! - [`jobs`]: runs submitted to `warpt serve`, queued, running or ended;
//! - [`testing`]: for tests, a store of each backend made for one test.
//!
//! [`Store`] ties them to one database (a SQLite file in WAL mode, or a
//! PostgreSQL database), each run written in one transaction, so a process
//! killed mid-write leaves the runs recorded before it intact and nothing of
//! its own.

pub mod copy;
pub mod cross;
pub mod db;
pub mod jobs;
pub mod location;
pub mod matrix;
pub mod noise;
pub mod query;
pub mod read;
pub mod schema;
pub mod testing;
/// A metric's series over the stored runs.
pub mod trend;
pub mod write;

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::db::{Db, PgConn, SqliteConn};
use warpt_model::{BenchmarkSuiteRun, ListOutput, NoiseEntry, StressRun};

pub use copy::CopyReport;
pub use cross::CrossFilter;
pub use jobs::{Job, JobState};
pub use location::Location;
pub use noise::NoiseKey;
pub use query::{Cap, Limits, QueryOutput, query, query_limited};
pub use read::{MachineSummary, RunFilter};
pub use trend::TrendQuery;
pub use warpt_model::{CrossRow, MatrixRow, RunSummary, TrendRow};
pub use write::{Recorded, Source, fingerprint};

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite said no.
    #[error("store: {0}")]
    Sql(#[from] rusqlite::Error),
    /// PostgreSQL said no (or could not be reached).
    #[error("store: postgres: {message}")]
    Postgres {
        /// What the server (or the connection) said.
        message: String,
        /// The SQLSTATE code, when the server gave one.
        code: Option<String>,
    },
    /// A stored document does not parse (or a run does not serialise).
    #[error("store: stored JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The directory or file cannot be created.
    #[error("store: {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The database was written by a newer warpt.
    #[error("store: schema version {found} is newer than this warpt's {supported}; upgrade warpt")]
    TooNew {
        /// Version in the file.
        found: i64,
        /// Newest version this warpt knows.
        supported: i64,
    },
    /// No run matches.
    #[error("no run '{0}' in the store")]
    NotFound(String),
    /// Several runs match a prefix.
    #[error("'{0}' matches several runs; give more of the id")]
    Ambiguous(String),
    /// The database holds something this warpt never writes.
    #[error("store: inconsistent: {0}")]
    Corrupt(String),
    /// A query ran past its time cap and was stopped.
    #[error("the query ran past {0:?} and was stopped")]
    TimedOut(std::time::Duration),
    /// A query tried to change something.
    #[error("results query is read-only; the statement was refused ({0})")]
    ReadOnly(String),
    /// A run that would not read back as written (a figure that is not a
    /// finite number): refused before anything is written.
    #[error("store: {0}")]
    Invalid(String),
}

/// The default store: `$XDG_DATA_HOME/warpt/results.db`, else
/// `~/.local/share/warpt/results.db`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("warpt").join("results.db"))
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Self {
        Location::from_path(p)
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Self {
        Location::from_path(p)
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Self {
        Location::from_path(&p)
    }
}

impl From<&Location> for Location {
    fn from(l: &Location) -> Self {
        l.clone()
    }
}

impl From<&str> for Location {
    fn from(s: &str) -> Self {
        Location::parse(s)
    }
}

/// An open store.
pub struct Store {
    db: Db,
    location: Location,
}

impl Store {
    /// Opens the store at `location` (a SQLite file, created with its
    /// directory if needed, or a PostgreSQL URL) and brings its schema up
    /// to date.
    pub fn open(location: impl Into<Location>) -> Result<Self, StoreError> {
        let location = location.into();
        let db = match &location {
            Location::Sqlite(path) => Db::Sqlite(open_sqlite(path)?),
            Location::Postgres(url) => Db::Postgres(Box::new(PgConn::connect(url)?)),
        };
        schema::migrate_to(&db, schema::VERSION)?;
        Ok(Store { db, location })
    }

    /// Where it is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The connection, for the modules that read and write it.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Records a suite run in one transaction.
    pub fn record_run(
        &mut self,
        run: &BenchmarkSuiteRun,
        source: &Source,
    ) -> Result<Recorded, StoreError> {
        // What is stored must read back: no infinity or NaN.
        if let Some(at) = run.non_finite() {
            return Err(StoreError::Invalid(format!(
                "run {}: {at}, not a finite number; nothing was recorded",
                run.id
            )));
        }
        self.db.transaction(|tx| write::record_run(tx, run, source))
    }

    /// Records a stress run in one transaction.
    pub fn record_stress(
        &mut self,
        run: &StressRun,
        system: Option<&ListOutput>,
    ) -> Result<Recorded, StoreError> {
        self.db
            .transaction(|tx| write::record_stress(tx, run, system))
    }

    /// The suite run `run` names (id, unique prefix or `latest`).
    pub fn load_run(&self, run: &str) -> Result<BenchmarkSuiteRun, StoreError> {
        read::load_run(&self.db, run)
    }

    /// The stress run `run` names (id, unique prefix or `latest`).
    pub fn load_stress(&self, run: &str) -> Result<StressRun, StoreError> {
        read::load_stress(&self.db, run)
    }

    /// Records a noise profile measured on `system` in one transaction.
    pub fn record_noise(
        &mut self,
        system: &ListOutput,
        entries: &[NoiseEntry],
    ) -> Result<(), StoreError> {
        self.db.transaction(|tx| noise::record(tx, system, entries))
    }

    /// The latest noise profile for `key`.
    pub fn noise_profile(&self, key: &NoiseKey<'_>) -> Result<Option<NoiseEntry>, StoreError> {
        noise::profile(&self.db, key)
    }

    /// Run-level values of `key`'s metric in the latest `limit` stored
    /// runs (see [`noise::history`]).
    pub fn noise_history(
        &self,
        key: &NoiseKey<'_>,
        exclude: &[&str],
        limit: usize,
    ) -> Result<Vec<f64>, StoreError> {
        noise::history(&self.db, key, exclude, limit)
    }

    /// A metric's values over the stored runs, oldest first (see [`trend::rows`]).
    pub fn trend(&self, q: &TrendQuery<'_>) -> Result<Vec<TrendRow>, StoreError> {
        trend::rows(&self.db, q)
    }

    /// Runs matching `filter`, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        read::list_runs(&self.db, filter)
    }

    /// How many runs the store holds, without reading them.
    pub fn count_runs(&self) -> Result<i64, StoreError> {
        read::count_runs(&self.db)
    }

    /// Every machine with recorded runs.
    pub fn list_machines(&self) -> Result<Vec<MachineSummary>, StoreError> {
        read::list_machines(&self.db)
    }

    /// Every passed result's headline figure with its machine (see [`matrix`]).
    pub fn matrix_rows(&self, suite: Option<&str>) -> Result<Vec<MatrixRow>, StoreError> {
        matrix::rows(&self.db, suite)
    }

    /// Every passed metric of the runs `filter` selects (see [`cross`]).
    pub fn cross_rows(&self, filter: &CrossFilter) -> Result<Vec<CrossRow>, StoreError> {
        cross::rows(&self.db, filter)
    }

    /// The raw samples of metric rows (see [`cross::samples`]).
    pub fn metric_samples(
        &self,
        ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, Vec<f64>>, StoreError> {
        cross::samples(&self.db, ids)
    }

    /// The system snapshots of machines by fingerprint.
    pub fn machine_systems(
        &self,
        fingerprints: &[&str],
    ) -> Result<std::collections::HashMap<String, ListOutput>, StoreError> {
        cross::systems(&self.db, fingerprints)
    }

    /// Records a submitted run (see [`jobs`]).
    pub fn add_job(&self, job: &Job) -> Result<(), StoreError> {
        jobs::add(&self.db, job)
    }

    /// Marks a submitted run running.
    pub fn start_job(&self, id: &str, at: jiff::Timestamp) -> Result<(), StoreError> {
        jobs::start(&self.db, id, at)
    }

    /// Ends a submitted run.
    pub fn end_job(
        &self,
        id: &str,
        state: JobState,
        at: jiff::Timestamp,
        message: Option<&str>,
    ) -> Result<(), StoreError> {
        jobs::end(&self.db, id, state, at, message)
    }

    /// A submitted run.
    pub fn job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        jobs::get(&self.db, id)
    }

    /// Queued and running submitted runs, oldest first, or with `all` the
    /// latest `limit` of any state.
    pub fn jobs(&self, all: bool, limit: usize) -> Result<Vec<Job>, StoreError> {
        jobs::list(&self.db, all, limit)
    }

    /// Marks running submitted runs interrupted; returns their ids.
    pub fn interrupt_running_jobs(
        &self,
        at: jiff::Timestamp,
        message: &str,
    ) -> Result<Vec<String>, StoreError> {
        jobs::interrupt_running(&self.db, at, message)
    }
}

/// Opens a SQLite store file: WAL (readers never wait for a writer), foreign
/// keys enforced, and writers waiting up to a minute for each other.
fn open_sqlite(path: &Path) -> Result<SqliteConn, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_WAIT)?;
    enter_wal(&conn)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(SqliteConn::new(conn))
}

/// How long a SQLite writer waits for the others before giving up.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Puts the file in WAL mode, waiting out other processes that hold it.
///
/// Switching the journal mode takes the exclusive lock without calling the
/// busy handler (and so does the last connection's checkpoint at close), so
/// `busy_timeout` alone does not cover it: with 32 processes opening a new
/// store at once, one in a few dozen rounds got "database is locked" here.
/// The switch is retried with a short backoff for as long as a writer waits.
fn enter_wal(conn: &Connection) -> Result<(), StoreError> {
    let deadline = std::time::Instant::now() + BUSY_WAIT;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            other => return other.map_err(StoreError::from),
        }
    }
}
