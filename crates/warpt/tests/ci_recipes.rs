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

/// A little of GitHub's runner: the values of `${{ ... }}` expressions
/// (`a || b` takes the first that is set) and `if:` conditions made of
/// `always()` and `x == 'literal'` joined by `&&`, over the inputs, the
/// `github` context and the step outputs seen so far.
struct Runner {
    github: Vec<(&'static str, String)>,
    outputs: std::collections::HashMap<String, String>,
}

impl Runner {
    fn value(&self, expr: &str, inputs: &std::collections::HashMap<String, String>) -> String {
        expr.split("||")
            .map(|alt| {
                let alt = alt.trim();
                if let Some(name) = alt.strip_prefix("inputs.") {
                    inputs.get(name).cloned().unwrap_or_default()
                } else if let Some(key) = alt.strip_prefix("github.") {
                    let v = self.github.iter().find(|(k, _)| *k == key);
                    v.map(|(_, v)| v.clone()).unwrap_or_default()
                } else if alt.starts_with("steps.") {
                    self.outputs.get(alt).cloned().unwrap_or_default()
                } else {
                    panic!("an expression this runner does not know: {alt}")
                }
            })
            .find(|v| !v.is_empty())
            .unwrap_or_default()
    }

    /// `text` with every `${{ ... }}` replaced by its value.
    fn expand(&self, text: &str, inputs: &std::collections::HashMap<String, String>) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("${{") {
            out.push_str(&rest[..at]);
            let end = rest[at..].find("}}").unwrap() + at;
            out.push_str(&self.value(&rest[at + 3..end], inputs));
            rest = &rest[end + 2..];
        }
        out + rest
    }

    fn holds(
        &self,
        cond: Option<&str>,
        inputs: &std::collections::HashMap<String, String>,
    ) -> bool {
        cond.is_none_or(|c| {
            c.split("&&").all(|term| {
                let term = term.trim();
                if term == "always()" {
                    return true;
                }
                let (lhs, rhs) = term.split_once("==").unwrap();
                self.value(lhs, inputs) == rhs.trim().trim_matches('\'')
            })
        })
    }

    /// Runs `steps` (a job's, or a composite action's with `inputs`) in
    /// `dir`; `uses: warpt/warpt@...` runs action.yml's steps. Returns how
    /// many shell steps ran.
    fn run(
        &mut self,
        steps: &[Value],
        inputs: &std::collections::HashMap<String, String>,
        dir: &Path,
        bin: &Path,
        base_env: &[(&str, String)],
    ) -> usize {
        let mut ran = 0;
        for s in steps {
            if !self.holds(s.get("if").and_then(Value::as_str), inputs) {
                continue;
            }
            let id = s.get("id").and_then(Value::as_str).unwrap_or("");
            if let Some(uses) = s.get("uses").and_then(Value::as_str) {
                if !uses.starts_with("warpt/warpt@") {
                    continue; // GitHub's own actions (checkout, upload-artifact)
                }
                let action = action();
                let mut with = std::collections::HashMap::new();
                for (k, v) in action["inputs"].as_mapping().unwrap() {
                    let k = k.as_str().unwrap().to_string();
                    let default = v["default"].as_str().unwrap_or("");
                    let given = s.get("with").and_then(|w| w.get(k.as_str()));
                    let v = match given.and_then(Value::as_str) {
                        Some(g) => g.to_string(),
                        None => self.expand(default, inputs),
                    };
                    with.insert(k, v);
                }
                let inner = action["runs"]["steps"].as_sequence().unwrap().clone();
                ran += self.run(&inner, &with, dir, bin, base_env);
                for key in ["status", "regressed"] {
                    let v = self.expand(action["outputs"][key]["value"].as_str().unwrap(), &with);
                    self.outputs.insert(format!("steps.{id}.outputs.{key}"), v);
                }
                continue;
            }
            let script = s["run"].as_str().unwrap();
            let output = dir.join(".github_output");
            std::fs::write(&output, "").unwrap();
            let mut own: Vec<(String, String)> =
                vec![("GITHUB_OUTPUT".into(), output.display().to_string())];
            if let Some(map) = s.get("env").and_then(Value::as_mapping) {
                for (k, v) in map {
                    own.push((
                        k.as_str().unwrap().to_string(),
                        self.expand(v.as_str().unwrap(), inputs),
                    ));
                }
            }
            let mut env: Vec<(&str, String)> = base_env.to_vec();
            env.extend(own.iter().map(|(k, v)| (k.as_str(), v.clone())));
            let (code, out) = step(dir, bin, script, &env);
            assert_eq!(code, 0, "{script}\n{out}");
            ran += 1;
            for line in std::fs::read_to_string(&output).unwrap().lines() {
                if let Some((k, v)) = line.split_once('=') {
                    self.outputs
                        .insert(format!("steps.{id}.outputs.{k}"), v.to_string());
                }
            }
        }
        ran
    }
}

fn action() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../action.yml");
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_action_declares_its_inputs_and_runs_in_bash() {
    let a = action();
    assert_eq!(a["runs"]["using"], "composite");
    let inputs = a["inputs"].as_mapping().unwrap();
    for name in [
        "mode",
        "base",
        "head",
        "build",
        "command",
        "comment",
        "branch",
        "history-dir",
    ] {
        assert!(inputs.contains_key(name), "input {name}");
    }
    for s in a["runs"]["steps"].as_sequence().unwrap() {
        if s.get("run").is_some() {
            assert_eq!(s["shell"], "bash", "{s:?}");
        }
    }
}

#[test]
fn the_github_workflow_runs_through_the_action() {
    let wf = recipe("github-actions.yml");
    for trigger in ["pull_request", "schedule"] {
        assert!(wf["on"].get(trigger).is_some(), "{trigger}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let (work, bin) = project(tmp.path());
    let log = tmp.path().join("gh.log");
    let env = [("GH_LOG", log.display().to_string())];
    let mut runner = Runner {
        github: vec![
            ("base_ref", "main".into()),
            ("ref_name", "main".into()),
            ("token", "unused".into()),
            ("event.pull_request.number", "7".into()),
        ],
        outputs: Default::default(),
    };
    let none = Default::default();
    let steps = |job: &str| wf["jobs"][job]["steps"].as_sequence().unwrap().clone();
    // Least privilege: nothing at the workflow's level; the job that runs
    // the PR's code reads only and keeps no credential in its checkout;
    // the job that comments runs none of it (no checkout, no build).
    assert_eq!(
        wf["permissions"],
        serde_yaml_ng::from_str::<Value>("{}").unwrap()
    );
    let perms = |job: &str| wf["jobs"][job]["permissions"].clone();
    assert_eq!(perms("pr")["contents"], "read");
    assert_eq!(perms("pr").as_mapping().unwrap().len(), 1);
    assert_eq!(perms("comment")["pull-requests"], "write");
    assert_eq!(perms("comment").as_mapping().unwrap().len(), 1);
    let checkout = &steps("pr")[0];
    assert_eq!(checkout["with"]["persist-credentials"], false);
    for s in steps("comment") {
        let uses = s.get("uses").and_then(Value::as_str).unwrap_or("");
        assert!(
            !uses.contains("checkout") && !uses.starts_with("warpt/"),
            "{s:?}"
        );
    }
    // pr: install (on the PATH already), compare, the verdict check; no
    // comment from this job.
    assert_eq!(runner.run(&steps("pr"), &none, &work, &bin, &env), 3);
    assert!(
        std::fs::read_to_string(work.join("verdict.md"))
            .unwrap()
            .starts_with("### warpt:")
    );
    assert!(work.join("junit.xml").is_file());
    assert!(!log.exists(), "the job running the PR's code commented");
    assert_eq!(runner.outputs["steps..outputs.status"], "0");
    // comment: posts the verdict the pr job left.
    runner.github.push(("repository", "o/r".into()));
    assert_eq!(runner.run(&steps("comment"), &none, &work, &bin, &env), 1);
    let gh = std::fs::read_to_string(&log).unwrap();
    assert!(
        gh.contains("gh pr comment 7 --repo o/r --body-file verdict.md"),
        "{gh}"
    );
    // nightly: install, record, the status check, then the workflow's commit;
    // no regression, so no issue.
    assert_eq!(runner.run(&steps("nightly"), &none, &work, &bin, &env), 4);
    assert_eq!(runner.outputs["steps.warpt.outputs.regressed"], "false");
    assert_eq!(
        std::fs::read_dir(work.join("benchmarks/history"))
            .unwrap()
            .count(),
        1
    );
    assert!(git(&work, &["log", "-1", "--format=%s"]).contains("nightly run"));
    assert!(!std::fs::read_to_string(&log).unwrap().contains("issue"));
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
    // The token reaches only the note job (an environment-scoped variable),
    // which builds and runs nothing of the MR.
    let mr = &pipeline["benchmark-mr"];
    assert!(mr.get("environment").is_none() && mr.get("after_script").is_none());
    let note = &pipeline["benchmark-mr-note"];
    assert_eq!(note["environment"]["name"], "benchmark-notes");
    let note_script = strings(&note["script"]).join("\n");
    assert!(note_script.contains("GITLAB_API_TOKEN") && !note_script.contains("warpt"));
    assert!(
        !strings(&mr["script"])
            .join("\n")
            .contains("GITLAB_API_TOKEN")
    );
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
    assert_eq!(ran, 2, "the MR job's script, the nightly script");
    // The note job's script, as it runs there (without a token: skipped).
    let (code, out) = step(&work, &bin, &note_script, &env);
    assert_eq!(code, 0, "{out}");
    assert!(work.join("verdict.md").exists() && work.join("junit.xml").exists());
    assert_eq!(
        std::fs::read_dir(work.join("benchmarks/history"))
            .unwrap()
            .count(),
        1
    );
}
