//! The database schema and its migrations.
//!
//! The schema version is SQLite's `user_version`. Opening a store applies
//! every migration above it, each in its own transaction, so a store made by
//! any earlier warpt is brought up to date and a crash mid-migration leaves
//! the previous version intact. A store newer than this warpt is refused.

use rusqlite::Connection;

use crate::StoreError;

/// The migrations, in order: migration `i` takes the schema from version
/// `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, results, metrics, samples, machines.
    "CREATE TABLE machines (
        id INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL UNIQUE,
        hostname TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        logical_cores INTEGER NOT NULL,
        memory_bytes INTEGER NOT NULL,
        os TEXT NOT NULL,
        kernel TEXT NOT NULL,
        system_json TEXT NOT NULL,
        first_seen TEXT NOT NULL
    );
    CREATE TABLE suite_runs (
        id TEXT PRIMARY KEY,
        suite TEXT NOT NULL,
        start_time TEXT,
        end_time TEXT,
        machine_id INTEGER REFERENCES machines(id),
        interrupted INTEGER NOT NULL,
        source TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        warpt_version TEXT,
        git_commit TEXT,
        manifest_json TEXT,
        system_json TEXT,
        run_json TEXT NOT NULL
    );
    CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES suite_runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        suite TEXT NOT NULL,
        benchmark TEXT NOT NULL,
        status TEXT NOT NULL,
        quality TEXT,
        start_time TEXT NOT NULL,
        end_time TEXT NOT NULL,
        params_json TEXT NOT NULL,
        telemetry_json TEXT,
        result_json TEXT NOT NULL,
        UNIQUE (run_id, position)
    );
    CREATE TABLE metrics (
        id INTEGER PRIMARY KEY,
        result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        value REAL,
        higher_is_better INTEGER NOT NULL,
        tags_json TEXT NOT NULL,
        n INTEGER,
        mean REAL,
        median REAL,
        std REAL,
        min REAL,
        max REAL,
        p99 REAL,
        ci95_low REAL,
        ci95_high REAL,
        stop_reason TEXT,
        metric_json TEXT NOT NULL,
        UNIQUE (result_id, position)
    );
    CREATE TABLE samples (
        metric_id INTEGER NOT NULL REFERENCES metrics(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (metric_id, idx)
    ) WITHOUT ROWID;
    CREATE INDEX results_by_name ON results (suite, benchmark);
    CREATE INDEX metrics_by_result ON metrics (result_id);
    CREATE INDEX runs_by_time ON suite_runs (start_time);",
    // 2: stress runs, and the import source of a run.
    "CREATE TABLE stress_runs (
        id TEXT PRIMARY KEY,
        target TEXT NOT NULL,
        start_time TEXT,
        end_time TEXT,
        machine_id INTEGER REFERENCES machines(id),
        passed INTEGER NOT NULL,
        checks INTEGER NOT NULL,
        errors INTEGER NOT NULL,
        unit TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        run_json TEXT NOT NULL
    );
    ALTER TABLE suite_runs ADD COLUMN imported_from TEXT;",
    // 3: trials (`--repeat`), noise profiles (`warpt noise`).
    "ALTER TABLE suite_runs ADD COLUMN trials INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE results ADD COLUMN trial INTEGER;
    CREATE TABLE noise_profiles (
        id INTEGER PRIMARY KEY,
        machine_id INTEGER NOT NULL REFERENCES machines(id),
        run_id TEXT,
        suite TEXT NOT NULL,
        benchmark TEXT NOT NULL,
        metric TEXT NOT NULL,
        tags_json TEXT NOT NULL,
        params_json TEXT NOT NULL,
        unit TEXT NOT NULL,
        trials INTEGER NOT NULL,
        median REAL NOT NULL,
        cv REAL NOT NULL,
        cv_sd REAL,
        within_ci REAL,
        duration_s REAL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX noise_by_key ON noise_profiles (machine_id, suite, benchmark, metric);",
    // 4: runs submitted to `warpt serve` (queued, running, ended), so a
    // restarted server knows what was queued and what it interrupted.
    "CREATE TABLE server_jobs (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        request_json TEXT NOT NULL,
        submitted_at TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        message TEXT
    );
    CREATE INDEX server_jobs_by_state ON server_jobs (state, submitted_at);",
    // 5: covering indexes for the server's hot reads. Columns added by
    // ALTER TABLE (trials, trial) sit after the large JSON documents in each
    // row, so reading them from the table walks the document's overflow
    // pages; these indexes answer paging, history and trend queries
    // without touching the rows.
    "CREATE INDEX runs_page ON suite_runs (start_time, recorded_at, id, suite, machine_id, source, trials);
    CREATE INDEX runs_cover ON suite_runs (id, start_time, machine_id, trials);
    CREATE INDEX results_cover ON results (benchmark, suite, status, trial, run_id, quality, params_json);
    CREATE INDEX runs_by_machine ON suite_runs (machine_id, start_time, id, trials);
    CREATE INDEX results_of_run ON results (run_id, benchmark, suite, status, trial, quality, params_json);",
];

/// The schema version this warpt writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// The schema version of `conn`'s database (0 for a new file).
pub fn version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Applies migrations until the database is at `target`.
pub fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), StoreError> {
    let current = version(conn)?;
    if current > VERSION {
        return Err(StoreError::TooNew {
            found: current,
            supported: VERSION,
        });
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(current as usize)
    {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut s = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        s.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn migrates_from_empty_and_from_version_one() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh.db");
        let mut conn = Connection::open(&fresh).unwrap();
        migrate_to(&mut conn, VERSION).unwrap();
        assert_eq!(version(&conn).unwrap(), VERSION);
        let all = tables(&conn);
        assert!(all.contains(&"stress_runs".to_string()), "{all:?}");
        assert!(all.contains(&"server_jobs".to_string()), "{all:?}");

        // A store written by a warpt that knew only version 1, with a run in it.
        let old = dir.path().join("old.db");
        let mut conn = Connection::open(&old).unwrap();
        migrate_to(&mut conn, 1).unwrap();
        assert_eq!(version(&conn).unwrap(), 1);
        assert!(!tables(&conn).contains(&"stress_runs".to_string()));
        conn.execute(
            "INSERT INTO suite_runs (id, suite, interrupted, source, recorded_at, run_json) \
             VALUES ('r1', 'micro', 0, 'run', 'now', '{}')",
            [],
        )
        .unwrap();
        drop(conn);
        let mut conn = Connection::open(&old).unwrap();
        migrate_to(&mut conn, VERSION).unwrap();
        assert_eq!(version(&conn).unwrap(), VERSION);
        let (id, imported): (String, Option<String>) = conn
            .query_row("SELECT id, imported_from FROM suite_runs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((id.as_str(), imported), ("r1", None));
        assert!(tables(&conn).contains(&"stress_runs".to_string()));

        // A newer store is refused, not damaged.
        conn.pragma_update(None, "user_version", VERSION + 1)
            .unwrap();
        assert!(matches!(
            migrate_to(&mut conn, VERSION),
            Err(StoreError::TooNew { .. })
        ));
    }
}
