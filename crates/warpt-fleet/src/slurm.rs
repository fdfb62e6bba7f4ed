//! Slurm's commands, called as a user would call them, and what they print
//! read back: `sbatch --parsable`, `scontrol show job -o` (pending, running
//! and recently ended jobs), `sacct` (older ones, where accounting is on)
//! and `scontrol show hostnames`.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

use crate::FleetError;

/// What to tell a user whose machine has no Slurm commands.
pub const NEEDED: &str = "warpt fleet dispatches runs through Slurm: it needs Slurm's client \
    commands (sbatch, scontrol; Debian's slurm-client) on PATH and a reachable slurmctld \
    (SLURM_CONF names the cluster's slurm.conf when it is not in /etc/slurm)";

/// Slurm's view of one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobInfo {
    /// The job's state: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED,
    /// TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, ...
    pub state: String,
    /// Why it waits or why it ended, as Slurm words it (`Resources`,
    /// `NonZeroExitCode`, ...), when Slurm gives one.
    pub reason: Option<String>,
    /// The nodes it was given (empty while pending).
    pub nodes: Vec<String>,
    /// The batch script's exit code, `status:signal`.
    pub exit_code: Option<String>,
    /// Where the view came from: `scontrol` or `sacct`.
    pub source: &'static str,
}

impl JobInfo {
    /// Whether the job has ended (any state but pending, running and the
    /// transitional ones).
    pub fn ended(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "CONFIGURING"
                | "COMPLETING"
                | "SUSPENDED"
                | "REQUEUED"
                | "RESIZING"
                | "SIGNALING"
                | "STAGE_OUT"
                | "STOPPED"
        )
    }
}

/// The Slurm commands.
#[derive(Debug, Clone, Default)]
pub struct Slurm;

fn run(program: &str, args: &[&str]) -> Result<String, FleetError> {
    let command = format!("{program} {}", args.join(" "));
    let out = Command::new(program).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            FleetError::Usage(format!("{program} not found on PATH. {NEEDED}"))
        } else {
            FleetError::Slurm {
                command: command.clone(),
                message: e.to_string(),
            }
        }
    })?;
    if !out.status.success() {
        return Err(FleetError::Slurm {
            command,
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `KEY=VALUE` fields of `scontrol show job -o`'s one line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|tok| tok.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .filter(|v| !v.is_empty() && *v != "(null)" && *v != "None")
}

impl Slurm {
    /// Whether `sbatch` can be started at all.
    pub fn check(&self) -> Result<(), FleetError> {
        run("sbatch", &["--version"]).map(|_| ())
    }

    /// Submits `script`; returns the job id.
    pub fn submit(&self, script: &Path) -> Result<String, FleetError> {
        let path = script.to_str().ok_or_else(|| {
            FleetError::Usage(format!("{}: the path must be UTF-8", script.display()))
        })?;
        let out = run("sbatch", &["--parsable", path])?;
        // `ID` or `ID;CLUSTER`.
        let id = out.trim().split(';').next().unwrap_or_default().to_string();
        if id.is_empty() {
            return Err(FleetError::Slurm {
                command: format!("sbatch --parsable {path}"),
                message: format!("printed no job id: {out:?}"),
            });
        }
        Ok(id)
    }

    /// Slurm's view of job `job`, or `None` when Slurm no longer knows it
    /// (ended longer ago than `MinJobAge`, and no accounting).
    pub fn job(&self, job: &str) -> Result<Option<JobInfo>, FleetError> {
        match run("scontrol", &["show", "job", "-o", job]) {
            Ok(out) => {
                if let Some(line) = out.lines().find(|l| l.contains("JobState=")) {
                    return Ok(Some(self.read_scontrol(line)?));
                }
            }
            Err(FleetError::Slurm { message, .. }) if message.contains("Invalid job id") => {}
            Err(e) => return Err(e),
        }
        // Ended long ago: accounting, where the cluster keeps it.
        match run(
            "sacct",
            &["-j", job, "-X", "-n", "-P", "-o", "State,ExitCode,NodeList"],
        ) {
            Ok(out) => Ok(out.lines().find(|l| !l.trim().is_empty()).map(|line| {
                let mut parts = line.split('|');
                let state = parts.next().unwrap_or_default();
                let exit_code = parts.next().filter(|s| !s.is_empty()).map(str::to_string);
                let nodes = parts
                    .next()
                    .filter(|s| !s.is_empty() && *s != "None assigned")
                    .map(|l| self.hostnames(l).unwrap_or_else(|_| vec![l.to_string()]))
                    .unwrap_or_default();
                JobInfo {
                    // "CANCELLED by 1000" → "CANCELLED".
                    state: state
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    reason: state.split_once(' ').map(|(_, r)| r.to_string()),
                    nodes,
                    exit_code,
                    source: "sacct",
                }
            })),
            Err(_) => Ok(None),
        }
    }

    fn read_scontrol(&self, line: &str) -> Result<JobInfo, FleetError> {
        let nodes = match field(line, "NodeList") {
            Some(list) => self.hostnames(list)?,
            None => Vec::new(),
        };
        Ok(JobInfo {
            state: field(line, "JobState").unwrap_or("UNKNOWN").to_string(),
            reason: field(line, "Reason").map(str::to_string),
            nodes,
            exit_code: field(line, "ExitCode").map(str::to_string),
            source: "scontrol",
        })
    }

    /// A host list (`node[01-03],gpu7`) expanded.
    pub fn hostnames(&self, list: &str) -> Result<Vec<String>, FleetError> {
        Ok(run("scontrol", &["show", "hostnames", list])?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scontrols_fields_are_read_and_empty_ones_are_none() {
        let line = "JobId=7 JobName=warpt-fleet JobState=PENDING Reason=Resources Dependency=(null) \
                    NodeList=(null) ExitCode=0:0 Command=/tmp/x.sh";
        assert_eq!(field(line, "JobState"), Some("PENDING"));
        assert_eq!(field(line, "Reason"), Some("Resources"));
        assert_eq!(field(line, "NodeList"), None);
        assert_eq!(field(line, "ExitCode"), Some("0:0"));
        assert_eq!(field(line, "Job"), None);
        assert_eq!(field("JobState=RUNNING Reason=None", "Reason"), None);
    }

    #[test]
    fn only_the_waiting_and_running_states_are_not_ended() {
        let info = |state: &str| JobInfo {
            state: state.into(),
            reason: None,
            nodes: Vec::new(),
            exit_code: None,
            source: "scontrol",
        };
        assert!(!info("PENDING").ended());
        assert!(!info("RUNNING").ended());
        assert!(!info("COMPLETING").ended());
        for s in [
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
        ] {
            assert!(info(s).ended(), "{s}");
        }
    }
}
