//! The rows behind the machine × benchmark matrix: every passed result's
//! headline metric (the first it reports) with the machine it ran on and
//! the mean power measured during it, when there was a power sensor.

use warpt_model::{MatrixRow, TelemetrySummary};

use crate::db::Db;
use crate::{StoreError, vals};

/// Every passed (non-trial) result's headline metric, optionally of one
/// suite only.
pub fn rows(conn: &Db, suite: Option<&str>) -> Result<Vec<MatrixRow>, StoreError> {
    conn.rows(
        "SELECT r.suite, r.benchmark, x.name, x.tags_json, x.unit, x.higher_is_better, x.value, \
                m.fingerprint, m.hostname, r.telemetry_json \
         FROM metrics x \
         JOIN results r ON r.id = x.result_id \
         JOIN suite_runs s ON s.id = r.run_id \
         JOIN machines m ON m.id = s.machine_id \
         WHERE r.trial IS NULL AND r.status = 'passed' AND x.value IS NOT NULL \
           AND (CAST(?1 AS TEXT) IS NULL OR r.suite = ?1) \
           AND x.name = (SELECT f.name FROM metrics f WHERE f.result_id = r.id ORDER BY f.position LIMIT 1)",
        &vals![suite],
    )?
    .iter()
    .map(|r| {
        let mean_power_w = r
            .get::<Option<String>>(9)?
            .as_deref()
            .map(serde_json::from_str::<TelemetrySummary>)
            .transpose()?
            .and_then(|t| t.mean_power_w);
        Ok(MatrixRow {
            suite: r.get(0)?,
            benchmark: r.get(1)?,
            metric: r.get(2)?,
            tags: serde_json::from_str(&r.get::<String>(3)?)?,
            unit: r.get(4)?,
            higher_is_better: r.get(5)?,
            value: r.get(6)?,
            fingerprint: r.get(7)?,
            hostname: r.get(8)?,
            mean_power_w,
        })
    })
    .collect()
}
