//! `warpt fleet node`: one node's part of a fleet job, started by `srun`.
//!
//! It records on the shared directory that the node started, runs
//! `warpt benchmark run` with the job's arguments (its export in the
//! directory, its output in the node's log), and records how it ended, so
//! `fleet status` can tell done from failed per node and say why.

use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use warpt_fleet::{JobDir, NodeRecord, NodeState};

use crate::cli::FleetNodeArgs;
use crate::commands::fleet::fleet_error;
use crate::{Outcome, UsageError};

/// The last `n` non-empty lines of `text`, joined.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

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
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut command = Command::new(std::env::current_exe().context("locating warpt")?);
    command
        .args(["benchmark", "run"])
        .args(&args.run_args)
        .arg("--export-file")
        .arg(&export)
        .env("WARPT_NO_PROGRESS", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("the node's log")?)
        .stderr(log);
    if args.no_store {
        command.arg("--no-store");
    }
    let status = command.status();
    record.finished_at = Some(jiff::Timestamp::now());
    let code = match &status {
        Ok(s) => s
            .code()
            .unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(s).unwrap_or(0)),
        Err(_) => 127,
    };
    record.exit_code = Some(code);
    record.run_id = std::fs::read_to_string(&export)
        .ok()
        .and_then(|t| warpt_model::load_suite_run(&t).ok())
        .map(|r| r.id);
    let log_text = std::fs::read_to_string(&log_path).unwrap_or_default();
    (record.state, record.message) = match (&status, code) {
        (Ok(_), 0) => (NodeState::Done, None),
        (Ok(_), code) => (
            NodeState::Failed,
            Some(format!("warpt exited {code}: {}", tail(&log_text, 3))),
        ),
        (Err(e), _) => (
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
