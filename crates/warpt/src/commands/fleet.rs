//! `warpt fleet submit|status|collect`: benchmark runs on many machines
//! through Slurm ([`warpt_fleet::runs`]).

use std::time::Duration;

use anyhow::Result;
use comfy_table::Cell;
use warpt_fleet::runs::{self as fleet, SubmitRequest, error as fleet_error};
use warpt_fleet::{JobDir, Phase, Slurm, Watched};

use crate::Outcome;
use crate::cli::{FleetCollectArgs, FleetStatusArgs, FleetSubmitArgs};
use warpt_report::terminal as output;

/// `warpt fleet submit`.
pub fn submit(args: &FleetSubmitArgs) -> Result<Outcome> {
    let prepared = fleet::prepare(&SubmitRequest {
        partition: args.partition.clone(),
        nodes: args.nodes,
        nodelist: args.nodelist.clone(),
        constraint: args.constraint.clone(),
        time: args.time.clone(),
        sbatch_args: args.sbatch_args.clone(),
        job_name: args.job_name.clone(),
        dir: args.dir.dir.clone(),
        warpt: args.warpt.clone(),
        store: args.store.clone(),
        no_store: args.no_store,
        run_args: args.run_args.clone(),
    })?;
    if args.dry_run {
        print!("{}", prepared.script);
        return Ok(Outcome::Success);
    }
    let fleet::Submitted { job, script } = fleet::submit(&prepared)?;
    let dir = &prepared.submission.dir;
    if args.json {
        let json = serde_json::json!({
            "job": job,
            "dir": dir,
            "script": script,
            "records_into": if prepared.records_into_store() { "store" } else { "exports" },
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!("{job}");
        let collect = format!(", then `warpt fleet collect {job} --dir {}`", dir.display());
        eprintln!(
            "submitted job {job} ({}); follow it with `warpt fleet status {job} --dir {}`{}",
            script.display(),
            dir.display(),
            if prepared.records_into_store() {
                ""
            } else {
                &collect
            }
        );
    }
    Ok(Outcome::Success)
}

/// `warpt fleet status`.
pub fn status(args: &FleetStatusArgs) -> Result<Outcome> {
    let job_dir = JobDir::new(&args.dir.dir, &args.job).map_err(fleet_error)?;
    let timeout = args.timeout.map(Duration::from_secs_f64);
    let watched =
        warpt_fleet::watch(&Slurm, &job_dir, &args.job, args.wait, timeout).map_err(fleet_error)?;
    let statuses = match &watched {
        Watched::Settled(s) | Watched::TimedOut(s, _) => s,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(statuses)?);
    } else {
        let mut t = output::table(&["node", "state", "run", "reason"]);
        for s in statuses {
            t.add_row(vec![
                Cell::new(&s.node),
                Cell::new(s.phase.as_str()),
                Cell::new(s.run_id.as_deref().unwrap_or("-")),
                Cell::new(s.reason.as_deref().unwrap_or("")),
            ]);
        }
        println!("{t}");
    }
    if let Watched::TimedOut(_, after) = watched {
        eprintln!(
            "job {} still has nodes pending or running after {after:?}",
            args.job
        );
        return Ok(Outcome::Failures);
    }
    Ok(Outcome::success_if(
        !statuses.iter().any(|s| s.phase == Phase::Failed),
    ))
}

/// `warpt fleet collect`.
pub fn collect(args: &FleetCollectArgs) -> Result<Outcome> {
    let c = fleet::collect(&args.dir.dir, &args.job, args.store.store.as_deref())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        for i in &c.imported {
            let what = if i.added {
                "imported"
            } else {
                "already in the store"
            };
            eprintln!("{}: run {} {what}", i.node, i.run_id);
        }
        for m in &c.missing {
            let why = m.reason.as_deref().map(|r| format!(": {r}"));
            eprintln!(
                "{}: produced nothing ({}{})",
                m.node,
                m.state,
                why.unwrap_or_default()
            );
        }
        eprintln!(
            "job {}: {} export(s) collected into {}, {} node(s) produced nothing",
            c.job,
            c.imported.len(),
            c.store,
            c.missing.len()
        );
    }
    Ok(Outcome::success_if(c.missing.is_empty()))
}
