//! The rows behind cross-machine analysis (`report --by machine`, `fleet
//! outliers`): every passed result's metrics over a selection of runs,
//! with the machine each ran on, and the raw samples when a test needs
//! them.

use std::collections::HashMap;

use warpt_model::{CrossRow, ListOutput, TelemetrySummary};

use crate::db::{Db, Value};
use crate::{StoreError, vals};

/// Which runs to analyse; every set field must match.
#[derive(Debug, Clone, Default)]
pub struct CrossFilter {
    /// Only these machines (host name or fingerprint prefix); empty: all.
    pub machines: Vec<String>,
    /// Runs started at or after this RFC 3339 time or date.
    pub since: Option<String>,
    /// Runs started before this time or date.
    pub until: Option<String>,
    /// Only this suite.
    pub suite: Option<String>,
    /// Only this benchmark.
    pub benchmark: Option<String>,
    /// Only the runs of this Slurm job (a fleet job).
    pub slurm_job: Option<String>,
}

/// The rows of `filter`: passed, non-trial results with a value, of runs
/// recorded with a machine.
pub fn rows(conn: &Db, filter: &CrossFilter) -> Result<Vec<CrossRow>, StoreError> {
    let mut params: Vec<Value> = Vec::new();
    let mut conds: Vec<String> = vec![
        "r.trial IS NULL".into(),
        "r.status = 'passed'".into(),
        "x.value IS NOT NULL".into(),
    ];
    let mut bind = |v: &str| {
        params.push(Value::from(v));
        format!("?{}", params.len())
    };
    if let Some(v) = &filter.since {
        conds.push(format!("s.start_time >= {}", bind(v)));
    }
    if let Some(v) = &filter.until {
        conds.push(format!("s.start_time < {}", bind(v)));
    }
    if let Some(v) = &filter.suite {
        conds.push(format!("r.suite = {}", bind(v)));
    }
    if let Some(v) = &filter.benchmark {
        conds.push(format!("r.benchmark = {}", bind(v)));
    }
    if let Some(v) = &filter.slurm_job {
        conds.push(format!("s.slurm_job = {}", bind(v)));
    }
    if !filter.machines.is_empty() {
        let any: Vec<String> = filter
            .machines
            .iter()
            .map(|m| {
                let p = bind(m);
                format!("m.hostname = {p} OR substr(m.fingerprint, 1, length({p})) = {p}")
            })
            .collect();
        conds.push(format!("({})", any.join(" OR ")));
    }
    let sql = format!(
        "SELECT s.id, m.fingerprint, m.hostname, r.suite, r.benchmark, x.name, x.tags_json, x.unit, \
                x.higher_is_better, x.value, x.ci95_low, x.ci95_high, x.n, r.telemetry_json, x.id \
         FROM metrics x \
         JOIN results r ON r.id = x.result_id \
         JOIN suite_runs s ON s.id = r.run_id \
         JOIN machines m ON m.id = s.machine_id \
         WHERE {} \
         ORDER BY r.suite, r.benchmark, x.name, m.hostname, s.start_time, x.id",
        conds.join(" AND ")
    );
    let mut power_of: HashMap<String, Option<f64>> = HashMap::new();
    conn.rows(&sql, &params)?
        .iter()
        .map(|r| {
            let telemetry: Option<String> = r.get(13)?;
            // Results repeat their telemetry on every metric row: parse once.
            let mean_power_w = match telemetry {
                Some(t) => match power_of.get(&t) {
                    Some(p) => *p,
                    None => {
                        let p = serde_json::from_str::<TelemetrySummary>(&t)?.mean_power_w;
                        power_of.insert(t, p);
                        p
                    }
                },
                None => None,
            };
            let low: Option<f64> = r.get(10)?;
            let high: Option<f64> = r.get(11)?;
            Ok(CrossRow {
                run_id: r.get(0)?,
                fingerprint: r.get(1)?,
                hostname: r.get(2)?,
                suite: r.get(3)?,
                benchmark: r.get(4)?,
                metric: r.get(5)?,
                tags: serde_json::from_str(&r.get::<String>(6)?)?,
                unit: r.get(7)?,
                higher_is_better: r.get(8)?,
                value: r.get(9)?,
                ci95: low.zip(high),
                n: r.get(12)?,
                mean_power_w,
                metric_id: r.get(14)?,
            })
        })
        .collect()
}

/// The raw samples of the metric rows `ids`, by id (ids without samples
/// are absent).
pub fn samples(conn: &Db, ids: &[i64]) -> Result<HashMap<i64, Vec<f64>>, StoreError> {
    let mut out: HashMap<i64, Vec<f64>> = HashMap::new();
    // A bounded number of placeholders per statement.
    for chunk in ids.chunks(500) {
        let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("?{i}")).collect();
        let params: Vec<Value> = chunk.iter().map(|i| Value::Int(*i)).collect();
        for r in conn.rows(
            &format!(
                "SELECT metric_id, value FROM samples WHERE metric_id IN ({}) ORDER BY metric_id, idx",
                marks.join(", ")
            ),
            &params,
        )? {
            out.entry(r.get(0)?).or_default().push(r.get(1)?);
        }
    }
    Ok(out)
}

/// The stored system snapshot of each machine in `fingerprints`.
pub fn systems(
    conn: &Db,
    fingerprints: &[&str],
) -> Result<HashMap<String, ListOutput>, StoreError> {
    let mut out = HashMap::new();
    for fp in fingerprints {
        if let Some(r) = conn.row(
            "SELECT system_json FROM machines WHERE fingerprint = ?1",
            &vals![*fp],
        )? {
            out.insert(fp.to_string(), serde_json::from_str(&r.get::<String>(0)?)?);
        }
    }
    Ok(out)
}
