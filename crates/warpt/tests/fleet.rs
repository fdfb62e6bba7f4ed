//! `warpt fleet` against a real Slurm: scripts/test starts munged,
//! slurmctld and slurmd on this host (WARPT_TEST_SLURM_CONF names its
//! slurm.conf), so a submitted job really runs warpt on the node. Runs
//! arrive in a real PostgreSQL store, or as exports that `collect`
//! imports; a node whose run fails, and one whose warpt cannot start, are
//! reported failed with the reason.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::ffi::OsString;
use std::path::Path;

use serde_json::Value;
use warpt_store::testing::TestStore;

mod common;

/// The tiny run every node makes.
const RUN: &[&str] = &common::QUICK_MEM_LATENCY;

fn slurm_conf() -> Option<String> {
    let conf = std::env::var("WARPT_TEST_SLURM_CONF").ok();
    if conf.is_none() {
        eprintln!("WARPT_TEST_SLURM_CONF unset: scripts/test starts the Slurm these tests use");
    }
    conf
}

/// warpt with `store` as WARPT_STORE and Slurm's configuration.
fn warpt(conf: &str, store: &OsString, args: &[&str]) -> (i32, String, String) {
    common::outcome(
        common::warpt()
            .env("WARPT_STORE", store)
            .env("SLURM_CONF", conf)
            .args(args),
    )
}

/// Submits `run` into `dir`; returns the job id.
fn submit(conf: &str, store: &OsString, dir: &Path, extra: &[&str], run: &[&str]) -> String {
    let mut args = vec!["fleet", "submit", "--json", "--dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(run);
    let (code, out, err) = warpt(conf, store, &args);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["job"].as_str().unwrap().to_string()
}

/// `warpt fleet VERB JOB --json --dir DIR [extra]`: (exit code, JSON, stderr).
fn fleet_json(
    conf: &str,
    store: &OsString,
    verb: &str,
    job: &str,
    dir: &Path,
    extra: &[&str],
) -> (i32, Value, String) {
    let mut args = vec!["fleet", verb, job, "--json", "--dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (code, out, err) = warpt(conf, store, &args);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v, err)
}

/// Waits for the job's end; returns (exit code, per-node JSON).
fn wait(conf: &str, store: &OsString, dir: &Path, job: &str) -> (i32, Vec<Value>) {
    let (code, v, _) = fleet_json(
        conf,
        store,
        "status",
        job,
        dir,
        &["--wait", "--timeout", "300"],
    );
    (code, serde_json::from_value(v).unwrap())
}

#[test]
fn a_fleet_job_runs_on_the_node_and_its_run_arrives_in_the_shared_store() {
    let Some(conf) = slurm_conf() else { return };
    let Some(pg) = TestStore::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    let store = pg.arg();
    let job = submit(&conf, &store, &fleet, &[], RUN);
    // Right after submission the node is pending, starting or running.
    let (_, early, _) = fleet_json(&conf, &store, "status", &job, &fleet, &[]);
    assert!(!early.as_array().unwrap().is_empty(), "{early}");

    let (code, nodes) = wait(&conf, &store, &fleet, &job);
    assert_eq!(code, 0, "{nodes:?}");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0]["phase"], "done", "{nodes:?}");
    let run_id = nodes[0]["run_id"].as_str().unwrap().to_string();

    // The node recorded straight into PostgreSQL, tagged with its job.
    let (code, out, err) = warpt(
        &conf,
        &store,
        &[
            "results",
            "query",
            "SELECT id, slurm_job FROM suite_runs",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["id"], run_id.as_str());
    assert_eq!(rows[0]["slurm_job"], job.as_str());
    // Its export is in the fleet directory too; collecting adds nothing.
    let (code, collected, err) = fleet_json(&conf, &store, "collect", &job, &fleet, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(collected["imported"][0]["added"], false);
    assert_eq!(collected["missing"].as_array().unwrap().len(), 0);
    // The fleet job selects its runs for the cross-machine report.
    let (code, out, err) = warpt(
        &conf,
        &store,
        &[
            "report",
            "--by",
            "machine",
            "--fleet-job",
            &job,
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["machines"].as_array().unwrap().len(), 1);
    // The script holds the URL; it is readable by its owner only.
    let script = std::fs::read_dir(&fleet)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sbatch"))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        script.metadata().unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .contains("#SBATCH --exclusive")
    );
}

#[test]
fn without_a_database_the_nodes_write_exports_that_collect_imports() {
    let Some(conf) = slurm_conf() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    let store = OsString::from(dir.path().join("local.db"));
    let job = submit(&conf, &store, &fleet, &[], RUN);
    let (code, nodes) = wait(&conf, &store, &fleet, &job);
    assert_eq!(code, 0, "{nodes:?}");
    assert!(
        !dir.path().join("local.db").exists(),
        "nodes record nothing locally"
    );
    let (code, collected, err) = fleet_json(&conf, &store, "collect", &job, &fleet, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(collected["imported"][0]["added"], true);
    assert_eq!(collected["imported"][0]["run_id"], nodes[0]["run_id"]);
    let (code, out, _) = warpt(&conf, &store, &["results", "list", "--json"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed[0]["id"], nodes[0]["run_id"]);
}

#[test]
fn failing_nodes_are_reported_failed_with_the_reason() {
    let Some(conf) = slurm_conf() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    let store = OsString::from(dir.path().join("local.db"));

    // A benchmark that fails on the node: warpt runs and exits 1.
    let config = dir.path().join("warpt.toml");
    std::fs::write(
        &config,
        "[[benchmarks]]\nname = \"broken\"\ncommand = \"echo the solver diverged >&2; exit 3\"\n",
    )
    .unwrap();
    let job = submit(
        &conf,
        &store,
        &fleet,
        &[],
        &[
            "--suite",
            "user",
            "--config",
            config.to_str().unwrap(),
            "--duration",
            "0.1",
        ],
    );
    let (code, nodes) = wait(&conf, &store, &fleet, &job);
    assert_eq!(code, 1, "{nodes:?}");
    assert_eq!(nodes[0]["phase"], "failed");
    let reason = nodes[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("warpt exited 1"), "{reason}");

    // A warpt the node cannot start: Slurm's words say why nothing came.
    let job = submit(
        &conf,
        &store,
        &fleet,
        &["--warpt", "/nonexistent/warpt"],
        RUN,
    );
    let (code, nodes) = wait(&conf, &store, &fleet, &job);
    assert_eq!(code, 1, "{nodes:?}");
    assert_eq!(nodes[0]["phase"], "failed");
    let reason = nodes[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("produced nothing: job FAILED"),
        "{reason}"
    );
    let (code, collected, _) = fleet_json(&conf, &store, "collect", &job, &fleet, &[]);
    assert_eq!(code, 1, "a node produced nothing");
    assert_eq!(collected["missing"][0]["state"], "failed");
}

#[test]
fn bad_submissions_are_refused_before_slurm_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = OsString::from(dir.path().join("s.db"));
    let fleet = dir.path().join("fleet");
    let run = |path: &str, args: &[&str]| {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("warpt"))
            .env("PATH", path)
            .env("WARPT_STORE", &store)
            .args(["fleet", "submit", "--dir", fleet.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // No Slurm on PATH: exit 2, saying what is needed.
    let (code, err) = run("/nonexistent", &["--", "--benchmark", "mem_latency"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("sbatch not found") && err.contains("slurm-client"),
        "{err}"
    );
    // A plan that does not parse, a flag the fleet sets itself, a SQLite
    // file as the shared store.
    let path = std::env::var("PATH").unwrap();
    let (code, err) = run(&path, &["--", "--benchmark", "no_such_benchmark"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no_such_benchmark"), "{err}");
    let (code, err) = run(
        &path,
        &["--", "--benchmark", "mem_latency", "--store", "x.db"],
    );
    assert_eq!(code, 2, "{err}");
    let (code, err) = run(
        &path,
        &["--store", "x.db", "--", "--benchmark", "mem_latency"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("postgres://"), "{err}");
    assert!(!fleet.exists(), "nothing written");
    // The script, printed: exclusive nodes, one task per node.
    let (code, _) = run(
        &path,
        &[
            "--dry-run",
            "-N",
            "3",
            "-p",
            "batch",
            "--",
            "--benchmark",
            "mem_latency",
        ],
    );
    assert_eq!(code, 0);
}
