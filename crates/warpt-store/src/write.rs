//! Recording runs: each suite run or stress run in one transaction.
//!
//! A run is split into rows a query can use (runs, results, metrics with
//! their statistics, one row per raw sample) plus, per row, the JSON of
//! everything else, so [`crate::read`] reassembles exactly what was recorded.
//! System snapshots are kept once per machine (by [`fingerprint`]); a run's
//! own snapshot is stored only when it differs from its machine's.

use warpt_model::{BenchmarkRunResult, BenchmarkSuiteRun, ListOutput, StressRun};

use crate::db::Db;
use crate::{StoreError, vals};

/// Where a recorded run came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `warpt benchmark run` on this machine.
    Run,
    /// `warpt results import` of an export file.
    Import(String),
}

impl Source {
    fn label(&self) -> &'static str {
        match self {
            Source::Run => "run",
            Source::Import(_) => "import",
        }
    }
}

/// What recording did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The run was added.
    Added,
    /// A run with this id was already stored; nothing changed.
    AlreadyStored,
}

/// A stable identity of a machine (see [`ListOutput::fingerprint`]).
pub fn fingerprint(system: &ListOutput) -> String {
    system.fingerprint()
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// The machine row for `system` (added if new) and whether its stored
/// snapshot is exactly `system`. Two writers adding the same new machine at
/// once both end up with the one row.
pub(crate) fn machine(tx: &Db, system: &ListOutput) -> Result<(i64, bool), StoreError> {
    let json = serde_json::to_string(system)?;
    let fp = fingerprint(system);
    let select = "SELECT id, system_json FROM machines WHERE fingerprint = ?1";
    if let Some(r) = tx.row(select, &vals![&fp])? {
        return Ok((r.get(0)?, r.get::<String>(1)? == json));
    }
    tx.execute(
        "INSERT INTO machines (fingerprint, hostname, cpu_model, logical_cores, memory_bytes, os, kernel, \
         system_json, first_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (fingerprint) DO NOTHING",
        &vals![
            &fp,
            &system.os.hostname,
            &system.cpu.model,
            system.cpu.logical_cores,
            system.memory.total_bytes,
            &system.os.name,
            &system.os.kernel,
            json.clone(),
            now()
        ],
    )?;
    let r = tx
        .row(select, &vals![&fp])?
        .ok_or_else(|| StoreError::Corrupt(format!("machine {fp} vanished after its insert")))?;
    Ok((r.get(0)?, r.get::<String>(1)? == json))
}

fn exists(tx: &Db, table: &str, id: &str) -> Result<bool, StoreError> {
    Ok(tx
        .row(&format!("SELECT 1 FROM {table} WHERE id = ?1"), &vals![id])?
        .is_some())
}

/// Records a suite run in `tx` (the caller commits).
pub fn record_run(
    tx: &Db,
    run: &BenchmarkSuiteRun,
    source: &Source,
) -> Result<Recorded, StoreError> {
    record_run_at(tx, run, source, None)
}

/// [`record_run`], stamped as recorded at `recorded_at` (a copy keeps the
/// original time) instead of now.
pub(crate) fn record_run_at(
    tx: &Db,
    run: &BenchmarkSuiteRun,
    source: &Source,
    recorded_at: Option<&str>,
) -> Result<Recorded, StoreError> {
    if exists(tx, "suite_runs", &run.id)? {
        return Ok(Recorded::AlreadyStored);
    }
    let (machine_id, same_system) = match &run.system {
        Some(s) => {
            let (id, same) = machine(tx, s)?;
            (Some(id), same)
        }
        None => (None, true),
    };
    let mut skeleton = run.clone();
    skeleton.benchmarks.clear();
    for t in &mut skeleton.trials {
        t.benchmarks.clear();
    }
    skeleton.manifest = None;
    skeleton.system = None;
    let own_system = match (&run.system, same_system) {
        (Some(s), false) => Some(serde_json::to_string(s)?),
        _ => None,
    };
    let imported_from = match source {
        Source::Import(path) => Some(path.as_str()),
        Source::Run => None,
    };
    let added = tx.execute(
        "INSERT INTO suite_runs (id, suite, start_time, end_time, machine_id, interrupted, source, recorded_at, \
         warpt_version, git_commit, manifest_json, system_json, run_json, imported_from, trials, slurm_job, \
         description) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) \
         ON CONFLICT (id) DO NOTHING",
        &vals![
            &run.id,
            &run.suite,
            run.start_time.map(|t| t.to_string()),
            run.end_time.map(|t| t.to_string()),
            machine_id,
            run.interrupted,
            source.label(),
            recorded_at.map_or_else(now, str::to_string),
            run.manifest.as_ref().map(|m| m.warpt_version.clone()),
            run.manifest
                .as_ref()
                .and_then(|m| m.git.as_ref())
                .map(|g| g.commit.clone()),
            run.manifest
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
            own_system,
            serde_json::to_string(&skeleton)?,
            imported_from,
            run.trial_count(),
            run.manifest
                .as_ref()
                .and_then(|m| m.env.get("SLURM_JOB_ID").cloned()),
            run.manifest.as_ref().and_then(|m| m.description.clone()),
        ],
    )?;
    if added == 0 {
        // Recorded by another writer since the check above.
        return Ok(Recorded::AlreadyStored);
    }
    for (key, value) in run.manifest.iter().flat_map(|m| &m.labels) {
        tx.execute(
            "INSERT INTO run_labels (run_id, key, value) VALUES (?1, ?2, ?3)",
            &vals![&run.id, key, value],
        )?;
    }
    // Aggregates (or a single run's results) first, with no trial; then
    // every trial's results, numbered on.
    let results: Vec<(Option<u32>, &BenchmarkRunResult)> = run
        .benchmarks
        .iter()
        .map(|r| (None, r))
        .chain(
            run.trials
                .iter()
                .flat_map(|t| t.benchmarks.iter().map(move |r| (Some(t.index), r))),
        )
        .collect();
    let mut rows = Vec::with_capacity(results.len());
    for (position, (trial, result)) in results.iter().enumerate() {
        let mut bare = (*result).clone();
        bare.metrics.clear();
        rows.push(
            vals![
                &run.id,
                position,
                &result.spec.id.suite,
                &result.spec.id.name,
                result.status.as_str(),
                result.quality.map(|q| q.as_str()),
                result.start_time.to_string(),
                result.end_time.to_string(),
                serde_json::to_string(&result.params)?,
                result
                    .telemetry
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()?,
                serde_json::to_string(&bare)?,
                *trial,
            ]
            .to_vec(),
        );
    }
    // Every result, then every metric, then every sample: one statement
    // each (a round trip each on PostgreSQL), matched up by position.
    let mut result_ids = vec![0i64; results.len()];
    for r in tx.insert_rows("results", RESULT_COLUMNS, rows, "id, position")? {
        let position: i64 = r.get(1)?;
        let slot = result_ids
            .get_mut(position as usize)
            .ok_or_else(|| StoreError::Corrupt(format!("result position {position} returned")))?;
        *slot = r.get(0)?;
    }
    let mut rows = Vec::new();
    for ((_, result), result_id) in results.iter().zip(&result_ids) {
        for (mpos, metric) in result.metrics.iter().enumerate() {
            let mut bare = metric.clone();
            if let Some(st) = bare.stats.as_mut() {
                st.samples.clear();
            }
            let st = metric.stats.as_ref();
            rows.push(
                vals![
                    *result_id,
                    mpos,
                    &metric.name,
                    &metric.unit,
                    metric.value,
                    metric.higher_is_better,
                    serde_json::to_string(&metric.tags)?,
                    st.map(|s| s.n),
                    st.map(|s| s.mean),
                    st.map(|s| s.median),
                    st.map(|s| s.std),
                    st.map(|s| s.min),
                    st.map(|s| s.max),
                    st.map(|s| s.p99),
                    st.map(|s| s.ci95_low),
                    st.map(|s| s.ci95_high),
                    st.and_then(|s| s.stop_reason).map(|r| r.as_str()),
                    serde_json::to_string(&bare)?,
                ]
                .to_vec(),
            );
        }
    }
    let mut metric_ids: std::collections::HashMap<(i64, i64), i64> =
        std::collections::HashMap::with_capacity(rows.len());
    for r in tx.insert_rows("metrics", METRIC_COLUMNS, rows, "id, result_id, position")? {
        metric_ids.insert((r.get(1)?, r.get(2)?), r.get(0)?);
    }
    let mut samples = Vec::new();
    for ((_, result), result_id) in results.iter().zip(&result_ids) {
        for (mpos, metric) in result.metrics.iter().enumerate() {
            let values = metric
                .stats
                .as_ref()
                .map(|s| s.samples.as_slice())
                .unwrap_or_default();
            if values.is_empty() {
                continue;
            }
            let id = metric_ids
                .get(&(*result_id, mpos as i64))
                .ok_or_else(|| StoreError::Corrupt("a metric's id was not returned".into()))?;
            samples.push((*id, values));
        }
    }
    tx.insert_samples(&samples)?;
    Ok(Recorded::Added)
}

const RESULT_COLUMNS: &[&str] = &[
    "run_id",
    "position",
    "suite",
    "benchmark",
    "status",
    "quality",
    "start_time",
    "end_time",
    "params_json",
    "telemetry_json",
    "result_json",
    "trial",
];

const METRIC_COLUMNS: &[&str] = &[
    "result_id",
    "position",
    "name",
    "unit",
    "value",
    "higher_is_better",
    "tags_json",
    "n",
    "mean",
    "median",
    "std",
    "min",
    "max",
    "p99",
    "ci95_low",
    "ci95_high",
    "stop_reason",
    "metric_json",
];

/// Records a stress run in `tx` (the caller commits).
pub fn record_stress(
    tx: &Db,
    run: &StressRun,
    system: Option<&ListOutput>,
) -> Result<Recorded, StoreError> {
    if exists(tx, "stress_runs", &run.id)? {
        return Ok(Recorded::AlreadyStored);
    }
    let machine_id = system
        .map(|s| machine(tx, s))
        .transpose()?
        .map(|(id, _)| id);
    let added = tx.execute(
        "INSERT INTO stress_runs (id, target, start_time, end_time, machine_id, passed, checks, errors, unit, \
         recorded_at, run_json, description) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         ON CONFLICT (id) DO NOTHING",
        &vals![
            &run.id,
            &run.target,
            run.start_time.map(|t| t.to_string()),
            run.end_time.map(|t| t.to_string()),
            machine_id,
            run.passed,
            run.checks,
            run.errors,
            &run.unit,
            now(),
            serde_json::to_string(run)?,
            &run.description,
        ],
    )?;
    if added == 0 {
        return Ok(Recorded::AlreadyStored);
    }
    for (key, value) in &run.labels {
        tx.execute(
            "INSERT INTO stress_labels (run_id, key, value) VALUES (?1, ?2, ?3)",
            &vals![&run.id, key, value],
        )?;
    }
    Ok(Recorded::Added)
}
