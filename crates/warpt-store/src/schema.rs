//! The database schema and its migrations, for both backends.
//!
//! The migrations are written for SQLite; PostgreSQL gets the same tables
//! and columns through [`postgres_sql`] (64-bit integers, double precision,
//! identity keys) and its own indexes where SQLite's were a workaround for
//! SQLite alone. The schema version is SQLite's `user_version`, or the one
//! row of `warpt_schema` on PostgreSQL. Opening a store applies every
//! migration above it in one transaction that holds the write lock (SQLite's
//! `BEGIN IMMEDIATE`, a PostgreSQL advisory lock), so processes opening a new
//! store at once migrate it once, and a crash mid-migration leaves the
//! previous version intact. A store newer than this warpt is refused.
//!
//! On PostgreSQL the migration also makes the role `warpt_reader` (no login,
//! `SELECT` on the store's tables and nothing else) that `results query`
//! switches to, where the connecting user may create roles.

use crate::StoreError;
use crate::db::{Db, Dialect};
/// The migrations, in SQLite's dialect, in order: migration `i` takes the
/// schema from version `i` to `i + 1`.
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
    // 6: the Slurm job a run was part of (`warpt fleet`), from its
    // manifest, so a fleet job's runs are selected without reading every
    // manifest.
    "ALTER TABLE suite_runs ADD COLUMN slurm_job TEXT;
    UPDATE suite_runs SET slurm_job = json_extract(manifest_json, '$.env.SLURM_JOB_ID')
        WHERE manifest_json IS NOT NULL;
    CREATE INDEX runs_by_slurm_job ON suite_runs (slurm_job);",
    // 7: a run's labels (`--label key=value`), one row each so `results
    // list --label` and SQL find runs by them, and its description.
    "CREATE TABLE run_labels (
        run_id TEXT NOT NULL REFERENCES suite_runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX run_labels_by_label ON run_labels (key, value);
    ALTER TABLE suite_runs ADD COLUMN description TEXT;",
    // 8: `model_results`, the ML results' metrics with the model's facts as
    // columns (from the result's details, else its parameters), so SQL can
    // group and filter by model, family, precision, batch.
    "CREATE VIEW model_results AS
    SELECT r.run_id AS run_id, s.start_time AS start_time, m.hostname AS machine,
        r.suite AS suite, r.benchmark AS benchmark,
        coalesce(json_extract(r.result_json, '$.details.model'),
            json_extract(r.params_json, '$.model')) AS model,
        coalesce(json_extract(r.result_json, '$.details.family'),
            json_extract(r.params_json, '$.family')) AS family,
        coalesce(json_extract(r.params_json, '$.device'),
            json_extract(r.result_json, '$.details.device')) AS device,
        json_extract(r.params_json, '$.batch') AS batch,
        coalesce(json_extract(r.params_json, '$.seq_len'), json_extract(r.params_json, '$.seq'),
            json_extract(r.params_json, '$.prompt_tokens'),
            json_extract(r.params_json, '$.input_tokens')) AS sequence_length,
        coalesce(json_extract(r.result_json, '$.details.precision'),
            json_extract(r.params_json, '$.precision')) AS precision,
        json_extract(r.result_json, '$.details.parameters') AS parameters,
        x.name AS metric, x.tags_json AS tags, x.value AS value, x.unit AS unit,
        r.status AS status
    FROM metrics x
    JOIN results r ON r.id = x.result_id
    JOIN suite_runs s ON s.id = r.run_id
    LEFT JOIN machines m ON m.id = s.machine_id
    WHERE r.trial IS NULL
        AND (json_extract(r.result_json, '$.details.model') IS NOT NULL
            OR json_extract(r.params_json, '$.model') IS NOT NULL
            OR json_extract(r.result_json, '$.details.family') IS NOT NULL);",
    // 9: a stress run's labels and description (`warpt stress --label`),
    // found by `results list --label` as a suite run's are.
    "CREATE TABLE stress_labels (
        run_id TEXT NOT NULL REFERENCES stress_runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX stress_labels_by_label ON stress_labels (key, value);
    ALTER TABLE stress_runs ADD COLUMN description TEXT;",
];

/// Migrations whose PostgreSQL form is not the translated SQLite one:
/// migration 5's covering indexes keep SQLite from walking the overflow
/// pages of the large JSON documents; PostgreSQL keeps those out of line
/// (TOAST), and an index entry holding `params_json` could pass its 2.7 kB
/// limit. It gets plain indexes for the same queries instead. Migrations 6
/// and 8 read JSON with PostgreSQL's operators (8's numbers through
/// `warpt_bigint`, NULL for a value that is not an integer, where SQLite's
/// `json_extract` keeps the JSON type).
const POSTGRES_OVERRIDES: &[(usize, &str)] = &[
    (
        4,
        "CREATE INDEX runs_by_machine ON suite_runs (machine_id, start_time);
        CREATE INDEX results_by_benchmark ON results (benchmark, suite, status);",
    ),
    (
        5,
        "ALTER TABLE suite_runs ADD COLUMN slurm_job TEXT;
        UPDATE suite_runs SET slurm_job = manifest_json::json -> 'env' ->> 'SLURM_JOB_ID'
            WHERE manifest_json IS NOT NULL;
        CREATE INDEX runs_by_slurm_job ON suite_runs (slurm_job);",
    ),
    (
        7,
        "CREATE FUNCTION warpt_bigint(t TEXT) RETURNS BIGINT LANGUAGE SQL IMMUTABLE
            AS $$ SELECT CASE WHEN t ~ '^-?[0-9]+$' THEN t::BIGINT END $$;
        CREATE VIEW model_results AS
        SELECT r.run_id AS run_id, s.start_time AS start_time, m.hostname AS machine,
            r.suite AS suite, r.benchmark AS benchmark,
            coalesce(r.result_json::json -> 'details' ->> 'model',
                r.params_json::json ->> 'model') AS model,
            coalesce(r.result_json::json -> 'details' ->> 'family',
                r.params_json::json ->> 'family') AS family,
            coalesce(r.params_json::json ->> 'device',
                r.result_json::json -> 'details' ->> 'device') AS device,
            warpt_bigint(r.params_json::json ->> 'batch') AS batch,
            warpt_bigint(coalesce(r.params_json::json ->> 'seq_len', r.params_json::json ->> 'seq',
                r.params_json::json ->> 'prompt_tokens',
                r.params_json::json ->> 'input_tokens')) AS sequence_length,
            coalesce(r.result_json::json -> 'details' ->> 'precision',
                r.params_json::json ->> 'precision') AS precision,
            warpt_bigint(r.result_json::json -> 'details' ->> 'parameters') AS parameters,
            x.name AS metric, x.tags_json AS tags, x.value AS value, x.unit AS unit,
            r.status AS status
        FROM metrics x
        JOIN results r ON r.id = x.result_id
        JOIN suite_runs s ON s.id = r.run_id
        LEFT JOIN machines m ON m.id = s.machine_id
        WHERE r.trial IS NULL
            AND (r.result_json::json -> 'details' ->> 'model' IS NOT NULL
                OR r.params_json::json ->> 'model' IS NOT NULL
                OR r.result_json::json -> 'details' ->> 'family' IS NOT NULL);",
    ),
];

/// The schema version this warpt writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Migration `i` (0-based) in PostgreSQL's dialect: 64-bit integers
/// (`INTEGER` is 32-bit there), `DOUBLE PRECISION` (`REAL` is 32-bit
/// there), identity keys for SQLite's `INTEGER PRIMARY KEY`, no `WITHOUT
/// ROWID`.
pub fn postgres_sql(i: usize) -> String {
    if let Some((_, sql)) = POSTGRES_OVERRIDES.iter().find(|(j, _)| *j == i) {
        return (*sql).to_string();
    }
    MIGRATIONS[i]
        .replace(
            "INTEGER PRIMARY KEY",
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        )
        .replace(" INTEGER", " BIGINT")
        .replace(" REAL", " DOUBLE PRECISION")
        .replace(") WITHOUT ROWID", ")")
}

/// Advisory lock key that serialises migrations on PostgreSQL ("warpt").
const MIGRATION_LOCK: i64 = 0x0077_6172_7074;

/// The name of the read-only role `results query` uses on PostgreSQL.
pub const READER_ROLE: &str = "warpt_reader";

/// Makes the reader role if it is missing and the user may, and grants it
/// `SELECT` on every table of the store's schema (and nothing else).
const POSTGRES_READER: &str = "DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'warpt_reader') THEN
        CREATE ROLE warpt_reader NOLOGIN;
    END IF;
EXCEPTION WHEN insufficient_privilege OR duplicate_object OR unique_violation THEN NULL;
END $$;
DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'warpt_reader') THEN
        EXECUTE 'GRANT USAGE ON SCHEMA ' || quote_ident(current_schema()) || ' TO warpt_reader';
        EXECUTE 'GRANT SELECT ON ALL TABLES IN SCHEMA ' || quote_ident(current_schema()) || ' TO warpt_reader';
        IF NOT pg_has_role(current_user, 'warpt_reader', 'MEMBER') THEN
            EXECUTE 'GRANT warpt_reader TO ' || quote_ident(current_user);
        END IF;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN NULL;
END $$;";

/// The schema version of the database (0 for a new one).
pub fn version(db: &Db) -> Result<i64, StoreError> {
    match db.dialect() {
        Dialect::Sqlite => db
            .row("PRAGMA user_version", &[])?
            .map_or(Ok(0), |r| r.get(0)),
        Dialect::Postgres => {
            let exists = db
                .row("SELECT to_regclass('warpt_schema') IS NOT NULL", &[])?
                .map_or(Ok(false), |r| r.get(0))?;
            if !exists {
                return Ok(0);
            }
            db.row("SELECT max(version) FROM warpt_schema", &[])?
                .map_or(Ok(None), |r| r.get::<Option<i64>>(0))
                .map(Option::unwrap_or_default)
        }
    }
}

/// Applies migrations until the database is at `target`, all in one
/// transaction that holds the write lock while it reads the version.
pub fn migrate_to(db: &Db, target: i64) -> Result<(), StoreError> {
    // The common case, an up-to-date store, takes no lock.
    let current = version(db)?;
    if current > VERSION {
        return Err(StoreError::TooNew {
            found: current,
            supported: VERSION,
        });
    }
    if current >= target {
        return Ok(());
    }
    db.transaction(|tx| {
        if tx.dialect() == Dialect::Postgres {
            tx.execute(
                "SELECT pg_advisory_xact_lock(?1)",
                &crate::vals![MIGRATION_LOCK],
            )?;
            tx.batch("CREATE TABLE IF NOT EXISTS warpt_schema (version BIGINT NOT NULL)")?;
        }
        // Another process may have migrated while this one waited.
        let current = version(tx)?;
        for (i, sql) in MIGRATIONS
            .iter()
            .enumerate()
            .take(target as usize)
            .skip(current.max(0) as usize)
        {
            match tx.dialect() {
                Dialect::Sqlite => tx.batch(sql)?,
                Dialect::Postgres => tx.batch(&postgres_sql(i))?,
            }
        }
        if current < target {
            match tx.dialect() {
                Dialect::Sqlite => tx.batch(&format!("PRAGMA user_version = {target}"))?,
                Dialect::Postgres => {
                    tx.batch("DELETE FROM warpt_schema")?;
                    tx.execute(
                        "INSERT INTO warpt_schema (version) VALUES (?1)",
                        &crate::vals![target],
                    )?;
                    tx.batch(POSTGRES_READER)?;
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::db::SqliteConn;

    fn open(path: &std::path::Path) -> Db {
        Db::Sqlite(SqliteConn::new(rusqlite::Connection::open(path).unwrap()))
    }

    fn tables(db: &Db) -> Vec<String> {
        db.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0).unwrap())
        .collect()
    }

    #[test]
    fn migrates_from_empty_and_from_version_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir.path().join("fresh.db"));
        migrate_to(&db, VERSION).unwrap();
        assert_eq!(version(&db).unwrap(), VERSION);
        let all = tables(&db);
        assert!(all.contains(&"stress_runs".to_string()), "{all:?}");
        assert!(all.contains(&"server_jobs".to_string()), "{all:?}");

        // A store written by a warpt that knew only version 1, with a run in it.
        let old = dir.path().join("old.db");
        let db = open(&old);
        migrate_to(&db, 1).unwrap();
        assert_eq!(version(&db).unwrap(), 1);
        assert!(!tables(&db).contains(&"stress_runs".to_string()));
        db.execute(
            "INSERT INTO suite_runs (id, suite, interrupted, source, recorded_at, run_json) \
             VALUES ('r1', 'micro', 0, 'run', 'now', '{}')",
            &[],
        )
        .unwrap();
        drop(db);
        let db = open(&old);
        migrate_to(&db, VERSION).unwrap();
        assert_eq!(version(&db).unwrap(), VERSION);
        let row = db
            .row("SELECT id, imported_from FROM suite_runs", &[])
            .unwrap()
            .unwrap();
        assert_eq!(row.get::<String>(0).unwrap(), "r1");
        assert_eq!(row.get::<Option<String>>(1).unwrap(), None);
        assert!(tables(&db).contains(&"stress_runs".to_string()));

        // A newer store is refused, not damaged.
        db.batch(&format!("PRAGMA user_version = {}", VERSION + 1))
            .unwrap();
        assert!(matches!(
            migrate_to(&db, VERSION),
            Err(StoreError::TooNew { .. })
        ));
    }

    #[test]
    fn postgres_migrations_use_64_bit_types_and_identity_keys() {
        let first = postgres_sql(0);
        assert!(first.contains("id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"));
        assert!(first.contains("value DOUBLE PRECISION"));
        assert!(!first.contains(" INTEGER") && !first.contains(" REAL"));
        assert!(!first.contains("WITHOUT ROWID"));
        assert!(!postgres_sql(4).contains("params_json"));
    }
}
