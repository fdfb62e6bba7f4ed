//! The reproducibility manifest recorded with every suite run.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};

use warpt_model::{GitState, Manifest};

use crate::{Plan, RunOptions};

/// Environment variable prefixes that change how benchmarks behave.
const ENV_PREFIXES: &[&str] = &["OMP_", "RAYON_", "CUDA_", "WARPT_", "OPENBLAS_", "MKL_"];

/// warpt's own variables whose values are settings, recorded as they are.
/// Any other `WARPT_*` variable (the store's URL, an API key an
/// `api_key_env` names, a test's secret) is recorded by name only.
const WARPT_SETTINGS: &[&str] = &[
    "WARPT_BURNIN_SECONDS",
    "WARPT_CHROMIUM",
    "WARPT_DURATION",
    "WARPT_FLEET_DIR",
    "WARPT_IN_PROCESS",
    "WARPT_LAST_LEVEL_CACHE",
    "WARPT_NO_PROGRESS",
    "WARPT_PARAMS",
    "WARPT_PRECISION",
    "WARPT_PYTHON",
    "WARPT_SEED",
    "WARPT_SELFTEST",
    "WARPT_TIMEOUT_MULTIPLIER",
    "WARPT_TORCH_PROFILE",
];

/// What a variable of a recorded prefix is recorded as: its value
/// (secrets in URLs masked), or for a `WARPT_*` variable that is not a
/// setting, that it was set.
fn recorded_value(name: &str, value: &str) -> String {
    if name.starts_with("WARPT_") && !WARPT_SETTINGS.contains(&name) {
        "(set; not recorded)".to_string()
    } else {
        warpt_model::redact_secrets(value)
    }
}

/// Slurm's variables that say which job, node and cluster a run was part
/// of (a fleet job's runs are found by `SLURM_JOB_ID`).
const SLURM_VARS: &[&str] = &[
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_NODELIST",
    "SLURM_CLUSTER_NAME",
    "SLURMD_NODENAME",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
];

/// What a manifest says about the machine and the source tree: the same
/// for every plan of one front end's run, so one that runs many
/// one-benchmark plans (`harness run`, a plan per trial) captures it once
/// ([`RunOptions::machine`]): `systemd-detect-virt` and `git` started for
/// every trial cost 25-30 ms of each.
#[derive(Debug, Clone)]
pub struct MachineFacts {
    os: warpt_model::OsInfo,
    cpu_model: String,
    git: Option<GitState>,
    microcode: Option<String>,
    governor: Option<String>,
    boost: Option<bool>,
    smt: Option<String>,
}

impl MachineFacts {
    /// Reads them now (the source tree: the current directory's).
    pub fn capture() -> Self {
        MachineFacts {
            os: warpt_system::os_info(),
            cpu_model: warpt_system::cpu_info().model,
            git: std::env::current_dir()
                .ok()
                .and_then(|d| warpt_system::git_state(&d)),
            microcode: warpt_system::microcode(),
            governor: warpt_system::governor(),
            boost: warpt_system::boost(),
            smt: warpt_system::smt(),
        }
    }
}

/// Captures the manifest for running `plan` with `options` on this machine
/// (its facts as [`RunOptions::machine`] holds them, else read now).
pub fn build_manifest(options: &RunOptions, plan: &Plan) -> Manifest {
    let facts = options
        .machine
        .clone()
        .unwrap_or_else(MachineFacts::capture);
    let os = facts.os;
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            ENV_PREFIXES.iter().any(|p| k.starts_with(p)) || SLURM_VARS.contains(&k.as_str())
        })
        .map(|(k, v)| {
            let v = recorded_value(&k, &v);
            (k, v)
        })
        .collect();
    Manifest {
        warpt_version: options.tool_version.clone(),
        build_profile: options.build_profile.clone(),
        // `--store postgres://user:PASSWORD@...` is never recorded.
        command_line: warpt_model::redact_command_line(&options.command_line),
        hostname: os.hostname,
        os: os.name,
        kernel: os.kernel,
        cpu_model: facts.cpu_model,
        seed: options.seed,
        config: options.config(plan),
        env,
        git: facts.git,
        microcode: facts.microcode,
        governor: facts.governor,
        boost: facts.boost,
        smt: facts.smt,
        load_average: warpt_system::load_average(),
        warnings: Vec::new(),
        extra: BTreeMap::new(),
        labels: options.labels.clone(),
        description: options.description.clone(),
    }
}

/// A new run's id: its start time and six random hex digits.
pub fn new_run_id(start: jiff::Timestamp) -> String {
    warpt_model::run_id(start, &random_suffix())
}

/// Six random hex digits for run ids and export names (not for secrets).
pub fn random_suffix() -> String {
    let x = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{:06x}", x & 0xff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warpt_variables_are_recorded_by_name_unless_they_are_settings() {
        assert_eq!(recorded_value("WARPT_DURATION", "2"), "2");
        assert_eq!(recorded_value("WARPT_PARAMS", "threads=1"), "threads=1");
        for secret in ["WARPT_OPENAI_KEY", "WARPT_STORE", "WARPT_ANYTHING_NEW"] {
            assert_eq!(recorded_value(secret, "sk-abc"), "(set; not recorded)");
        }
        // Other prefixes keep their values, with URL passwords masked.
        assert_eq!(recorded_value("OMP_NUM_THREADS", "4"), "4");
        assert!(!recorded_value("CUDA_X", "postgres://u:pw@h/db").contains("pw"));
    }

    #[test]
    fn facts_captured_once_are_the_manifest_s() {
        let plan = Plan {
            suite: "s".into(),
            components: Vec::new(),
            label: "s".into(),
            entries: Vec::new(),
            unavailable: Vec::new(),
            overrides: BTreeMap::new(),
        };
        let mut options = RunOptions::new("0", "debug");
        let mut facts = MachineFacts::capture();
        facts.cpu_model = "planted".into();
        facts.smt = Some("planted".into());
        options.machine = Some(facts);
        let m = build_manifest(&options, &plan);
        assert_eq!(
            (m.cpu_model.as_str(), m.smt.as_deref()),
            ("planted", Some("planted"))
        );
        // Without them the manifest reads the machine itself.
        options.machine = None;
        assert_ne!(build_manifest(&options, &plan).cpu_model, "planted");
    }
}
