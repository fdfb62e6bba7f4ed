//! `warpt fleet node`: one node's part of a fleet job, started by `srun`.
//!
//! It records on the shared directory that the node started, runs
//! `warpt benchmark run` with the job's arguments (its export in the
//! directory, its output in the node's log), and records how it ended, so
//! `fleet status` can tell done from failed per node and say why.

use anyhow::{Context, Result};
use warpt_fleet::{JobDir, NodeRecord, NodeState};
use warpt_run::child::ChildRun;
use warpt_run::outcome::ChildExit;

use crate::cli::FleetNodeArgs;
use crate::commands::fleet::fleet_error;
use crate::{Outcome, UsageError};

/// `warpt fleet node`.
pub fn run(args: &FleetNodeArgs) -> Result<Outcome> {
    let job = std::env::var("SLURM_JOB_ID").map_err(|_| {
        UsageError("warpt fleet node runs inside a fleet job's step (SLURM_JOB_ID is unset)".into())
    })?;
    let node = std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| warpt_system::os_info().hostname);
    let dir = JobDir::new(&args.dir.dir, &job).map_err(fleet_error)?;
    dir.create().map_err(fleet_error)?;
    let mut record = NodeRecord {
        node: node.clone(),
        job: job.clone(),
        state: NodeState::Running,
        started_at: jiff::Timestamp::now(),
        finished_at: None,
        exit_code: None,
        run_id: None,
        message: None,
    };
    dir.write_record(&record).map_err(fleet_error)?;
    let export = dir.export_path(&node).map_err(fleet_error)?;
    let log_path = dir.log_path(&node).map_err(fleet_error)?;
    let log = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut child = ChildRun::this_warpt()
        .context("locating warpt")?
        .args(["benchmark", "run"])
        .args(&args.run_args)
        .arg_pair("--export-file", &export)
        .all_output_to(log)
        .context("the node's log")?;
    if args.no_store {
        child = child.args(["--no-store"]);
    }
    let done = child.output();
    record.finished_at = Some(jiff::Timestamp::now());
    // The node is done when every benchmark passed: a failed one is the
    // node's failure in `fleet status`, with the log's last lines.
    let code = match &done {
        Ok(d) => d.exit.code(),
        Err(_) => 127,
    };
    record.exit_code = Some(code);
    record.run_id = std::fs::read_to_string(&export)
        .ok()
        .and_then(|t| warpt_model::load_suite_run(&t).ok())
        .map(|r| r.id);
    (record.state, record.message) = match &done {
        Ok(d) if d.exit == ChildExit::Ran(Outcome::Success) => (NodeState::Done, None),
        Ok(d) => (
            NodeState::Failed,
            Some(format!("warpt exited {code}: {}", d.stderr_tail(3))),
        ),
        Err(e) => (
            NodeState::Failed,
            Some(format!("warpt could not start: {e}")),
        ),
    };
    dir.write_record(&record).map_err(fleet_error)?;
    Ok(match code {
        0 => Outcome::Success,
        _ => Outcome::Failures,
    })
}
