//! Copying one store into another (`warpt results migrate`): a local
//! SQLite history into a shared PostgreSQL one, or any store into any other.
//!
//! Machines, suite runs, stress runs and noise profiles are copied with the
//! times they were first seen and recorded. Each run is its own transaction
//! in the target, and what the target already holds (a run of the same id,
//! an identical profile row) is left alone, so an interrupted copy is
//! finished by running it again.

use serde::Serialize;

use crate::db::{Db, Row, Value};
use crate::write::{Source, record_run_at};
use crate::{Recorded, Store, StoreError, vals};

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Machines added to the target.
    pub machines: usize,
    /// Suite runs added.
    pub runs: usize,
    /// Suite runs the target already held.
    pub runs_present: usize,
    /// Stress runs added.
    pub stress_runs: usize,
    /// Stress runs the target already held.
    pub stress_present: usize,
    /// Noise profile rows added.
    pub noise_profiles: usize,
    /// Noise profile rows the target already held.
    pub noise_present: usize,
}

/// How far a copy has come: (suite runs done, suite runs in all).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

const MACHINE_COLUMNS: &str = "fingerprint, hostname, cpu_model, logical_cores, memory_bytes, os, kernel, system_json, first_seen";

fn machine_id(db: &Db, fingerprint: &str) -> Result<Option<i64>, StoreError> {
    db.row(
        "SELECT id FROM machines WHERE fingerprint = ?1",
        &vals![fingerprint],
    )?
    .map(|r| r.get(0))
    .transpose()
}

/// Copies everything in `from` into `to`.
pub fn copy(from: &Store, to: &Store, progress: Progress<'_>) -> Result<CopyReport, StoreError> {
    let (src, dst) = (from.db(), to.db());
    let mut report = CopyReport::default();

    for m in src.rows(
        &format!("SELECT {MACHINE_COLUMNS} FROM machines ORDER BY id"),
        &[],
    )? {
        let added = dst.execute(
            &format!(
                "INSERT INTO machines ({MACHINE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
                 ON CONFLICT (fingerprint) DO NOTHING"
            ),
            &m.0,
        )?;
        report.machines += added as usize;
    }

    let runs = src.rows(
        "SELECT id, source, imported_from, recorded_at FROM suite_runs ORDER BY recorded_at, id",
        &[],
    )?;
    for (done, r) in runs.iter().enumerate() {
        let id: String = r.get(0)?;
        let source = match (r.get::<String>(1)?.as_str(), r.get::<Option<String>>(2)?) {
            ("import", Some(path)) => Source::Import(path),
            ("import", None) => Source::Import(String::new()),
            _ => Source::Run,
        };
        let recorded_at: String = r.get(3)?;
        let run = from.load_run(&id)?;
        let outcome = dst.transaction(|tx| record_run_at(tx, &run, &source, Some(&recorded_at)))?;
        match outcome {
            Recorded::Added => report.runs += 1,
            Recorded::AlreadyStored => report.runs_present += 1,
        }
        progress(done + 1, runs.len());
    }

    let stress = src.rows(
        "SELECT s.id, s.target, s.start_time, s.end_time, m.fingerprint, s.passed, s.checks, \
                s.errors, s.unit, s.recorded_at, s.run_json \
         FROM stress_runs s LEFT JOIN machines m ON m.id = s.machine_id ORDER BY s.recorded_at, s.id",
        &[],
    )?;
    for s in stress {
        let added = dst.transaction(|tx| {
            let mut values = s.0.clone();
            values[4] = mapped_machine(tx, &s, 4)?;
            let added = tx.execute(
                "INSERT INTO stress_runs (id, target, start_time, end_time, machine_id, passed, checks, \
                 errors, unit, recorded_at, run_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                 ON CONFLICT (id) DO NOTHING",
                &values,
            )?;
            if added > 0 {
                // Its labels and description, from the run itself.
                let run: warpt_model::StressRun = serde_json::from_str(&s.get::<String>(10)?)?;
                tx.execute(
                    "UPDATE stress_runs SET description = ?1 WHERE id = ?2",
                    &crate::vals![&run.description, &run.id],
                )?;
                for (key, value) in &run.labels {
                    tx.execute(
                        "INSERT INTO stress_labels (run_id, key, value) VALUES (?1, ?2, ?3)",
                        &crate::vals![&run.id, key, value],
                    )?;
                }
            }
            Ok(added)
        })?;
        if added > 0 {
            report.stress_runs += 1;
        } else {
            report.stress_present += 1;
        }
    }

    let noise = src.rows(
        "SELECT m.fingerprint, p.run_id, p.suite, p.benchmark, p.metric, p.tags_json, p.params_json, \
                p.unit, p.trials, p.median, p.cv, p.cv_sd, p.within_ci, p.duration_s, p.recorded_at \
         FROM noise_profiles p JOIN machines m ON m.id = p.machine_id ORDER BY p.id",
        &[],
    )?;
    dst.transaction(|tx| {
        for p in &noise {
            let mut values = p.0.clone();
            values[0] = mapped_machine(tx, p, 0)?;
            let key = [0, 2, 3, 4, 5, 6, 14, 1].map(|i| values[i].clone());
            let present = tx
                .row(
                    "SELECT 1 FROM noise_profiles WHERE machine_id = ?1 AND suite = ?2 \
                     AND benchmark = ?3 AND metric = ?4 AND tags_json = ?5 AND params_json = ?6 \
                     AND recorded_at = ?7 AND (run_id = ?8 OR (run_id IS NULL AND CAST(?8 AS TEXT) IS NULL))",
                    &key,
                )?
                .is_some();
            if present {
                report.noise_present += 1;
                continue;
            }
            tx.execute(
                "INSERT INTO noise_profiles (machine_id, run_id, suite, benchmark, metric, tags_json, \
                 params_json, unit, trials, median, cv, cv_sd, within_ci, duration_s, recorded_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                &values,
            )?;
            report.noise_profiles += 1;
        }
        Ok(())
    })?;
    Ok(report)
}

/// The target's id of the machine whose fingerprint is column `i` of `row`
/// (NULL stays NULL).
fn mapped_machine(tx: &Db, row: &Row, i: usize) -> Result<Value, StoreError> {
    match row.get::<Option<String>>(i)? {
        Some(fp) => Ok(machine_id(tx, &fp)?.map_or(Value::Null, Value::Int)),
        None => Ok(Value::Null),
    }
}
