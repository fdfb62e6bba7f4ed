//! `warpt fleet outliers`: machines slower than their hardware peers.

use crate::stored::machine_rows;
use anyhow::Result;
use warpt_report::fleet::{OutlierOptions, scan};
use warpt_store::CrossFilter;

use crate::cli::FleetOutliersArgs;
use crate::{Outcome, UsageError};

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
    let filter = CrossFilter {
        machines: args.machine.clone(),
        since: args.since.clone(),
        until: None,
        suite: args.suite.clone(),
        benchmark: args.benchmark.clone(),
        slurm_job: args.job.clone(),
    };
    let selection = "--job, --machine, --since, --suite, --benchmark";
    let m = machine_rows(args.store.store.as_deref(), &filter, selection)?;
    let options = OutlierOptions {
        z: args.z,
        min_deviation: args.min_deviation / 100.0,
        ..OutlierOptions::default()
    };
    let result = scan(&m.rows, &m.classes, &options);
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
    Ok(Outcome::success_if(result.outliers.is_empty()))
}
