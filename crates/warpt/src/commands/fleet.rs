//! `warpt fleet submit|status|collect`: benchmark runs on many machines
//! through Slurm.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use comfy_table::Cell;
use warpt_fleet::script::Nodes;
use warpt_fleet::{FleetError, JobDir, Phase, Slurm, Submission, Watched, node_statuses};
use warpt_run::child::ChildRun;
use warpt_run::outcome::ChildExit;
use warpt_store::Location;

use crate::cli::{FleetCollectArgs, FleetStatusArgs, FleetSubmitArgs};
use crate::{Outcome, UsageError};
use warpt_report::terminal as output;
use warpt_run::history;

/// Fleet errors as the CLI reports them: bad input and missing Slurm are
/// usage errors (exit 2).
pub(crate) fn fleet_error(e: FleetError) -> anyhow::Error {
    match e {
        FleetError::Usage(m) => UsageError(m).into(),
        other => other.into(),
    }
}

/// `benchmark run` flags a fleet sets itself on every node.
const RESERVED: &[&str] = &[
    "--store",
    "--no-store",
    "--export",
    "--export-file",
    "--dry-run",
];

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("reading the current directory")?
        .join(p))
}

/// `warpt fleet submit`.
pub fn submit(args: &FleetSubmitArgs) -> Result<Outcome> {
    for a in &args.run_args {
        let flag = a.split('=').next().unwrap_or_default();
        if RESERVED.contains(&flag) {
            return Err(UsageError(format!(
                "{flag} after `--`: warpt fleet sets where each node records (--store URL or \
                 --no-store of `fleet submit`, and an export per node in the fleet directory)"
            ))
            .into());
        }
    }
    let exe = std::env::current_exe().context("locating the warpt binary")?;
    // The plan is checked here, before it waits in a queue for hours.
    let check = ChildRun::program(&exe)
        .args(["benchmark", "run"])
        .args(&args.run_args)
        .args(["--dry-run", "--no-store"])
        .output()
        .context("checking the run arguments with `benchmark run --dry-run`")?;
    if check.exit != ChildExit::Ran(Outcome::Success) {
        return Err(UsageError(format!(
            "the run arguments do not make a plan: {}",
            check.stderr.trim()
        ))
        .into());
    }
    let store = match (&args.store, args.no_store) {
        (_, true) => None,
        (Some(url), _) => match Location::parse(url) {
            Location::Postgres(u) => Some(u),
            Location::Sqlite(p) => {
                return Err(UsageError(format!(
                    "--store {}: the nodes need a store they can share, a postgres:// URL \
                     (without one they write exports for `warpt fleet collect`)",
                    p.display()
                ))
                .into());
            }
        },
        (None, false) => match history::path(None, None)? {
            Location::Postgres(u) => Some(u),
            Location::Sqlite(_) => None,
        },
    };
    let nodes = match (&args.nodelist, args.nodes) {
        (Some(list), _) => Nodes::List(list.clone()),
        (None, Some(0)) => return Err(UsageError("--nodes 0: at least one node".into()).into()),
        (None, n) => Nodes::Count(n.unwrap_or(1)),
    };
    let dir = absolute(&args.dir.dir)?;
    let warpt = absolute(args.warpt.as_deref().unwrap_or(&exe))?;
    let submission = Submission {
        partition: args.partition.clone(),
        nodes,
        constraint: args.constraint.clone(),
        time: args.time.clone(),
        sbatch_args: args.sbatch_args.clone(),
        job_name: args.job_name.clone(),
        dir: dir.clone(),
        warpt,
        store: store.clone(),
        run_args: args.run_args.clone(),
    };
    let script = submission.script().map_err(fleet_error)?;
    if args.dry_run {
        print!("{script}");
        return Ok(Outcome::Success);
    }
    let slurm = Slurm;
    slurm.check().map_err(fleet_error)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    let script_path = dir.join(format!(
        "{}-{stamp}-{}.sbatch",
        args.job_name,
        warpt_harness::random_suffix()
    ));
    warpt_fleet::layout::write_private(&script_path, &script).map_err(fleet_error)?;
    let job = slurm.submit(&script_path).map_err(fleet_error)?;
    let job_dir = JobDir::new(&dir, &job).map_err(fleet_error)?;
    job_dir.create().map_err(fleet_error)?;
    let record = submission.record(&job, &script_path);
    warpt_fleet::layout::write_atomically(
        &job_dir.submission_path(),
        &serde_json::to_vec_pretty(&record)?,
    )
    .map_err(fleet_error)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "job": job,
                "dir": dir,
                "script": script_path,
                "records_into": if store.is_some() { "store" } else { "exports" },
            }))?
        );
    } else {
        println!("{job}");
        eprintln!(
            "submitted job {job} ({}); follow it with `warpt fleet status {job} --dir {}`{}",
            script_path.display(),
            dir.display(),
            if store.is_some() {
                String::new()
            } else {
                format!(", then `warpt fleet collect {job} --dir {}`", dir.display())
            }
        );
    }
    Ok(Outcome::Success)
}

/// Slurm's view of `job`, or `None` when Slurm's commands are missing here
/// and `optional` (collecting on a machine outside the cluster).
fn slurm_view(job: &str, optional: bool) -> Result<Option<warpt_fleet::JobInfo>> {
    match Slurm.job(job) {
        Ok(info) => Ok(info),
        Err(FleetError::Usage(_)) if optional => Ok(None),
        Err(e) => Err(fleet_error(e)),
    }
}

/// `warpt fleet status`.
pub fn status(args: &FleetStatusArgs) -> Result<Outcome> {
    let job_dir = JobDir::new(&args.dir.dir, &args.job).map_err(fleet_error)?;
    let timeout = args.timeout.map(Duration::from_secs_f64);
    let statuses = match warpt_fleet::watch(&Slurm, &job_dir, &args.job, args.wait, timeout)
        .map_err(fleet_error)?
    {
        Watched::Settled(statuses) => statuses,
        Watched::TimedOut(statuses, after) => {
            print_statuses(&statuses, args.json)?;
            eprintln!(
                "job {} still has nodes pending or running after {after:?}",
                args.job
            );
            return Ok(Outcome::Failures);
        }
    };
    print_statuses(&statuses, args.json)?;
    Ok(if statuses.iter().any(|s| s.phase == Phase::Failed) {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}

fn print_statuses(statuses: &[warpt_fleet::NodeStatus], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(statuses)?);
        return Ok(());
    }
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
    Ok(())
}

/// `warpt fleet collect`.
pub fn collect(args: &FleetCollectArgs) -> Result<Outcome> {
    let job_dir = JobDir::new(&args.dir.dir, &args.job).map_err(fleet_error)?;
    if !job_dir.path.exists() {
        return Err(UsageError(format!(
            "no fleet job {} in {} (the fleet directory is --dir / WARPT_FLEET_DIR)",
            args.job,
            args.dir.dir.display()
        ))
        .into());
    }
    let info = slurm_view(&args.job, true)?;
    let records = job_dir.records().map_err(fleet_error)?;
    let exports = job_dir.exports().map_err(fleet_error)?;
    let location = history::path(args.store.store.as_deref(), None)?;
    let files: Vec<_> = exports.iter().map(|(_, p)| p.clone()).collect();
    let imported: Vec<serde_json::Value> = history::import_files(&location, &files, Some("warpt"))?
        .into_iter()
        .zip(&exports)
        .map(|(i, (node, _))| {
            serde_json::json!({
                "node": node,
                "run_id": i.run_id,
                "added": i.added,
            })
        })
        .collect();
    let statuses = node_statuses(info.as_ref(), &[], &records);
    let missing = warpt_fleet::missing(&statuses, &exports);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "job": args.job,
                "store": location.to_string(),
                "imported": imported,
                "missing": missing,
            }))?
        );
    } else {
        for i in &imported {
            eprintln!(
                "{}: run {} {}",
                i["node"].as_str().unwrap_or_default(),
                i["run_id"].as_str().unwrap_or_default(),
                if i["added"] == true {
                    "imported"
                } else {
                    "already in the store"
                }
            );
        }
        for m in &missing {
            eprintln!(
                "{}: produced nothing ({}{})",
                m.node,
                m.state,
                m.reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            );
        }
        eprintln!(
            "job {}: {} export(s) collected into {location}, {} node(s) produced nothing",
            args.job,
            imported.len(),
            missing.len()
        );
    }
    Ok(if missing.is_empty() {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}
