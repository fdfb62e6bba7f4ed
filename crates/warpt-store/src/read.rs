//! Reading runs back: whole runs reassembled from their rows, and run listings.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use warpt_model::{BenchmarkMetric, BenchmarkRunResult, BenchmarkSuiteRun, ListOutput, StressRun};

use crate::StoreError;

/// The id a user's `RUN` names: an exact id, a unique prefix, or `latest`.
pub fn resolve(conn: &Connection, table: &str, run: &str) -> Result<String, StoreError> {
    if run == "latest" {
        return conn
            .query_row(
                &format!(
                    "SELECT id FROM {table} ORDER BY start_time DESC, recorded_at DESC LIMIT 1"
                ),
                [],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound("latest (the store has no runs)".into()));
    }
    let mut stmt = conn.prepare(&format!(
        "SELECT id FROM {table} WHERE id = ?1 OR substr(id, 1, length(?1)) = ?1 ORDER BY id = ?1 DESC LIMIT 3"
    ))?;
    let ids: Vec<String> = stmt
        .query_map([run], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    match ids.as_slice() {
        [] => Err(StoreError::NotFound(run.to_string())),
        [only] => Ok(only.clone()),
        [first, ..] if first == run => Ok(first.clone()),
        _ => Err(StoreError::Ambiguous(run.to_string())),
    }
}

/// The suite run `run` (an id, unique prefix or `latest`), exactly as recorded.
pub fn load_run(conn: &Connection, run: &str) -> Result<BenchmarkSuiteRun, StoreError> {
    let id = resolve(conn, "suite_runs", run)?;
    let (run_json, manifest_json, own_system, machine_system): (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    ) = conn.query_row(
        "SELECT r.run_json, r.manifest_json, r.system_json, m.system_json \
         FROM suite_runs r LEFT JOIN machines m ON m.id = r.machine_id WHERE r.id = ?1",
        [&id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let mut out: BenchmarkSuiteRun = serde_json::from_str(&run_json)?;
    out.manifest = manifest_json
        .map(|m| serde_json::from_str(&m))
        .transpose()?;
    out.system = own_system
        .or(machine_system)
        .map(|s| serde_json::from_str::<ListOutput>(&s))
        .transpose()?;
    let mut results = conn.prepare(
        "SELECT id, result_json, trial FROM results WHERE run_id = ?1 ORDER BY position",
    )?;
    let mut metrics =
        conn.prepare("SELECT id, metric_json FROM metrics WHERE result_id = ?1 ORDER BY position")?;
    let mut samples =
        conn.prepare("SELECT value FROM samples WHERE metric_id = ?1 ORDER BY idx")?;
    let rows: Vec<(i64, String, Option<u32>)> = results
        .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (result_id, json, trial) in rows {
        let mut result: BenchmarkRunResult = serde_json::from_str(&json)?;
        let mrows: Vec<(i64, String)> = metrics
            .query_map([result_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (metric_id, mjson) in mrows {
            let mut metric: BenchmarkMetric = serde_json::from_str(&mjson)?;
            if let Some(st) = metric.stats.as_mut() {
                st.samples = samples
                    .query_map([metric_id], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
            }
            result.metrics.push(metric);
        }
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
pub fn load_stress(conn: &Connection, run: &str) -> Result<StressRun, StoreError> {
    let id = resolve(conn, "stress_runs", run)?;
    let json: String = conn.query_row(
        "SELECT run_json FROM stress_runs WHERE id = ?1",
        [&id],
        |r| r.get(0),
    )?;
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
}

/// One line of `warpt results list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Run id.
    pub id: String,
    /// `benchmark` or `stress`.
    pub kind: String,
    /// Suite (or stress target).
    pub suite: String,
    /// Start time, RFC 3339.
    pub start_time: Option<String>,
    /// Machine host name.
    pub hostname: Option<String>,
    /// Machine fingerprint.
    pub machine: Option<String>,
    /// Benchmarks in the run (1 for stress).
    pub benchmarks: i64,
    /// Benchmarks that passed.
    pub passed: i64,
    /// `run` or `import`.
    pub source: String,
    /// How many times the plan ran (`--repeat`); 1 for a single run.
    pub trials: i64,
}

/// The runs matching `filter`, newest first.
pub fn list_runs(conn: &Connection, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
    let sql = "SELECT * FROM (
        SELECT r.id, 'benchmark' AS kind, r.suite, r.start_time, m.hostname, m.fingerprint,
               (SELECT count(*) FROM results x WHERE x.run_id = r.id AND x.trial IS NULL) AS benchmarks,
               (SELECT count(*) FROM results x WHERE x.run_id = r.id AND x.trial IS NULL
                  AND x.status = 'passed') AS passed,
               r.source, r.recorded_at, r.trials,
               EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id AND x.benchmark = ?2) AS has_benchmark
        FROM suite_runs r LEFT JOIN machines m ON m.id = r.machine_id
        UNION ALL
        SELECT s.id, 'stress', s.target, s.start_time, m.hostname, m.fingerprint, 1, s.passed, 'run',
               s.recorded_at, 1, s.target = ?2
        FROM stress_runs s LEFT JOIN machines m ON m.id = s.machine_id)
      WHERE (?1 IS NULL OR suite = ?1)
        AND (?2 IS NULL OR has_benchmark)
        AND (?3 IS NULL OR hostname = ?3 OR substr(fingerprint, 1, length(?3)) = ?3)
        AND (?4 IS NULL OR start_time >= ?4)
        AND (?5 IS NULL OR start_time < ?5)
      ORDER BY start_time DESC, recorded_at DESC
      LIMIT ?6 OFFSET ?7";
    let mut stmt = conn.prepare(sql)?;
    let limit = filter.limit.map_or(-1, |l| l as i64);
    let rows = stmt
        .query_map(
            params![
                filter.suite,
                filter.benchmark,
                filter.machine,
                filter.since,
                filter.until,
                limit,
                filter.offset.unwrap_or(0) as i64
            ],
            |r| {
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
                    trials: r.get(10)?,
                })
            },
        )?
        .collect::<Result<_, _>>()?;
    Ok(rows)
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
pub fn list_machines(conn: &Connection) -> Result<Vec<MachineSummary>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT m.fingerprint, m.hostname, m.cpu_model, m.logical_cores, m.memory_bytes, m.os,
                m.kernel, m.first_seen,
                (SELECT count(*) FROM suite_runs r WHERE r.machine_id = m.id)
                  + (SELECT count(*) FROM stress_runs s WHERE s.machine_id = m.id)
         FROM machines m ORDER BY m.hostname, m.fingerprint",
    )?;
    let rows = stmt
        .query_map([], |r| {
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
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
