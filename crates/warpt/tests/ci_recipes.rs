//! The CI recipes in `examples/ci/` are valid YAML, and every shell step
//! they contain runs for real against a temporary repository (GitHub and
//! GitLab themselves stand outside: `gh` is a script that records its
//! arguments, and the API token the GitLab note needs is unset).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;

use common::git;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;

fn recipe(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/ci")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A project with a benchmark, a Makefile and an `origin` holding `main`;
/// its checkout (on a pull-request branch one commit ahead) and a `bin`
/// directory with warpt and a recording `gh`.
fn project(root: &Path) -> (PathBuf, PathBuf) {
    let work = root.join("work");
    std::fs::create_dir(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(
        work.join("warpt-bench.toml"),
        "[[benchmarks]]\nname = \"work\"\ncommand = \"sh work.sh\"\n",
    )
    .unwrap();
    std::fs::write(work.join("work.sh"), "sleep 0.02\n").unwrap();
    std::fs::write(work.join("Makefile"), "all:\n\ttrue\n").unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "base"]);
    let origin = root.join("origin.git");
    git(
        root,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            origin.to_str().unwrap(),
        ],
    );
    git(
        &work,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&work, &["fetch", "-q", "origin"]);
    git(&work, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(work.join("README"), "a change that does not matter\n").unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "feature"]);
    let bin = root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("warpt"), bin.join("warpt")).unwrap();
    let gh = bin.join("gh");
    std::fs::write(&gh, "#!/bin/sh\necho \"gh $*\" >> \"$GH_LOG\"\n").unwrap();
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    (work, bin)
}

/// Runs one shell step as the CI would (`bash -e`), with `env`.
fn step(dir: &Path, bin: &Path, script: &str, env: &[(&str, String)]) -> (i32, String) {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("WARPT_NO_PROGRESS", "1")
        .env("WARPT_DURATION", "0.3")
        .env("WARPT_BURNIN_SECONDS", "0")
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .env_remove("GITLAB_API_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Sequence(items) => items.iter().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn the_github_workflow_parses_and_its_steps_run() {
    let wf = recipe("github-actions.yml");
    for trigger in ["pull_request", "schedule"] {
        assert!(wf["on"].get(trigger).is_some(), "{trigger}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let (work, bin) = project(tmp.path());
    let log = tmp.path().join("gh.log");
    let output = tmp.path().join("github_output");
    std::fs::write(&output, "").unwrap();
    let env = [
        ("GH_LOG", log.display().to_string()),
        ("GITHUB_OUTPUT", output.display().to_string()),
        ("BASE_REF", "main".to_string()),
        ("PR", "7".to_string()),
        ("GH_TOKEN", "unused".to_string()),
    ];
    let mut ran = 0;
    for job in ["pr", "nightly"] {
        let steps = wf["jobs"][job]["steps"].as_sequence().unwrap();
        for s in steps {
            let Some(script) = s.get("run").and_then(Value::as_str) else {
                continue; // `uses:` steps are GitHub's own actions
            };
            // The issue step runs only after an alert in CI; here it runs
            // too, against the recording `gh`.
            let (code, out) = step(&work, &bin, script, &env);
            assert_eq!(code, 0, "{job}: {script}\n{out}");
            ran += 1;
        }
    }
    assert_eq!(ran, 7, "every shell step ran");
    // The PR step wrote the verdict and the comment went to PR 7; the
    // nightly run left an export in the history and committed it.
    assert!(
        std::fs::read_to_string(work.join("verdict.md"))
            .unwrap()
            .starts_with("### warpt:")
    );
    let gh = std::fs::read_to_string(&log).unwrap();
    assert!(
        gh.contains("gh pr comment 7 --body-file verdict.md"),
        "{gh}"
    );
    assert_eq!(
        std::fs::read_dir(work.join("benchmarks/history"))
            .unwrap()
            .count(),
        1
    );
    assert!(git(&work, &["log", "-1", "--format=%s"]).contains("nightly run"));
    assert!(
        std::fs::read_to_string(&output)
            .unwrap()
            .contains("status=0")
    );
}

#[test]
fn the_gitlab_pipeline_parses_and_its_scripts_run() {
    let pipeline = recipe("gitlab-ci.yml");
    let tmp = tempfile::tempdir().unwrap();
    let (work, bin) = project(tmp.path());
    let env = [
        ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main".to_string()),
        ("CI_COMMIT_BRANCH", "main".to_string()),
        ("GH_LOG", tmp.path().join("gh.log").display().to_string()),
    ];
    let before = strings(&pipeline[".warpt"]["before_script"]);
    let mut ran = 0;
    for job in ["benchmark-mr", "benchmark-nightly"] {
        assert_eq!(pipeline[job]["extends"].as_str(), Some(".warpt"));
        for key in ["script", "after_script"] {
            let lines: Vec<String> = before
                .iter()
                .cloned()
                .chain(if key == "script" {
                    strings(&pipeline[job][key])
                } else {
                    Vec::new()
                })
                .chain(if key == "after_script" {
                    strings(&pipeline[job][key])
                } else {
                    Vec::new()
                })
                .collect();
            if lines.len() == before.len() && key == "after_script" {
                continue;
            }
            let (code, out) = step(&work, &bin, &lines.join("\n"), &env);
            assert_eq!(code, 0, "{job} {key}:\n{}\n{out}", lines.join("\n"));
            ran += 1;
        }
    }
    assert_eq!(
        ran, 3,
        "script and after_script of the MR job, the nightly script"
    );
    assert!(work.join("verdict.md").exists() && work.join("junit.xml").exists());
    assert_eq!(
        std::fs::read_dir(work.join("benchmarks/history"))
            .unwrap()
            .count(),
        1
    );
}
