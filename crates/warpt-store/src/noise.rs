//! Noise profiles (`warpt noise`) and the run-level history a comparison
//! falls back on when a machine has no profile.
//!
//! A profile row holds one metric's run-to-run spread on one machine for
//! one set of parameters. The latest row for a key is the profile in force.

use warpt_model::{ListOutput, NoiseEntry};

use crate::db::{Db, Dialect, Value};
use crate::{StoreError, vals};

/// Which metric a profile or a history is for.
#[derive(Debug, Clone, Copy)]
pub struct NoiseKey<'a> {
    /// Machine fingerprint (see [`crate::fingerprint`]).
    pub fingerprint: &'a str,
    /// Suite.
    pub suite: &'a str,
    /// Benchmark.
    pub benchmark: &'a str,
    /// Metric name.
    pub metric: &'a str,
    /// Metric tags.
    pub tags: &'a std::collections::BTreeMap<String, String>,
    /// The benchmark's effective parameters.
    pub params: &'a warpt_model::Params,
}

/// Records `entries`, measured on `system`, in `tx` (the caller commits).
pub fn record(tx: &Db, system: &ListOutput, entries: &[NoiseEntry]) -> Result<(), StoreError> {
    let (machine_id, _) = crate::write::machine(tx, system)?;
    let now = jiff::Timestamp::now().to_string();
    for e in entries {
        tx.execute(
        "INSERT INTO noise_profiles (machine_id, run_id, suite, benchmark, metric, tags_json, params_json, \
         unit, trials, median, cv, cv_sd, within_ci, duration_s, recorded_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        &vals![
            machine_id,
            &e.run_id,
            &e.suite,
            &e.benchmark,
            &e.metric,
            serde_json::to_string(&e.tags)?,
            serde_json::to_string(&e.params)?,
            &e.unit,
            e.trials,
            e.median,
            e.cv,
            e.cv_sd,
            e.within_ci,
            e.duration_s,
            e.recorded_at.clone().unwrap_or_else(|| now.clone()),
        ],
    )?;
    }
    Ok(())
}

/// The latest profile for `key`, if one was recorded.
pub fn profile(conn: &Db, key: &NoiseKey<'_>) -> Result<Option<NoiseEntry>, StoreError> {
    let tags = serde_json::to_string(key.tags)?;
    let params_json = serde_json::to_string(key.params)?;
    let Some(r) = conn.row(
            "SELECT p.run_id, p.unit, p.trials, p.median, p.cv, p.cv_sd, p.within_ci, p.duration_s, p.recorded_at \
             FROM noise_profiles p JOIN machines m ON m.id = p.machine_id \
             WHERE m.fingerprint = ?1 AND p.suite = ?2 AND p.benchmark = ?3 AND p.metric = ?4 \
               AND p.tags_json = ?5 AND p.params_json = ?6 \
             ORDER BY p.recorded_at DESC, p.id DESC LIMIT 1",
        &vals![
            key.fingerprint,
            key.suite,
            key.benchmark,
            key.metric,
            tags,
            params_json
        ],
    )?
    else {
        return Ok(None);
    };
    Ok(Some(NoiseEntry {
        suite: key.suite.to_string(),
        benchmark: key.benchmark.to_string(),
        metric: key.metric.to_string(),
        tags: key.tags.clone(),
        params: key.params.clone(),
        run_id: r.get(0)?,
        unit: r.get(1)?,
        trials: r.get::<i64>(2)?.max(0) as usize,
        median: r.get(3)?,
        cv: r.get(4)?,
        cv_sd: r.get(5)?,
        within_ci: r.get(6)?,
        duration_s: r.get(7)?,
        recorded_at: r.get(8)?,
    }))
}

/// The values of `key`'s metric in up to `limit` of the latest stored
/// runs on its machine with its parameters, one per run (each trial of a
/// repeated run counts as a run; aggregates do not), leaving out the runs
/// in `exclude`, failed results and unreliable ones. Newest first.
pub fn history(
    conn: &Db,
    key: &NoiseKey<'_>,
    exclude: &[&str],
    limit: usize,
) -> Result<Vec<f64>, StoreError> {
    let mut params: Vec<Value> = vals![
        key.fingerprint,
        key.suite,
        key.benchmark,
        key.metric,
        serde_json::to_string(key.tags)?,
        serde_json::to_string(key.params)?,
        limit,
    ]
    .into();
    let mut excluded = String::new();
    for id in exclude {
        params.push(Value::from(*id));
        excluded.push_str(&format!(" AND s.id != ?{}", params.len()));
    }
    // SQLite: walked from the machine's runs, newest first (CROSS JOIN
    // fixes the order), so the LIMIT stops the walk: a few index probes per
    // run instead of visiting every result of the benchmark on every
    // machine. PostgreSQL plans the same joins by its statistics.
    let (runs, results) = match conn.dialect() {
        Dialect::Sqlite => (
            "suite_runs s INDEXED BY runs_by_machine",
            "results r INDEXED BY results_of_run",
        ),
        Dialect::Postgres => ("suite_runs s", "results r"),
    };
    let sql = format!(
        "SELECT x.value FROM machines m \
         CROSS JOIN {runs} \
         CROSS JOIN {results} \
         CROSS JOIN metrics x \
         WHERE m.fingerprint = ?1 AND s.machine_id = m.id AND r.run_id = s.id AND x.result_id = r.id \
           AND r.suite = ?2 AND r.benchmark = ?3 AND x.name = ?4 \
           AND x.tags_json = ?5 AND r.params_json = ?6 AND r.status = 'passed' \
           AND (r.quality IS NULL OR r.quality != 'unreliable') \
           AND (r.trial IS NOT NULL OR s.trials = 1) \
           AND x.value IS NOT NULL{excluded} \
         ORDER BY s.start_time DESC, r.trial DESC LIMIT ?7"
    );
    conn.rows(&sql, &params)?.iter().map(|r| r.get(0)).collect()
}
