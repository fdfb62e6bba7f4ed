//! Fleet jobs through Slurm, as the run path (warpt-run) starts them: a submission
//! checked before it waits in a queue ([`prepare`], [`submit`]), one node's
//! part of a job ([`node`]) and the nodes' exports recorded ([`collect`]).
//! The front end parses flags into a [`SubmitRequest`] and prints.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use warpt_run::child::ChildRun;
use warpt_run::outcome::ChildExit;
use warpt_run::{RunOutcome, UsageError, history};
use warpt_store::Location;

use crate::script::Nodes;
use crate::{FleetError, JobDir, Missing, NodeRecord, NodeState, Slurm, Submission};

/// Fleet errors for a front end: bad input and a missing Slurm are usage
/// errors (exit 2).
pub fn error(e: FleetError) -> anyhow::Error {
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

/// A fleet job as asked for (`warpt fleet submit`'s flags).
#[derive(Debug, Clone, Default)]
pub struct SubmitRequest {
    /// The Slurm partition.
    pub partition: Option<String>,
    /// How many nodes (default 1), unless `nodelist` names them.
    pub nodes: Option<u32>,
    /// These nodes, as a Slurm host list.
    pub nodelist: Option<String>,
    /// Node features the nodes must have.
    pub constraint: Option<String>,
    /// The job's time limit, in Slurm's format.
    pub time: Option<String>,
    /// More sbatch options.
    pub sbatch_args: Vec<String>,
    /// The job's name.
    pub job_name: String,
    /// The fleet directory every node sees.
    pub dir: PathBuf,
    /// The warpt binary the nodes run (default: this one).
    pub warpt: Option<PathBuf>,
    /// The shared store (`postgres://`); `None`: the configured one when it
    /// is PostgreSQL, else exports for `fleet collect`.
    pub store: Option<String>,
    /// Exports only, even when a shared store is configured.
    pub no_store: bool,
    /// The `benchmark run` arguments every node runs.
    pub run_args: Vec<String>,
}

/// A fleet job whose run arguments make a plan, with its sbatch script.
#[derive(Debug)]
pub struct Prepared {
    /// What is submitted.
    pub submission: Submission,
    /// The sbatch script.
    pub script: String,
}

impl Prepared {
    /// Whether the nodes record into a shared store (else exports).
    pub fn records_into_store(&self) -> bool {
        self.submission.store.is_some()
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("making {} absolute", p.display()))
}

/// Checks a request — no flag the fleet sets itself, a plan `benchmark run
/// --dry-run` accepts, a store every node can share — and writes its script.
pub fn prepare(req: &SubmitRequest) -> Result<Prepared> {
    for a in &req.run_args {
        if let Some(flag) = RESERVED.iter().find(|r| warpt_run::child::is_flag(a, r)) {
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
        .args(&req.run_args)
        .args(["--dry-run", "--no-store"])
        .output()
        .context("checking the run arguments with `benchmark run --dry-run`")?;
    if check.exit != ChildExit::Ran(RunOutcome::Success) {
        return Err(UsageError(format!(
            "the run arguments do not make a plan: {}",
            check.stderr.trim()
        ))
        .into());
    }
    let store = match (&req.store, req.no_store) {
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
    let nodes = match (&req.nodelist, req.nodes) {
        (Some(list), _) => Nodes::List(list.clone()),
        (None, Some(0)) => return Err(UsageError("--nodes 0: at least one node".into()).into()),
        (None, n) => Nodes::Count(n.unwrap_or(1)),
    };
    let submission = Submission {
        partition: req.partition.clone(),
        nodes,
        constraint: req.constraint.clone(),
        time: req.time.clone(),
        sbatch_args: req.sbatch_args.clone(),
        job_name: req.job_name.clone(),
        dir: absolute(&req.dir)?,
        warpt: absolute(req.warpt.as_deref().unwrap_or(&exe))?,
        store,
        run_args: req.run_args.clone(),
    };
    let script = submission.script().map_err(error)?;
    Ok(Prepared { submission, script })
}

/// A job Slurm accepted.
#[derive(Debug)]
pub struct Submitted {
    /// Slurm's job id.
    pub job: String,
    /// The sbatch script, kept in the fleet directory.
    pub script: PathBuf,
}

/// Submits a prepared job: its script and submission record written into
/// the fleet directory (private, atomic), then `sbatch`.
pub fn submit(prepared: &Prepared) -> Result<Submitted> {
    let slurm = Slurm;
    slurm.check().map_err(error)?;
    let dir = &prepared.submission.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    let script = dir.join(format!(
        "{}-{stamp}-{}.sbatch",
        prepared.submission.job_name,
        warpt_harness::random_suffix()
    ));
    crate::layout::write_private(&script, &prepared.script).map_err(error)?;
    let job = slurm.submit(&script).map_err(error)?;
    let job_dir = JobDir::new(dir, &job).map_err(error)?;
    job_dir.create().map_err(error)?;
    let record = prepared.submission.record(&job, &script);
    crate::layout::write_atomically(
        &job_dir.submission_path(),
        &serde_json::to_vec_pretty(&record)?,
    )
    .map_err(error)?;
    Ok(Submitted { job, script })
}

/// One node's part of a fleet job (inside its Slurm step): records that the
/// node started, runs `benchmark run` with the job's arguments (its export
/// in the fleet directory, its output in the node's log), records how it
/// ended. The node fails unless every benchmark passed.
pub fn node(fleet_dir: &Path, run_args: &[String], no_store: bool) -> Result<RunOutcome> {
    let job = std::env::var("SLURM_JOB_ID").map_err(|_| {
        UsageError("warpt fleet node runs inside a fleet job's step (SLURM_JOB_ID is unset)".into())
    })?;
    let node = std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| warpt_system::os_info().hostname);
    let dir = JobDir::new(fleet_dir, &job).map_err(error)?;
    dir.create().map_err(error)?;
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
    dir.write_record(&record).map_err(error)?;
    let export = dir.export_path(&node).map_err(error)?;
    let log_path = dir.log_path(&node).map_err(error)?;
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
        .args(run_args)
        .arg_pair("--export-file", &export)
        .all_output_to(log)
        .context("the node's log")?;
    if no_store {
        child = child.args(["--no-store"]);
    }
    let done = child.output();
    record.finished_at = Some(jiff::Timestamp::now());
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
        Ok(d) if d.exit == ChildExit::Ran(RunOutcome::Success) => (NodeState::Done, None),
        Ok(d) => (
            NodeState::Failed,
            Some(format!("warpt exited {code}: {}", d.stderr_tail(3))),
        ),
        Err(e) => (
            NodeState::Failed,
            Some(format!("warpt could not start: {e}")),
        ),
    };
    dir.write_record(&record).map_err(error)?;
    Ok(match code {
        0 => RunOutcome::Success,
        _ => RunOutcome::Failures,
    })
}

/// One node's export as [`collect`] recorded it.
#[derive(Debug, Clone, Serialize)]
pub struct CollectedNode {
    /// The node.
    pub node: String,
    /// The run its export holds.
    pub run_id: String,
    /// Whether it was new to the store (false: already there).
    pub added: bool,
}

/// What [`collect`] did.
#[derive(Debug, Serialize)]
pub struct Collected {
    /// The job.
    pub job: String,
    /// The store the exports went into (password masked).
    pub store: String,
    /// The exports recorded, per node.
    pub imported: Vec<CollectedNode>,
    /// The nodes that left no export, with their state.
    pub missing: Vec<Missing>,
}

/// Records the exports of fleet job `job` (in `fleet_dir`) into the store
/// (`store` or the configured one) — every file read before any is
/// recorded — and names the nodes that produced nothing. Slurm's view is
/// used when its commands are here (collecting may happen off the cluster).
pub fn collect(fleet_dir: &Path, job: &str, store: Option<&Path>) -> Result<Collected> {
    let job_dir = JobDir::new(fleet_dir, job).map_err(error)?;
    if !job_dir.path.exists() {
        return Err(UsageError(format!(
            "no fleet job {job} in {} (the fleet directory is --dir / WARPT_FLEET_DIR)",
            fleet_dir.display()
        ))
        .into());
    }
    let info = match Slurm.job(job) {
        Ok(info) => info,
        Err(FleetError::Usage(_)) => None,
        Err(e) => return Err(error(e)),
    };
    let records = job_dir.records().map_err(error)?;
    let exports = job_dir.exports().map_err(error)?;
    let location = history::path(store, None)?;
    let files: Vec<_> = exports.iter().map(|(_, p)| p.clone()).collect();
    let imported = history::import_files(&location, &files, Some("warpt"))?
        .into_iter()
        .zip(&exports)
        .map(|(i, (node, _))| CollectedNode {
            node: node.clone(),
            run_id: i.run_id,
            added: i.added,
        })
        .collect();
    let statuses = crate::node_statuses(info.as_ref(), &[], &records);
    Ok(Collected {
        job: job.to_string(),
        store: location.to_string(),
        imported,
        missing: crate::missing(&statuses, &exports),
    })
}
