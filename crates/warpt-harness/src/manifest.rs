//! The reproducibility manifest recorded with every suite run.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};

use warpt_model::Manifest;

use crate::{Plan, RunOptions};

/// Environment variable prefixes that change how benchmarks behave.
const ENV_PREFIXES: &[&str] = &["OMP_", "RAYON_", "CUDA_", "WARPT_", "OPENBLAS_", "MKL_"];

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

/// Captures the manifest for running `plan` with `options` on this machine.
pub fn build_manifest(options: &RunOptions, plan: &Plan) -> Manifest {
    let os = warpt_system::os_info();
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            ENV_PREFIXES.iter().any(|p| k.starts_with(p)) || SLURM_VARS.contains(&k.as_str())
        })
        // WARPT_STORE may be a database URL with its password.
        .map(|(k, v)| (k, warpt_model::redact_secrets(&v)))
        .collect();
    Manifest {
        warpt_version: options.tool_version.clone(),
        build_profile: options.build_profile.clone(),
        // `--store postgres://user:PASSWORD@...` is never recorded.
        command_line: warpt_model::redact_command_line(&options.command_line),
        hostname: os.hostname,
        os: os.name,
        kernel: os.kernel,
        cpu_model: warpt_system::cpu_info().model,
        seed: options.seed,
        config: options.config(plan),
        env,
        git: std::env::current_dir()
            .ok()
            .and_then(|d| warpt_system::git_state(&d)),
        microcode: warpt_system::microcode(),
        governor: warpt_system::governor(),
        boost: warpt_system::boost(),
        smt: warpt_system::smt(),
        load_average: warpt_system::load_average(),
        warnings: Vec::new(),
        extra: BTreeMap::new(),
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
