//! A metric's series over the stored runs, for `warpt results trend`.

use std::collections::BTreeMap;

use warpt_model::TrendRow;

use crate::db::Db;
use crate::{StoreError, vals};

/// Which series to read.
#[derive(Debug, Clone, Copy)]
pub struct TrendQuery<'a> {
    /// Only this suite, if given.
    pub suite: Option<&'a str>,
    /// The benchmark.
    pub benchmark: &'a str,
    /// The metric's name.
    pub metric: &'a str,
    /// Tags the metric must carry (others may differ).
    pub tags: &'a BTreeMap<String, String>,
    /// Only runs of this machine (host name or fingerprint prefix), if given.
    pub machine: Option<&'a str>,
}

/// The rows of `q`, oldest first (within a run, in the order its results
/// and metrics were reported). Trials are left out (their run's
/// aggregate stands for them), and so are results that did not pass.
pub fn rows(conn: &Db, q: &TrendQuery<'_>) -> Result<Vec<TrendRow>, StoreError> {
    let raw = conn.rows(
        "SELECT s.id, s.start_time, m.hostname, m.fingerprint, r.suite, x.tags_json, x.unit, \
                x.higher_is_better, x.value, x.ci95_low, x.ci95_high \
         FROM metrics x \
         JOIN results r ON r.id = x.result_id \
         JOIN suite_runs s INDEXED BY runs_cover ON s.id = r.run_id \
         JOIN machines m ON m.id = s.machine_id \
         WHERE r.benchmark = ?1 AND x.name = ?2 AND r.trial IS NULL AND r.status = 'passed' \
           AND (CAST(?3 AS TEXT) IS NULL OR r.suite = ?3) \
           AND (CAST(?4 AS TEXT) IS NULL OR m.hostname = ?4 OR substr(m.fingerprint, 1, length(?4)) = ?4) \
           AND x.value IS NOT NULL \
         ORDER BY s.start_time, s.id, r.position, x.position",
        &vals![q.benchmark, q.metric, q.suite, q.machine],
    )?;
    let mut out = Vec::new();
    for r in raw {
        let (run_id, start_time, hostname, fingerprint, suite): (
            String,
            String,
            String,
            String,
            String,
        ) = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        let tags: BTreeMap<String, String> = serde_json::from_str(&r.get::<String>(5)?)?;
        let (unit, hib, value): (String, bool, f64) = (r.get(6)?, r.get(7)?, r.get(8)?);
        let (low, high): (Option<f64>, Option<f64>) = (r.get(9)?, r.get(10)?);
        let machine_ok = q
            .machine
            .is_none_or(|m| hostname == m || fingerprint.starts_with(m));
        if machine_ok && q.tags.iter().all(|(k, v)| tags.get(k) == Some(v)) {
            out.push(TrendRow {
                run_id,
                start_time,
                hostname,
                fingerprint,
                suite,
                tags,
                unit,
                higher_is_better: hib,
                value,
                ci95: low.zip(high),
            });
        }
    }
    Ok(out)
}
