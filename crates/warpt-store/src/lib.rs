//! warpt's result history: every run recorded in an embedded SQLite file.
//!
//! - [`schema`]: the tables and their migrations;
//! - [`write`]: recording suite runs and stress runs, machine fingerprints;
//! - [`read`]: reading runs back exactly, listing them;
//! - [`query`]: read-only SQL for `warpt results query`;
//! - [`noise`]: machines' noise profiles and run-level history for `compare`;
//! - [`matrix`]: headline figures by machine, for the machine × benchmark matrix;
//! - [`jobs`]: runs submitted to `warpt serve`, queued, running or ended.
//!
//! [`Store`] ties them to one database file in WAL mode, each run written in
//! one transaction, so a process killed mid-write leaves the runs recorded
//! before it intact.

pub mod jobs;
pub mod matrix;
pub mod noise;
pub mod query;
pub mod read;
pub mod schema;
pub mod trend;
pub mod write;

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use warpt_model::{BenchmarkSuiteRun, ListOutput, NoiseEntry, StressRun};

pub use jobs::{Job, JobState};
pub use matrix::MatrixRow;
pub use noise::NoiseKey;
pub use query::{Limits, QueryOutput, query, query_limited};
pub use read::{MachineSummary, RunFilter, RunSummary};
pub use trend::{TrendQuery, TrendRow};
pub use write::{Recorded, Source, fingerprint};

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite said no.
    #[error("store: {0}")]
    Sql(#[from] rusqlite::Error),
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

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating it and its directory if needed) the store at `path`
    /// and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        schema::migrate_to(&mut conn, schema::VERSION)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a suite run in one transaction.
    pub fn record_run(
        &mut self,
        run: &BenchmarkSuiteRun,
        source: &Source,
    ) -> Result<Recorded, StoreError> {
        let tx = self.conn.transaction()?;
        let done = write::record_run(&tx, run, source)?;
        tx.commit()?;
        Ok(done)
    }

    /// Records a stress run in one transaction.
    pub fn record_stress(
        &mut self,
        run: &StressRun,
        system: Option<&ListOutput>,
    ) -> Result<Recorded, StoreError> {
        let tx = self.conn.transaction()?;
        let done = write::record_stress(&tx, run, system)?;
        tx.commit()?;
        Ok(done)
    }

    /// The suite run `run` names (id, unique prefix or `latest`).
    pub fn load_run(&self, run: &str) -> Result<BenchmarkSuiteRun, StoreError> {
        read::load_run(&self.conn, run)
    }

    /// The stress run `run` names (id, unique prefix or `latest`).
    pub fn load_stress(&self, run: &str) -> Result<StressRun, StoreError> {
        read::load_stress(&self.conn, run)
    }

    /// Records a noise profile measured on `system` in one transaction.
    pub fn record_noise(
        &mut self,
        system: &ListOutput,
        entries: &[NoiseEntry],
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        noise::record(&tx, system, entries)?;
        tx.commit()?;
        Ok(())
    }

    /// The latest noise profile for `key`.
    pub fn noise_profile(&self, key: &NoiseKey<'_>) -> Result<Option<NoiseEntry>, StoreError> {
        noise::profile(&self.conn, key)
    }

    /// Run-level values of `key`'s metric in the latest `limit` stored
    /// runs (see [`noise::history`]).
    pub fn noise_history(
        &self,
        key: &NoiseKey<'_>,
        exclude: &[&str],
        limit: usize,
    ) -> Result<Vec<f64>, StoreError> {
        noise::history(&self.conn, key, exclude, limit)
    }

    /// A metric's values over the stored runs, oldest first (see [`trend::rows`]).
    pub fn trend(&self, q: &TrendQuery<'_>) -> Result<Vec<TrendRow>, StoreError> {
        trend::rows(&self.conn, q)
    }

    /// Runs matching `filter`, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        read::list_runs(&self.conn, filter)
    }

    /// Every machine with recorded runs.
    pub fn list_machines(&self) -> Result<Vec<MachineSummary>, StoreError> {
        read::list_machines(&self.conn)
    }

    /// Every passed result's headline figure with its machine (see [`matrix`]).
    pub fn matrix_rows(&self, suite: Option<&str>) -> Result<Vec<MatrixRow>, StoreError> {
        matrix::rows(&self.conn, suite)
    }

    /// Records a submitted run (see [`jobs`]).
    pub fn add_job(&self, job: &Job) -> Result<(), StoreError> {
        jobs::add(&self.conn, job)
    }

    /// Marks a submitted run running.
    pub fn start_job(&self, id: &str, at: jiff::Timestamp) -> Result<(), StoreError> {
        jobs::start(&self.conn, id, at)
    }

    /// Ends a submitted run.
    pub fn end_job(
        &self,
        id: &str,
        state: JobState,
        at: jiff::Timestamp,
        message: Option<&str>,
    ) -> Result<(), StoreError> {
        jobs::end(&self.conn, id, state, at, message)
    }

    /// A submitted run.
    pub fn job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        jobs::get(&self.conn, id)
    }

    /// Queued and running submitted runs, oldest first, or with `all` the
    /// latest `limit` of any state.
    pub fn jobs(&self, all: bool, limit: usize) -> Result<Vec<Job>, StoreError> {
        jobs::list(&self.conn, all, limit)
    }

    /// Marks running submitted runs interrupted; returns their ids.
    pub fn interrupt_running_jobs(
        &self,
        at: jiff::Timestamp,
        message: &str,
    ) -> Result<Vec<String>, StoreError> {
        jobs::interrupt_running(&self.conn, at, message)
    }

    #[cfg(test)]
    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }
}
