//! The sbatch script of a fleet submission.
//!
//! One batch job on exclusive nodes (nothing else runs beside a benchmark),
//! one task per node started by a single `srun`, so every node measures in
//! the same window and a node that fails does not stop the others
//! (`--kill-on-bad-exit=0`). Each task is `warpt fleet node`, which records
//! what its node did in the job directory and runs `warpt benchmark run`.

use std::path::PathBuf;

use crate::FleetError;

/// Which nodes a submission asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nodes {
    /// Any N nodes of the partition.
    Count(u32),
    /// These nodes (a Slurm host list, e.g. `node[01-04],gpu7`).
    List(String),
}

/// What `warpt fleet submit` asks Slurm for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--nodes` or `--nodelist`.
    pub nodes: Nodes,
    /// `--constraint` (node features).
    pub constraint: Option<String>,
    /// `--time` (Slurm's time format).
    pub time: Option<String>,
    /// More `#SBATCH` options, as given (`--account=...`, `--qos=...`).
    pub sbatch_args: Vec<String>,
    /// The job name.
    pub job_name: String,
    /// The fleet directory (absolute; every node must see it).
    pub dir: PathBuf,
    /// The warpt binary the nodes run (absolute; every node must see it).
    pub warpt: PathBuf,
    /// The shared store's URL; `None`: exports in the directory only.
    pub store: Option<String>,
    /// The `warpt benchmark run` arguments.
    pub run_args: Vec<String>,
}

/// `s` quoted for a POSIX shell.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@%+".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A value for an `#SBATCH` line: one line, no blanks (Slurm reads these
/// lines itself, not through a shell).
fn directive_value(flag: &str, value: &str) -> Result<String, FleetError> {
    if value.is_empty() || value.contains(char::is_whitespace) {
        return Err(FleetError::Usage(format!(
            "--{flag} '{value}': a Slurm value without blanks is needed"
        )));
    }
    Ok(value.to_string())
}

/// A job name is also the start of the script's file name in the fleet
/// directory: letters, digits, `.`, `_` and `-`, not starting with a dot,
/// so it can name nothing outside that directory.
pub fn check_job_name(name: &str) -> Result<(), FleetError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(FleetError::Usage(format!(
            "--job-name '{name}': letters, digits, '.', '_' and '-' only (not starting with '.'), \
             at most 128: it names the script in --dir"
        )))
    }
}

impl Submission {
    /// What `fleet submit` records beside the job: the job, its script,
    /// when, the store (its password masked), the nodes, the partition and
    /// the run arguments.
    pub fn record(&self, job: &str, script: &std::path::Path) -> serde_json::Value {
        serde_json::json!({
            "job": job,
            "script": script,
            "submitted_at": jiff::Timestamp::now(),
            "store": self.store.as_deref().map(warpt_model::redact_secrets),
            "nodes": match &self.nodes {
                Nodes::Count(n) => serde_json::json!(n),
                Nodes::List(l) => serde_json::json!(l),
            },
            "partition": self.partition,
            "run_args": self.run_args,
        })
    }

    /// The script text.
    pub fn script(&self) -> Result<String, FleetError> {
        check_job_name(&self.job_name)?;
        let mut s = String::from("#!/bin/bash\n");
        s.push_str("# Written by `warpt fleet submit`: every node runs `warpt benchmark run`\n");
        s.push_str("# once, on exclusive nodes, one task per node.\n");
        let mut directive = |flag: &str, value: &str| -> Result<(), FleetError> {
            s.push_str(&format!(
                "#SBATCH --{flag}={}\n",
                directive_value(flag, value)?
            ));
            Ok(())
        };
        directive("job-name", &self.job_name)?;
        match &self.nodes {
            Nodes::Count(n) => directive("nodes", &n.to_string())?,
            Nodes::List(list) => directive("nodelist", list)?,
        }
        directive("ntasks-per-node", "1")?;
        if let Some(p) = &self.partition {
            directive("partition", p)?;
        }
        if let Some(c) = &self.constraint {
            directive("constraint", c)?;
        }
        if let Some(t) = &self.time {
            directive("time", t)?;
        }
        let dir = self.dir.to_str().ok_or_else(|| {
            FleetError::Usage(format!(
                "{}: the directory must be UTF-8",
                self.dir.display()
            ))
        })?;
        directive("output", &format!("{dir}/slurm-%j.out"))?;
        s.push_str("#SBATCH --exclusive\n");
        for a in &self.sbatch_args {
            if !a.starts_with('-') || a.contains(char::is_whitespace) {
                return Err(FleetError::Usage(format!(
                    "--sbatch-arg '{a}': one sbatch option without blanks, such as --account=proj"
                )));
            }
            s.push_str(&format!("#SBATCH {a}\n"));
        }
        s.push_str("set -u\n");
        match &self.store {
            Some(url) => s.push_str(&format!("export WARPT_STORE={}\n", quote(url))),
            None => s.push_str("# No shared store: each node writes its export; `warpt fleet collect` imports them.\n"),
        }
        let warpt = self.warpt.to_str().ok_or_else(|| {
            FleetError::Usage(format!(
                "{}: the warpt path must be UTF-8",
                self.warpt.display()
            ))
        })?;
        let mut line = format!(
            "exec srun --kill-on-bad-exit=0 --ntasks-per-node=1 {} fleet node --dir {}",
            quote(warpt),
            quote(dir)
        );
        if self.store.is_none() {
            line.push_str(" --no-store");
        }
        line.push_str(" --");
        for a in &self.run_args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        s.push_str(&line);
        s.push('\n');
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn submission() -> Submission {
        Submission {
            partition: Some("batch".into()),
            nodes: Nodes::Count(4),
            constraint: Some("avx512".into()),
            time: Some("00:30:00".into()),
            sbatch_args: vec!["--account=proj".into()],
            job_name: "warpt-fleet".into(),
            dir: "/shared/fleet".into(),
            warpt: "/shared/bin/warpt".into(),
            store: Some("postgres://w:p@db/h".into()),
            run_args: vec![
                "--suite".into(),
                "micro".into(),
                "--param".into(),
                "name=it's".into(),
            ],
        }
    }

    #[test]
    fn the_script_asks_for_exclusive_nodes_and_runs_one_task_per_node() {
        let text = submission().script().unwrap();
        for line in [
            "#SBATCH --nodes=4",
            "#SBATCH --partition=batch",
            "#SBATCH --constraint=avx512",
            "#SBATCH --time=00:30:00",
            "#SBATCH --exclusive",
            "#SBATCH --ntasks-per-node=1",
            "#SBATCH --account=proj",
            "#SBATCH --output=/shared/fleet/slurm-%j.out",
            "export WARPT_STORE=postgres://w:p@db/h",
            "exec srun --kill-on-bad-exit=0 --ntasks-per-node=1 /shared/bin/warpt fleet node \
             --dir /shared/fleet -- --suite micro --param 'name=it'\\''s'",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
        let mut exports = submission();
        exports.store = None;
        exports.nodes = Nodes::List("node[01-03]".into());
        let text = exports.script().unwrap();
        assert!(text.contains("#SBATCH --nodelist=node[01-03]\n"));
        assert!(text.contains(" --no-store --"));
        assert!(!text.contains("WARPT_STORE"));
    }

    #[test]
    fn values_slurm_cannot_read_are_refused() {
        for bad in ["../x", "a/b", ".hidden", ""] {
            let mut s = submission();
            s.job_name = bad.into();
            assert!(matches!(s.script(), Err(FleetError::Usage(_))), "{bad}");
        }
        let mut s = submission();
        s.partition = Some("a b".into());
        assert!(matches!(s.script(), Err(FleetError::Usage(_))));
        let mut s = submission();
        s.sbatch_args = vec!["account=x".into()];
        assert!(matches!(s.script(), Err(FleetError::Usage(_))));
    }

    #[test]
    fn quoting_survives_the_shell() {
        for arg in ["plain", "with space", "it's", "$HOME", "a\"b", ""] {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s {}", quote(arg))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), arg);
        }
    }
}
