//! Reading runs back: whole runs reassembled from their rows, and run listings.

use serde::Serialize;
use warpt_model::{
    BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun, ListOutput, RunSummary, StressRun,
};

use crate::db::{Db, Value};
use crate::{StoreError, vals};

/// The id a user's `RUN` names: an exact id, a unique prefix, `latest`,
/// or `label:KEY=VALUE` (the latest suite run carrying that label).
pub fn resolve(conn: &Db, table: &str, run: &str) -> Result<String, StoreError> {
    if let Some(label) = run.strip_prefix("label:")
        && table == "suite_runs"
    {
        let (key, value) = warpt_model::labels::parse_label(label)
            .map_err(|why| StoreError::NotFound(format!("{run}: {why}")))?;
        let nl = nulls_last(conn);
        return conn
            .row(
                &format!(
                    "SELECT r.id FROM suite_runs r JOIN run_labels l ON l.run_id = r.id \
                     WHERE l.key = ?1 AND l.value = ?2 \
                     ORDER BY r.start_time DESC{nl}, r.recorded_at DESC LIMIT 1"
                ),
                &vals![&key, &value],
            )?
            .ok_or_else(|| StoreError::NotFound(format!("{run} (no stored run carries it)")))?
            .get(0);
    }
    if run == "latest" {
        let nl = nulls_last(conn);
        return conn
            .row(
                &format!(
                    "SELECT id FROM {table} ORDER BY start_time DESC{nl}, recorded_at DESC LIMIT 1"
                ),
                &[],
            )?
            .ok_or_else(|| StoreError::NotFound("latest (the store has no runs)".into()))?
            .get(0);
    }
    let ids: Vec<String> = conn
        .rows(
            &format!(
                "SELECT id FROM {table} WHERE id = ?1 OR substr(id, 1, length(?1)) = ?1 \
                 ORDER BY CASE WHEN id = ?1 THEN 0 ELSE 1 END LIMIT 3"
            ),
            &vals![run],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect::<Result<_, _>>()?;
    match ids.as_slice() {
        [] => Err(StoreError::NotFound(run.to_string())),
        [only] => Ok(only.clone()),
        [first, ..] if first == run => Ok(first.clone()),
        _ => Err(StoreError::Ambiguous(run.to_string())),
    }
}

/// What follows `DESC` so that NULLs sort last on both backends (SQLite
/// sorts them last in descending order already; PostgreSQL first).
pub(crate) fn nulls_last(conn: &Db) -> &'static str {
    match conn.dialect() {
        crate::db::Dialect::Sqlite => "",
        crate::db::Dialect::Postgres => " NULLS LAST",
    }
}

/// The suite run `run` (an id, unique prefix or `latest`), exactly as recorded.
pub fn load_run(conn: &Db, run: &str) -> Result<BenchmarkSuiteRun, StoreError> {
    let id = resolve(conn, "suite_runs", run)?;
    let row = conn
        .row(
            "SELECT r.run_json, r.manifest_json, r.system_json, m.system_json \
             FROM suite_runs r LEFT JOIN machines m ON m.id = r.machine_id WHERE r.id = ?1",
            &vals![&id],
        )?
        .ok_or_else(|| StoreError::NotFound(id.clone()))?;
    let run_json: String = row.get(0)?;
    let manifest_json: Option<String> = row.get(1)?;
    let own_system: Option<String> = row.get(2)?;
    let machine_system: Option<String> = row.get(3)?;
    let mut out: BenchmarkSuiteRun = serde_json::from_str(&run_json)?;
    out.manifest = manifest_json
        .map(|m| serde_json::from_str(&m))
        .transpose()?;
    out.system = own_system
        .or(machine_system)
        .map(|s| serde_json::from_str::<ListOutput>(&s))
        .transpose()?;
    // Three queries for the whole run (results, their metrics, every
    // sample), each in key order, merged here: a run of many metrics costs
    // three round trips to a database server, not one per metric.
    let results = conn.rows(
        "SELECT id, result_json, trial FROM results WHERE run_id = ?1 ORDER BY position",
        &vals![&id],
    )?;
    let metrics = conn.rows(
        "SELECT x.result_id, x.id, x.metric_json FROM metrics x JOIN results r ON r.id = x.result_id \
         WHERE r.run_id = ?1 ORDER BY x.result_id, x.position",
        &vals![&id],
    )?;
    let samples = conn.rows(
        "SELECT v.metric_id, v.value FROM samples v JOIN metrics x ON x.id = v.metric_id \
         JOIN results r ON r.id = x.result_id WHERE r.run_id = ?1 ORDER BY v.metric_id, v.idx",
        &vals![&id],
    )?;
    let mut by_metric: std::collections::HashMap<i64, Vec<f64>> = std::collections::HashMap::new();
    for s in &samples {
        by_metric.entry(s.get(0)?).or_default().push(s.get(1)?);
    }
    let mut by_result: std::collections::HashMap<i64, Vec<BenchmarkMetric>> =
        std::collections::HashMap::new();
    for m in &metrics {
        let mut metric: BenchmarkMetric = serde_json::from_str(&m.get::<String>(2)?)?;
        if let Some(st) = metric.stats.as_mut() {
            st.samples = by_metric.remove(&m.get::<i64>(1)?).unwrap_or_default();
        }
        by_result.entry(m.get(0)?).or_default().push(metric);
    }
    for r in &results {
        let result_id: i64 = r.get(0)?;
        let trial: Option<u32> = r.get(2)?;
        let mut result: BenchmarkRunResult = serde_json::from_str(&r.get::<String>(1)?)?;
        result.metrics = by_result.remove(&result_id).unwrap_or_default();
        match trial {
            None => out.benchmarks.push(result),
            Some(index) => match out.trials.iter_mut().find(|t| t.index == index) {
                Some(t) => t.benchmarks.push(result),
                None => {
                    return Err(StoreError::Corrupt(format!(
                        "run {id} has a result of trial {index}, which it does not list"
                    )));
                }
            },
        }
    }
    Ok(out)
}

/// The stress run `run` (an id, unique prefix or `latest`).
pub fn load_stress(conn: &Db, run: &str) -> Result<StressRun, StoreError> {
    let id = resolve(conn, "stress_runs", run)?;
    let json: String = conn
        .row(
            "SELECT run_json FROM stress_runs WHERE id = ?1",
            &vals![&id],
        )?
        .ok_or_else(|| StoreError::NotFound(id.clone()))?
        .get(0)?;
    Ok(serde_json::from_str(&json)?)
}

/// Which runs to list; every set field must match.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Suite name (stress runs: the target).
    pub suite: Option<String>,
    /// A benchmark the run contains.
    pub benchmark: Option<String>,
    /// Host name or machine fingerprint (prefix).
    pub machine: Option<String>,
    /// Runs started at or after this RFC 3339 time or date.
    pub since: Option<String>,
    /// Runs started before this RFC 3339 time or date.
    pub until: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
    /// Skip this many of the newest first (paging with `limit`).
    pub offset: Option<usize>,
    /// Only runs carrying every one of these labels (`--label key=value`).
    pub labels: Vec<(String, String)>,
}

/// How many runs the store holds (suite runs and stress runs), counted by
/// the database: what `/metrics` reports on every scrape.
pub fn count_runs(conn: &Db) -> Result<i64, StoreError> {
    let row = conn.row(
        "SELECT (SELECT count(*) FROM suite_runs) + (SELECT count(*) FROM stress_runs)",
        &[],
    )?;
    row.map_or(Ok(0), |r| r.get(0))
}

/// The runs matching `filter`, newest first.
///
/// The page is chosen first (each kind of run walked newest first through
/// its time index, only as far as `limit + offset`, with only the filters
/// that are set), and the per-run counts are computed for the page alone:
/// a page of 50 costs the same in a store of ten runs or ten thousand.
pub fn list_runs(conn: &Db, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
    // Each set filter binds its value once, as ?N, used by both halves.
    let mut params: Vec<Value> = Vec::new();
    let mut suite_where: Vec<String> = Vec::new();
    let mut stress_where: Vec<String> = Vec::new();
    let mut bind = |v: &String| {
        params.push(Value::from(v));
        format!("?{}", params.len())
    };
    if let Some(v) = &filter.suite {
        let p = bind(v);
        suite_where.push(format!("r.suite = {p}"));
        stress_where.push(format!("s.target = {p}"));
    }
    if let Some(v) = &filter.benchmark {
        let p = bind(v);
        suite_where.push(format!(
            "EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id AND x.benchmark = {p})"
        ));
        stress_where.push(format!("s.target = {p}"));
    }
    if let Some(v) = &filter.machine {
        let p = bind(v);
        let m = |t: &str| {
            format!(
                "EXISTS (SELECT 1 FROM machines mm WHERE mm.id = {t}.machine_id AND (mm.hostname = {p} \
                 OR substr(mm.fingerprint, 1, length({p})) = {p}))"
            )
        };
        suite_where.push(m("r"));
        stress_where.push(m("s"));
    }
    if let Some(v) = &filter.since {
        let p = bind(v);
        suite_where.push(format!("r.start_time >= {p}"));
        stress_where.push(format!("s.start_time >= {p}"));
    }
    if let Some(v) = &filter.until {
        let p = bind(v);
        suite_where.push(format!("r.start_time < {p}"));
        stress_where.push(format!("s.start_time < {p}"));
    }
    for (k, v) in &filter.labels {
        let (pk, pv) = (bind(k), bind(v));
        suite_where.push(format!(
            "EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = r.id AND l.key = {pk} AND l.value = {pv})"
        ));
        stress_where.push(format!(
            "EXISTS (SELECT 1 FROM stress_labels l WHERE l.run_id = s.id AND l.key = {pk} AND l.value = {pv})"
        ));
    }
    let clause = |w: &[String]| {
        if w.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", w.join(" AND "))
        }
    };
    let offset = filter.offset.unwrap_or(0);
    // Each half walks only as deep as the page needs.
    let (depth, page) = match filter.limit {
        Some(limit) => (
            format!("LIMIT {}", limit + offset),
            format!("LIMIT {limit} OFFSET {offset}"),
        ),
        None if offset > 0 => (String::new(), format!("LIMIT -1 OFFSET {offset}")),
        None => (String::new(), String::new()),
    };
    let page = match (conn.dialect(), filter.limit) {
        // PostgreSQL spells "no limit" LIMIT ALL.
        (crate::db::Dialect::Postgres, None) => page.replace("LIMIT -1", "LIMIT ALL"),
        _ => page,
    };
    let sql = format!(
        "SELECT p.id, p.kind, p.suite, p.start_time, m.hostname, m.fingerprint,
            CASE p.kind WHEN 'benchmark' THEN (SELECT count(*) FROM results x WHERE x.run_id = p.id AND x.trial IS NULL) ELSE 1 END,
            CASE p.kind WHEN 'benchmark' THEN (SELECT count(*) FROM results x WHERE x.run_id = p.id AND x.trial IS NULL
                 AND x.status = 'passed') ELSE p.passed END,
            p.source,
            CASE p.kind WHEN 'benchmark' THEN (SELECT t.trials FROM suite_runs t WHERE t.id = p.id) ELSE 1 END,
            CASE p.kind WHEN 'benchmark' THEN (SELECT t.description FROM suite_runs t WHERE t.id = p.id)
                 ELSE (SELECT t.description FROM stress_runs t WHERE t.id = p.id) END
         FROM (SELECT * FROM (
                 SELECT * FROM (SELECT r.id, 'benchmark' AS kind, r.suite, r.start_time, r.machine_id,
                                       CAST(NULL AS INTEGER) AS passed, r.source, r.recorded_at
                                FROM suite_runs r {sw}
                                ORDER BY r.start_time DESC{nl}, r.recorded_at DESC {depth}) b
                 UNION ALL
                 SELECT * FROM (SELECT s.id, 'stress', s.target, s.start_time, s.machine_id, s.passed, 'run',
                                       s.recorded_at
                                FROM stress_runs s {tw}
                                ORDER BY s.start_time DESC{nl}, s.recorded_at DESC {depth}) t) u
               ORDER BY start_time DESC{nl}, recorded_at DESC {page}) p
         LEFT JOIN machines m ON m.id = p.machine_id
         ORDER BY p.start_time DESC{nl}, p.recorded_at DESC",
        nl = nulls_last(conn),
        sw = clause(&suite_where),
        tw = clause(&stress_where),
    );
    let mut runs = conn
        .rows(&sql, &params)?
        .iter()
        .map(|r| {
            Ok(RunSummary {
                id: r.get(0)?,
                kind: r.get(1)?,
                suite: r.get(2)?,
                start_time: r.get(3)?,
                hostname: r.get(4)?,
                machine: r.get(5)?,
                benchmarks: r.get(6)?,
                passed: r.get(7)?,
                source: r.get(8)?,
                trials: r.get(9)?,
                labels: Default::default(),
                description: r.get(10)?,
            })
        })
        .collect::<Result<Vec<RunSummary>, StoreError>>()?;
    add_labels(conn, &mut runs)?;
    Ok(runs)
}

/// Fills in the labels of `runs` (one query a kind for the page).
fn add_labels(conn: &Db, runs: &mut [RunSummary]) -> Result<(), StoreError> {
    for (kind, table) in [("benchmark", "run_labels"), ("stress", "stress_labels")] {
        let ids: Vec<Value> = runs
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| Value::from(&r.id))
            .collect();
        if ids.is_empty() {
            continue;
        }
        let marks: Vec<String> = (1..=ids.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "SELECT run_id, key, value FROM {table} WHERE run_id IN ({}) ORDER BY run_id, key",
            marks.join(", ")
        );
        for row in conn.rows(&sql, &ids)? {
            let (id, key, value): (String, String, String) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            if let Some(run) = runs.iter_mut().find(|r| r.id == id && r.kind == kind) {
                run.labels.insert(key, value);
            }
        }
    }
    Ok(())
}

/// A machine that has recorded runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineSummary {
    /// Its fingerprint.
    pub fingerprint: String,
    /// Host name.
    pub hostname: String,
    /// CPU model.
    pub cpu_model: String,
    /// Logical cores.
    pub logical_cores: i64,
    /// Memory, bytes.
    pub memory_bytes: i64,
    /// Operating system.
    pub os: String,
    /// Kernel.
    pub kernel: String,
    /// When it was first recorded (RFC 3339).
    pub first_seen: String,
    /// Suite and stress runs recorded on it.
    pub runs: i64,
}

/// Every machine in the store, by host name.
pub fn list_machines(conn: &Db) -> Result<Vec<MachineSummary>, StoreError> {
    conn.rows(
        "SELECT m.fingerprint, m.hostname, m.cpu_model, m.logical_cores, m.memory_bytes, m.os,
                m.kernel, m.first_seen,
                (SELECT count(*) FROM suite_runs r WHERE r.machine_id = m.id)
                  + (SELECT count(*) FROM stress_runs s WHERE s.machine_id = m.id)
         FROM machines m ORDER BY m.hostname, m.fingerprint",
        &[],
    )?
    .iter()
    .map(|r| {
        Ok(MachineSummary {
            fingerprint: r.get(0)?,
            hostname: r.get(1)?,
            cpu_model: r.get(2)?,
            logical_cores: r.get(3)?,
            memory_bytes: r.get(4)?,
            os: r.get(5)?,
            kernel: r.get(6)?,
            first_seen: r.get(7)?,
            runs: r.get(8)?,
        })
    })
    .collect()
}
