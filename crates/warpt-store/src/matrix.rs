//! The rows behind the machine × benchmark matrix: every passed result's
//! headline metric (the first it reports) with the machine it ran on and
//! the mean power measured during it, when there was a power sensor.

use std::collections::BTreeMap;

use rusqlite::{Connection, params};
use warpt_model::TelemetrySummary;

use crate::StoreError;

/// One headline figure of one run on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRow {
    /// Suite.
    pub suite: String,
    /// Benchmark name within the suite.
    pub benchmark: String,
    /// The headline metric.
    pub metric: String,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
    /// Unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// The value (the median).
    pub value: f64,
    /// The machine's fingerprint.
    pub fingerprint: String,
    /// The machine's host name.
    pub hostname: String,
    /// Mean package power during the result's measurement, watts.
    pub mean_power_w: Option<f64>,
}

/// Every passed (non-trial) result's headline metric, optionally of one
/// suite only.
pub fn rows(conn: &Connection, suite: Option<&str>) -> Result<Vec<MatrixRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT r.suite, r.benchmark, x.name, x.tags_json, x.unit, x.higher_is_better, x.value, \
                m.fingerprint, m.hostname, r.telemetry_json \
         FROM metrics x \
         JOIN results r ON r.id = x.result_id \
         JOIN suite_runs s ON s.id = r.run_id \
         JOIN machines m ON m.id = s.machine_id \
         WHERE r.trial IS NULL AND r.status = 'passed' AND x.value IS NOT NULL \
           AND (?1 IS NULL OR r.suite = ?1) \
           AND x.name = (SELECT f.name FROM metrics f WHERE f.result_id = r.id ORDER BY f.position LIMIT 1)",
    )?;
    let raw = stmt
        .query_map(params![suite], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, bool>(5)?,
                r.get::<_, f64>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, String>(8)?,
                r.get::<_, Option<String>>(9)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    raw.into_iter()
        .map(
            |(suite, benchmark, metric, tags, unit, hib, value, fingerprint, hostname, tel)| {
                let mean_power_w = tel
                    .as_deref()
                    .map(serde_json::from_str::<TelemetrySummary>)
                    .transpose()?
                    .and_then(|t| t.mean_power_w);
                Ok(MatrixRow {
                    suite,
                    benchmark,
                    metric,
                    tags: serde_json::from_str(&tags)?,
                    unit,
                    higher_is_better: hib,
                    value,
                    fingerprint,
                    hostname,
                    mean_power_w,
                })
            },
        )
        .collect()
}
