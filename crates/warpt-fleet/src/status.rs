//! One state per node: Slurm's view of the job merged with what each node
//! recorded in the job directory.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::layout::{NodeRecord, NodeState};
use crate::slurm::JobInfo;

/// Where a node stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The job waits for nodes.
    Pending,
    /// warpt runs on the node (or is starting).
    Running,
    /// warpt exited 0 there.
    Done,
    /// warpt failed there, or the node produced nothing before the job ended.
    Failed,
}

impl Phase {
    /// The name printed and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "pending",
            Phase::Running => "running",
            Phase::Done => "done",
            Phase::Failed => "failed",
        }
    }
}

/// One node of a fleet job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeStatus {
    /// The node; `*` while Slurm has not assigned any.
    pub node: String,
    /// Where it stands.
    pub phase: Phase,
    /// Why it waits or failed (Slurm's reason, or warpt's last words).
    pub reason: Option<String>,
    /// The suite run it recorded.
    pub run_id: Option<String>,
    /// warpt's exit status there.
    pub exit_code: Option<i32>,
}

fn slurm_words(job: &JobInfo) -> String {
    let mut s = format!("job {}", job.state);
    if let Some(r) = &job.reason {
        s.push_str(&format!(" ({r})"));
    }
    if let Some(c) = job.exit_code.as_deref().filter(|c| *c != "0:0") {
        s.push_str(&format!(", exit code {c}"));
    }
    s
}

/// The state of every node of a job: those Slurm assigned, those asked for
/// by name (`expected`), and those that left a record.
pub fn node_statuses(
    job: Option<&JobInfo>,
    expected: &[String],
    records: &[NodeRecord],
) -> Vec<NodeStatus> {
    let mut nodes: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    if let Some(j) = job {
        nodes.extend(j.nodes.iter().map(String::as_str));
    }
    nodes.extend(records.iter().map(|r| r.node.as_str()));
    let ended = job.is_none_or(JobInfo::ended);
    if nodes.is_empty() {
        return match job {
            Some(j) if !ended => vec![NodeStatus {
                node: "*".into(),
                phase: if j.state == "PENDING" {
                    Phase::Pending
                } else {
                    Phase::Running
                },
                reason: j.reason.clone(),
                run_id: None,
                exit_code: None,
            }],
            Some(j) => vec![NodeStatus {
                node: "*".into(),
                phase: Phase::Failed,
                reason: Some(format!("{} before any node started", slurm_words(j))),
                run_id: None,
                exit_code: None,
            }],
            None => Vec::new(),
        };
    }
    nodes
        .into_iter()
        .map(|node| {
            let record = records.iter().find(|r| r.node == node);
            let (phase, reason) =
                match (record, job) {
                    (Some(r), _) if r.state == NodeState::Done => (Phase::Done, None),
                    (Some(r), _) if r.state == NodeState::Failed => (
                        Phase::Failed,
                        Some(r.message.clone().unwrap_or_else(|| {
                            format!("warpt exited {}", r.exit_code.unwrap_or(-1))
                        })),
                    ),
                    (Some(_), Some(_)) if !ended => (Phase::Running, None),
                    (Some(_), j) => (
                        Phase::Failed,
                        Some(match j {
                            Some(j) => format!("{} while warpt ran here", slurm_words(j)),
                            None => "warpt never finished here, and Slurm no longer knows the job"
                                .into(),
                        }),
                    ),
                    (None, Some(j)) if j.state == "PENDING" => (Phase::Pending, j.reason.clone()),
                    (None, Some(_)) if !ended => (Phase::Running, Some("starting".into())),
                    (None, Some(j)) => (
                        Phase::Failed,
                        Some(format!("produced nothing: {}", slurm_words(j))),
                    ),
                    (None, None) => (
                        Phase::Failed,
                        Some("produced nothing, and Slurm no longer knows the job".into()),
                    ),
                };
            NodeStatus {
                node: node.to_string(),
                phase,
                reason,
                run_id: record.and_then(|r| r.run_id.clone()),
                exit_code: record.and_then(|r| r.exit_code),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use jiff::Timestamp;

    use super::*;
    use Phase::{Done, Failed, Pending, Running};

    fn job(state: &str, reason: Option<&str>, nodes: &[&str]) -> JobInfo {
        JobInfo {
            state: state.into(),
            reason: reason.map(str::to_string),
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            exit_code: Some("1:0".into()),
            source: "scontrol",
        }
    }

    fn record(node: &str, state: NodeState, message: Option<&str>) -> NodeRecord {
        NodeRecord {
            node: node.into(),
            job: "9".into(),
            state,
            started_at: Timestamp::UNIX_EPOCH,
            finished_at: None,
            exit_code: Some(if state == NodeState::Failed { 1 } else { 0 }),
            run_id: Some(format!("run-{node}")),
            message: message.map(str::to_string),
        }
    }

    fn phases(s: &[NodeStatus]) -> Vec<(&str, Phase)> {
        s.iter().map(|n| (n.node.as_str(), n.phase)).collect()
    }

    #[test]
    fn a_pending_job_is_pending_with_slurms_reason() {
        let s = node_statuses(Some(&job("PENDING", Some("Resources"), &[])), &[], &[]);
        assert_eq!(phases(&s), [("*", Pending)]);
        assert_eq!(s[0].reason.as_deref(), Some("Resources"));
        let named = node_statuses(
            Some(&job("PENDING", Some("Priority"), &[])),
            &["a".into(), "b".into()],
            &[],
        );
        assert_eq!(phases(&named), [("a", Pending), ("b", Pending)]);
    }

    #[test]
    fn records_decide_while_slurm_fills_in_the_silent_nodes() {
        let running = job("RUNNING", None, &["a", "b", "c"]);
        let recs = [
            record("a", NodeState::Done, None),
            record("b", NodeState::Running, None),
        ];
        let s = node_statuses(Some(&running), &[], &recs);
        assert_eq!(phases(&s), [("a", Done), ("b", Running), ("c", Running)]);
        assert_eq!(s[0].run_id.as_deref(), Some("run-a"));
        assert_eq!(s[2].reason.as_deref(), Some("starting"));

        // The job ends: the node still "running" and the silent one failed.
        let ended = job("TIMEOUT", Some("TimeLimit"), &["a", "b", "c"]);
        let s = node_statuses(Some(&ended), &[], &recs);
        assert_eq!(phases(&s), [("a", Done), ("b", Failed), ("c", Failed)]);
        assert!(
            s[1].reason
                .as_deref()
                .unwrap()
                .contains("TIMEOUT (TimeLimit)")
        );
        assert!(
            s[2].reason
                .as_deref()
                .unwrap()
                .starts_with("produced nothing")
        );

        let failed = [record("a", NodeState::Failed, Some("validation failed"))];
        let s = node_statuses(Some(&job("FAILED", None, &["a"])), &[], &failed);
        assert_eq!(s[0].reason.as_deref(), Some("validation failed"));
    }

    #[test]
    fn a_job_cancelled_while_pending_failed_before_any_node() {
        let s = node_statuses(Some(&job("CANCELLED", None, &[])), &[], &[]);
        assert_eq!(phases(&s), [("*", Failed)]);
        assert!(node_statuses(None, &[], &[]).is_empty());
    }
}

/// A node that left no export: its state and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Missing {
    /// The node.
    pub node: String,
    /// Its phase's name.
    pub state: &'static str,
    /// What it (or Slurm) said.
    pub reason: Option<String>,
}

/// The nodes of `statuses` without an export among `exports` (node, path).
pub fn missing(statuses: &[NodeStatus], exports: &[(String, std::path::PathBuf)]) -> Vec<Missing> {
    statuses
        .iter()
        .filter(|s| s.node != "*" && !exports.iter().any(|(n, _)| *n == s.node))
        .map(|s| Missing {
            node: s.node.clone(),
            state: s.phase.as_str(),
            reason: s.reason.clone(),
        })
        .collect()
}

/// What [`watch`] saw last.
#[derive(Debug)]
pub enum Watched {
    /// Every node ended (or the caller did not wait).
    Settled(Vec<NodeStatus>),
    /// Nodes were still pending or running when the time ran out.
    TimedOut(Vec<NodeStatus>, std::time::Duration),
}

/// The nodes of `job` (Slurm's view merged with the records in `dir`),
/// once, or — with `wait` — until none is pending or running, or until
/// `timeout` passes.
pub fn watch(
    slurm: &crate::Slurm,
    dir: &crate::JobDir,
    job: &str,
    wait: bool,
    timeout: Option<std::time::Duration>,
) -> Result<Watched, crate::FleetError> {
    let start = std::time::Instant::now();
    loop {
        let info = slurm.job(job)?;
        let records = dir.records()?;
        if info.is_none() && records.is_empty() && !dir.path.exists() {
            return Err(crate::FleetError::Usage(format!(
                "no fleet job {job}: Slurm does not know it and {} does not exist",
                dir.path.display()
            )));
        }
        let statuses = node_statuses(info.as_ref(), &[], &records);
        let active = statuses
            .iter()
            .any(|s| matches!(s.phase, Phase::Pending | Phase::Running));
        if !wait || !active {
            return Ok(Watched::Settled(statuses));
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            return Ok(Watched::TimedOut(statuses, start.elapsed()));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
