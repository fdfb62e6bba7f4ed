//! Runs submitted to `warpt serve`: queued, running, or ended and how.
//!
//! The server runs one at a time; this table is what survives it. A
//! restarted server marks what was `running` as `interrupted` (its child
//! process died with it) and runs what is still `queued`.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::db::{Db, Dialect, Row};
use crate::{StoreError, vals};

/// Where a submitted run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for the runs before it.
    Queued,
    /// Executing now.
    Running,
    /// Ran to the end (its benchmarks may still have failed: see the run).
    Finished,
    /// The run could not start or its process failed.
    Failed,
    /// Cancelled by `DELETE`, queued or running.
    Cancelled,
    /// The server stopped while it ran.
    Interrupted,
}

impl JobState {
    /// The stored (and JSON) name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Finished => "finished",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "finished" => JobState::Finished,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            "interrupted" => JobState::Interrupted,
            other => return Err(StoreError::Corrupt(format!("job state '{other}'"))),
        })
    }

    /// Queued or running.
    pub fn is_active(self) -> bool {
        matches!(self, JobState::Queued | JobState::Running)
    }
}

/// One submitted run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// The run's id (the suite run recorded under it when it ran).
    pub id: String,
    /// Where it stands.
    pub state: JobState,
    /// The plan as submitted.
    pub request: serde_json::Value,
    /// When it was submitted.
    pub submitted_at: Timestamp,
    /// When it started.
    pub started_at: Option<Timestamp>,
    /// When it ended.
    pub finished_at: Option<Timestamp>,
    /// Why it failed, was cancelled or interrupted.
    pub message: Option<String>,
}

const COLUMNS: &str = "id, state, request_json, submitted_at, started_at, finished_at, message";

fn timestamp(s: Option<String>) -> Result<Option<Timestamp>, StoreError> {
    s.map(|t| {
        t.parse()
            .map_err(|e| StoreError::Corrupt(format!("job timestamp '{t}': {e}")))
    })
    .transpose()
}

fn job(row: &Row) -> Result<Job, StoreError> {
    let submitted: String = row.get(3)?;
    Ok(Job {
        id: row.get(0)?,
        state: JobState::parse(&row.get::<String>(1)?)?,
        request: serde_json::from_str(&row.get::<String>(2)?)?,
        submitted_at: timestamp(Some(submitted))?.unwrap_or_default(),
        started_at: timestamp(row.get(4)?)?,
        finished_at: timestamp(row.get(5)?)?,
        message: row.get(6)?,
    })
}

/// Adds a job.
pub fn add(conn: &Db, job: &Job) -> Result<(), StoreError> {
    conn.execute(
        &format!("INSERT INTO server_jobs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        &vals![
            &job.id,
            job.state.as_str(),
            job.request.to_string(),
            job.submitted_at.to_string(),
            job.started_at.map(|t| t.to_string()),
            job.finished_at.map(|t| t.to_string()),
            &job.message,
        ],
    )?;
    Ok(())
}

/// Marks job `id` running since `at`.
pub fn start(conn: &Db, id: &str, at: Timestamp) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE server_jobs SET state = 'running', started_at = ?2 WHERE id = ?1",
        &vals![id, at.to_string()],
    )?;
    Ok(())
}

/// Ends job `id` in `state` at `at`, with `message`.
pub fn end(
    conn: &Db,
    id: &str,
    state: JobState,
    at: Timestamp,
    message: Option<&str>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE server_jobs SET state = ?2, finished_at = ?3, message = ?4 WHERE id = ?1",
        &vals![id, state.as_str(), at.to_string(), message],
    )?;
    Ok(())
}

/// Job `id`, if there is one.
pub fn get(conn: &Db, id: &str) -> Result<Option<Job>, StoreError> {
    conn.row(
        &format!("SELECT {COLUMNS} FROM server_jobs WHERE id = ?1"),
        &vals![id],
    )?
    .as_ref()
    .map(job)
    .transpose()
}

/// Queued and running jobs in submission order, or (with `all`) the
/// latest `limit` jobs of any state, newest first.
pub fn list(conn: &Db, all: bool, limit: usize) -> Result<Vec<Job>, StoreError> {
    // Ties in submission time (nanoseconds) fall back on insertion order
    // where the backend keeps one (SQLite's rowid), else on the id.
    let tie = match conn.dialect() {
        Dialect::Sqlite => "rowid",
        Dialect::Postgres => "id",
    };
    let sql = if all {
        format!("SELECT {COLUMNS} FROM server_jobs ORDER BY submitted_at DESC, {tie} DESC LIMIT ?1")
    } else {
        format!(
            "SELECT {COLUMNS} FROM server_jobs WHERE state IN ('queued', 'running') \
             ORDER BY submitted_at, {tie} LIMIT ?1"
        )
    };
    conn.rows(&sql, &vals![limit])?.iter().map(job).collect()
}

/// Marks every running job interrupted (a server starting after one that
/// died); returns their ids.
pub fn interrupt_running(
    conn: &Db,
    at: Timestamp,
    message: &str,
) -> Result<Vec<String>, StoreError> {
    let ids: Vec<String> = conn
        .rows("SELECT id FROM server_jobs WHERE state = 'running'", &[])?
        .iter()
        .map(|r| r.get(0))
        .collect::<Result<_, _>>()?;
    for id in &ids {
        end(conn, id, JobState::Interrupted, at, Some(message))?;
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Store;

    #[test]
    fn jobs_move_through_their_states_and_running_ones_are_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.db")).unwrap();
        let conn = store.db();
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            add(
                conn,
                &Job {
                    id: id.to_string(),
                    state: JobState::Queued,
                    request: serde_json::json!({"suite": "micro", "n": i}),
                    submitted_at: t0,
                    started_at: None,
                    finished_at: None,
                    message: None,
                },
            )
            .unwrap();
        }
        start(conn, "a", t0).unwrap();
        end(conn, "c", JobState::Cancelled, t0, Some("cancelled")).unwrap();
        let active: Vec<_> = list(conn, false, 10)
            .unwrap()
            .into_iter()
            .map(|j| (j.id, j.state))
            .collect();
        assert_eq!(
            active,
            [
                ("a".to_string(), JobState::Running),
                ("b".to_string(), JobState::Queued)
            ]
        );
        assert_eq!(interrupt_running(conn, t0, "gone").unwrap(), ["a"]);
        let a = get(conn, "a").unwrap().unwrap();
        assert_eq!(a.state, JobState::Interrupted);
        assert_eq!(a.message.as_deref(), Some("gone"));
        assert_eq!(a.request["suite"], "micro");
        assert!(get(conn, "zz").unwrap().is_none());
        assert_eq!(list(conn, true, 10).unwrap().len(), 3);
    }
}
