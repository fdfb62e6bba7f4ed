//! A fleet job's directory, shared by the nodes, and the record each node
//! keeps there.
//!
//! ```text
//! DIR/slurm-JOB.out            the batch script's output (Slurm writes it)
//! DIR/job-JOB/submission.json  what was submitted (no password)
//! DIR/job-JOB/nodes/NODE.json  each node's record: running, then done or failed
//! DIR/job-JOB/exports/NODE.json  each node's suite run (warpt's export)
//! DIR/job-JOB/logs/NODE.log    each node's warpt output
//! ```

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::FleetError;

/// Where a node's benchmark run stands, as the node wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// warpt is running on the node.
    Running,
    /// It exited 0.
    Done,
    /// It exited otherwise, or could not start.
    Failed,
}

/// What a node writes about its run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// The node (Slurm's name for it).
    pub node: String,
    /// The Slurm job.
    pub job: String,
    /// Where it stands.
    pub state: NodeState,
    /// When warpt started there.
    pub started_at: Timestamp,
    /// When it ended.
    pub finished_at: Option<Timestamp>,
    /// warpt's exit status (or the signal as 128 + n).
    pub exit_code: Option<i32>,
    /// The suite run it recorded, when it wrote one.
    pub run_id: Option<String>,
    /// Why it failed: the last lines warpt printed.
    pub message: Option<String>,
}

/// The directory of one fleet job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDir {
    /// The job's own directory, `DIR/job-JOB`.
    pub path: PathBuf,
}

fn io(path: &Path, e: impl std::fmt::Display) -> FleetError {
    FleetError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// A node name that is safe as a file name.
fn file_name(node: &str) -> Result<String, FleetError> {
    if node.is_empty() || node.contains(['/', '\0']) || node.starts_with('.') {
        return Err(FleetError::Usage(format!("'{node}' is not a node name")));
    }
    Ok(node.to_string())
}

impl JobDir {
    /// Job `job` of the fleet directory `dir`.
    pub fn new(dir: &Path, job: &str) -> Result<Self, FleetError> {
        if job.is_empty() || !job.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(FleetError::Usage(format!(
                "'{job}' is not a Slurm job id (digits, or an array job's id_task)"
            )));
        }
        Ok(JobDir {
            path: dir.join(format!("job-{job}")),
        })
    }

    /// `nodes/NODE.json`.
    pub fn record_path(&self, node: &str) -> Result<PathBuf, FleetError> {
        Ok(self
            .path
            .join("nodes")
            .join(format!("{}.json", file_name(node)?)))
    }

    /// `exports/NODE.json`.
    pub fn export_path(&self, node: &str) -> Result<PathBuf, FleetError> {
        Ok(self
            .path
            .join("exports")
            .join(format!("{}.json", file_name(node)?)))
    }

    /// `logs/NODE.log`.
    pub fn log_path(&self, node: &str) -> Result<PathBuf, FleetError> {
        Ok(self
            .path
            .join("logs")
            .join(format!("{}.log", file_name(node)?)))
    }

    /// `submission.json`.
    pub fn submission_path(&self) -> PathBuf {
        self.path.join("submission.json")
    }

    /// Makes the directory and its parts.
    pub fn create(&self) -> Result<(), FleetError> {
        for sub in ["nodes", "exports", "logs"] {
            let p = self.path.join(sub);
            std::fs::create_dir_all(&p).map_err(|e| io(&p, e))?;
        }
        Ok(())
    }

    /// Writes `record` (whole, through a rename: a reader never sees half).
    pub fn write_record(&self, record: &NodeRecord) -> Result<(), FleetError> {
        let path = self.record_path(&record.node)?;
        write_atomically(
            &path,
            &serde_json::to_vec_pretty(record).map_err(|e| io(&path, e))?,
        )
    }

    /// Every node record, by node name.
    pub fn records(&self) -> Result<Vec<NodeRecord>, FleetError> {
        let mut out: Vec<NodeRecord> = Vec::new();
        for (_, path) in json_files(&self.path.join("nodes"))? {
            let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            out.push(serde_json::from_str(&text).map_err(|e| io(&path, e))?);
        }
        out.sort_by(|a, b| a.node.cmp(&b.node));
        Ok(out)
    }

    /// Every export file, with the node it came from, by node name.
    pub fn exports(&self) -> Result<Vec<(String, PathBuf)>, FleetError> {
        json_files(&self.path.join("exports"))
    }
}

/// The `*.json` files of `dir` (none when it does not exist), each with
/// its name's stem, by name.
fn json_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, FleetError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "json")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            out.push((stem.to_string(), path.clone()));
        }
    }
    out.sort();
    Ok(out)
}

/// Writes `bytes` to `path` through a temporary file beside it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), FleetError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))
}

/// Writes `text` to a new file readable by its owner only (a batch script
/// may hold the store's password).
pub fn write_private(path: &Path, text: &str) -> Result<(), FleetError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| io(path, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn records_round_trip_and_bad_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let job = JobDir::new(dir.path(), "42").unwrap();
        job.create().unwrap();
        assert!(job.records().unwrap().is_empty());
        let rec = NodeRecord {
            node: "n1".into(),
            job: "42".into(),
            state: NodeState::Running,
            started_at: Timestamp::UNIX_EPOCH,
            finished_at: None,
            exit_code: None,
            run_id: None,
            message: None,
        };
        job.write_record(&rec).unwrap();
        let done = NodeRecord {
            state: NodeState::Done,
            exit_code: Some(0),
            ..rec.clone()
        };
        job.write_record(&done).unwrap();
        assert_eq!(job.records().unwrap(), [done]);
        assert!(JobDir::new(dir.path(), "../x").is_err());
        assert!(job.record_path("../etc").is_err());
        std::fs::write(job.export_path("n1").unwrap(), "{}").unwrap();
        assert_eq!(job.exports().unwrap()[0].0, "n1");
    }
}
