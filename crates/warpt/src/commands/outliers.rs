//! `warpt fleet outliers`: machines slower than their hardware peers.

use std::collections::{BTreeSet, HashMap};

use anyhow::Result;
use warpt_report::fleet::{OutlierOptions, scan};
use warpt_store::{CrossFilter, CrossRow, Store};

use crate::cli::FleetOutliersArgs;
use crate::{Outcome, UsageError};
use warpt_run::history;

/// Each machine's hardware class (see `ListOutput::hardware_class`), by
/// fingerprint, from its stored system snapshot.
pub fn classes(store: &Store, rows: &[CrossRow]) -> Result<HashMap<String, String>> {
    let fps: BTreeSet<&str> = rows.iter().map(|r| r.fingerprint.as_str()).collect();
    let fps: Vec<&str> = fps.into_iter().collect();
    Ok(store
        .machine_systems(&fps)?
        .into_iter()
        .map(|(fp, system)| (fp, system.hardware_class()))
        .collect())
}

/// `warpt fleet outliers`.
pub fn run(args: &FleetOutliersArgs) -> Result<Outcome> {
    if !(args.z.is_finite() && args.z > 0.0) {
        return Err(UsageError(format!("--z {}: a threshold above 0 is needed", args.z)).into());
    }
    if !(args.min_deviation.is_finite() && args.min_deviation >= 0.0) {
        return Err(UsageError(format!(
            "--min-deviation {}: a percentage of 0 or more is needed",
            args.min_deviation
        ))
        .into());
    }
    let (store, location) = history::open_existing(args.store.store.as_deref())?;
    let rows = store.cross_rows(&CrossFilter {
        machines: args.machine.clone(),
        since: args.since.clone(),
        until: None,
        suite: args.suite.clone(),
        benchmark: args.benchmark.clone(),
        slurm_job: args.job.clone(),
    })?;
    if rows.is_empty() {
        return Err(UsageError(format!(
            "no passed results in {location} match the selection (--job, --machine, --since, \
             --suite, --benchmark)"
        ))
        .into());
    }
    let class_of = classes(&store, &rows)?;
    let options = OutlierOptions {
        z: args.z,
        min_deviation: args.min_deviation / 100.0,
        ..OutlierOptions::default()
    };
    let result = scan(&rows, &class_of, &options);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        for o in &result.outliers {
            println!("{}", o.sentence());
        }
        for class in &result.too_small {
            eprintln!(
                "note: {} machine(s) of class '{class}' are too few to compare (at least {} are needed)",
                result.classes.get(class).map_or(0, Vec::len),
                options.min_peers + 1
            );
        }
        let machines: usize = result.classes.values().map(Vec::len).sum();
        eprintln!(
            "{machines} machine(s) in {} hardware class(es), {} metric comparison(s): {} outlier(s)",
            result.classes.len(),
            result.comparisons,
            result.outliers.len()
        );
    }
    Ok(if result.outliers.is_empty() {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}
