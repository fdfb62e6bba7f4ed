//! Reading runs back: whole runs reassembled from their rows, and run listings.

use rusqlite::{Connection, OptionalExtension};
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
///
/// The page is chosen first (each kind of run walked newest first through
/// its time index, only as far as `limit + offset`, with only the filters
/// that are set), and the per-run counts are computed for the page alone:
/// a page of 50 costs the same in a store of ten runs or ten thousand.
pub fn list_runs(conn: &Connection, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
    let mut suite_where = Vec::new();
    let mut stress_where = Vec::new();
    if filter.suite.is_some() {
        suite_where.push("r.suite = :suite");
        stress_where.push("s.target = :suite");
    }
    if filter.benchmark.is_some() {
        suite_where.push(
            "EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id AND x.benchmark = :benchmark)",
        );
        stress_where.push("s.target = :benchmark");
    }
    if filter.machine.is_some() {
        let m = "(SELECT 1 FROM machines mm WHERE mm.id = {t}.machine_id AND (mm.hostname = :machine                  OR substr(mm.fingerprint, 1, length(:machine)) = :machine))";
        suite_where.push(Box::leak(
            format!("EXISTS {}", m.replace("{t}", "r")).into_boxed_str(),
        ));
        stress_where.push(Box::leak(
            format!("EXISTS {}", m.replace("{t}", "s")).into_boxed_str(),
        ));
    }
    if filter.since.is_some() {
        suite_where.push("r.start_time >= :since");
        stress_where.push("s.start_time >= :since");
    }
    if filter.until.is_some() {
        suite_where.push("r.start_time < :until");
        stress_where.push("s.start_time < :until");
    }
    let clause = |w: &[&str]| {
        if w.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", w.join(" AND "))
        }
    };
    let sql = format!(
        "SELECT p.id, p.kind, p.suite, p.start_time, m.hostname, m.fingerprint,
            CASE p.kind WHEN 'benchmark' THEN (SELECT count(*) FROM results x WHERE x.run_id = p.id AND x.trial IS NULL) ELSE 1 END,
            CASE p.kind WHEN 'benchmark' THEN (SELECT count(*) FROM results x WHERE x.run_id = p.id AND x.trial IS NULL
                 AND x.status = 'passed') ELSE p.passed END,
            p.source,
            CASE p.kind WHEN 'benchmark' THEN (SELECT t.trials FROM suite_runs t WHERE t.id = p.id) ELSE 1 END
         FROM (SELECT * FROM (
                 SELECT * FROM (SELECT r.id, 'benchmark' AS kind, r.suite, r.start_time, r.machine_id,
                                       NULL AS passed, r.source, r.recorded_at
                                FROM suite_runs r {sw}
                                ORDER BY r.start_time DESC, r.recorded_at DESC LIMIT :depth)
                 UNION ALL
                 SELECT * FROM (SELECT s.id, 'stress', s.target, s.start_time, s.machine_id, s.passed, 'run',
                                       s.recorded_at
                                FROM stress_runs s {tw}
                                ORDER BY s.start_time DESC, s.recorded_at DESC LIMIT :depth))
               ORDER BY start_time DESC, recorded_at DESC LIMIT :limit OFFSET :offset) p
         LEFT JOIN machines m ON m.id = p.machine_id
         ORDER BY p.start_time DESC, p.recorded_at DESC",
        sw = clause(&suite_where),
        tw = clause(&stress_where),
    );
    let limit = filter.limit.map_or(-1, |l| l as i64);
    let offset = filter.offset.unwrap_or(0) as i64;
    let depth = if limit < 0 { -1 } else { limit + offset };
    let mut stmt = conn.prepare(&sql)?;
    let mut named: Vec<(&str, &dyn rusqlite::ToSql)> =
        vec![(":depth", &depth), (":limit", &limit), (":offset", &offset)];
    for (name, value) in [
        (":suite", &filter.suite),
        (":benchmark", &filter.benchmark),
        (":machine", &filter.machine),
        (":since", &filter.since),
        (":until", &filter.until),
    ] {
        if value.is_some() {
            named.push((name, value));
        }
    }
    let rows = stmt
        .query_map(named.as_slice(), |r| {
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
            })
        })?
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
