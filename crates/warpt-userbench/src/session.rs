//! What `warpt harness run` does around the run itself: the tree and its
//! `--targets` ([`Tree`]), describing the environment (`env.json`), finding
//! the earlier summary `--compare-to` names, and the report directory
//! ([`write_reports`]). The front end layers the settings, gives a writer
//! for files and prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use warpt_model::BenchmarkSuiteRun;

use crate::config::BenchConfig;
use crate::discover::{DiscoverError, Manifest, discover};
use crate::profile::{Profiler, profile_tree};
use crate::regressions::{self, Thresholds};
use crate::run::Settings;
use crate::summary::Summary;

/// A tree found, narrowed to its targets and configured: what a harness
/// run measures. Every `bench.yaml` is read here, before anything runs.
#[derive(Debug)]
pub struct Tree {
    /// The pairs and kernels to run.
    pub manifest: Manifest,
    /// The configuration of each benchmark directory.
    pub configs: BTreeMap<PathBuf, BenchConfig>,
}

/// Why a tree cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The request is wrong: not a directory, a target naming nothing, a
    /// bad `bench.yaml` (a usage error).
    #[error(transparent)]
    Refused(#[from] Refused),
    /// A directory or file of the tree could not be read.
    #[error(transparent)]
    Read(DiscoverError),
}

impl Tree {
    /// Discovers the tree at `root` (plus kernel directories `kernel_paths`),
    /// keeps `targets` (all when empty) and reads every configuration.
    pub fn load(
        root: &Path,
        kernel_paths: &[PathBuf],
        targets: &[String],
    ) -> Result<Tree, TreeError> {
        let manifest = discover(root, kernel_paths).map_err(|e| match e {
            DiscoverError::NotADirectory(_) => TreeError::Refused(Refused(e.to_string())),
            other => TreeError::Read(other),
        })?;
        let manifest = select(manifest, targets)?;
        let configs = crate::run::load_configs(&manifest).map_err(|e| Refused(e.to_string()))?;
        Ok(Tree { manifest, configs })
    }
}

/// An earlier summary to compare a run with (`--compare-to`).
#[derive(Debug)]
pub struct Earlier {
    /// The summary, from [`earlier`].
    pub summary: Summary,
    /// Where it came from.
    pub label: String,
    /// What counts as a regression.
    pub thresholds: Thresholds,
}

/// What [`write_reports`] found against the `--compare-to` summary.
#[derive(Debug)]
pub struct Regressions {
    /// How many benchmarks regressed or drifted.
    pub count: usize,
    /// Where the earlier summary came from.
    pub against: String,
    /// `regressions.md` as written.
    pub path: PathBuf,
}

/// The reports a finished run left in the output directory.
#[derive(Debug)]
pub struct Reports {
    /// `summary.json`'s content.
    pub summary: Summary,
    /// The comparison with the earlier summary, when one was given.
    pub regressions: Option<Regressions>,
}

/// Writes a finished run's report directory through `write` (a path relative
/// to the output directory and its text → the path written): `env.json`,
/// one file per result, `summary.json`/`.md`, `regressions.md` against
/// `before`, then runs `profiler` once over the tree when one is asked for.
pub fn write_reports<E: From<serde_json::Error>>(
    run: &BenchmarkSuiteRun,
    tree: &Tree,
    settings: &Settings,
    root: &Path,
    before: Option<Earlier>,
    profiler: Option<Profiler>,
    write: &mut dyn FnMut(&str, &str) -> Result<PathBuf, E>,
) -> Result<Reports, E> {
    let env = env_json(
        run,
        &settings.python,
        root,
        &settings.tool_version,
        &settings.build_profile,
    );
    write("env.json", &serde_json::to_string_pretty(&env)?)?;
    let summary = Summary::of(run);
    for (name, text) in report_files(run, &summary, Some(&env))? {
        write(&name, &text)?;
    }
    let regressions = match before {
        Some(e) => {
            let report = regressions::compare(&e.summary, &summary, &e.thresholds);
            let text = regressions::markdown(&report, &e.label, &run.id, &e.thresholds);
            Some(Regressions {
                count: report.regressions.len(),
                path: write("regressions.md", &text)?,
                against: e.label,
            })
        }
        None => None,
    };
    if let Some(tool) = profiler {
        profile_tree(
            tool,
            &tree.manifest,
            &tree.configs,
            settings,
            &settings.output_dir,
        );
    }
    Ok(Reports {
        summary,
        regressions,
    })
}

/// A `--targets` entry or a `--compare-to` value that names nothing.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Keeps the chapters, examples and kernels `targets` name (`chapter`,
/// `chapter/example`, `kernels`; a chapter may be named by its prefix
/// before `_`). A target that names nothing is refused, listing what there is.
pub fn select(mut m: Manifest, targets: &[String]) -> Result<Manifest, Refused> {
    if targets.is_empty() {
        return Ok(m);
    }
    let chapter_matches = |name: &str, t: &str| {
        name == t
            || name
                .strip_prefix(t)
                .is_some_and(|rest| rest.starts_with('_'))
    };
    for t in targets {
        let (chap, example) = t.split_once('/').unwrap_or((t, ""));
        let found = (t == "kernels" && !m.kernels.is_empty())
            || m.chapters.iter().any(|c| {
                chapter_matches(&c.name, chap)
                    && (example.is_empty() || c.pairs.iter().any(|p| p.example == example))
            });
        if !found {
            let mut names: Vec<String> = m.chapters.iter().map(|c| c.name.clone()).collect();
            if !m.kernels.is_empty() {
                names.push("kernels".into());
            }
            return Err(Refused(format!(
                "--targets: '{t}' names no chapter or example here; chapters: {}",
                if names.is_empty() {
                    "(none)".into()
                } else {
                    names.join(", ")
                }
            )));
        }
    }
    for c in &mut m.chapters {
        let wanted: Vec<&str> = targets
            .iter()
            .filter_map(|t| {
                let (chap, example) = t.split_once('/').unwrap_or((t, ""));
                chapter_matches(&c.name, chap).then_some(example)
            })
            .collect();
        if wanted.iter().any(|e| e.is_empty()) {
            continue;
        }
        c.pairs.retain(|p| wanted.contains(&p.example.as_str()));
    }
    m.chapters.retain(|c| !c.pairs.is_empty());
    if !targets.iter().any(|t| t == "kernels") {
        m.kernels.clear();
    }
    Ok(m)
}

/// What a program prints of its version (stdout, else stderr), if it runs
/// and succeeds.
pub fn output_of(program: &str, args: &[&str], dir: Option<&Path>) -> Option<String> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let text = if text.is_empty() {
        String::from_utf8_lossy(&out.stderr).trim().to_string()
    } else {
        text
    };
    (!text.is_empty()).then_some(text)
}

/// `env.json`: this warpt (`version`, `profile`), the machine, the
/// interpreter with numpy and torch, and the tree's commit.
pub fn env_json(
    run: &BenchmarkSuiteRun,
    python: &str,
    root: &Path,
    version: &str,
    profile: &str,
) -> serde_json::Value {
    serde_json::json!({
        "warpt_version": version,
        "build_profile": profile,
        "python": output_of(python, &["--version"], None),
        "python_executable": output_of(python, &["-c", "import sys; print(sys.executable)"], None),
        "numpy": output_of(python, &["-c", "import numpy; print(numpy.__version__)"], None),
        "torch": output_of(python, &["-c", "import torch; print(torch.__version__)"], None),
        "git_commit": output_of("git", &["rev-parse", "HEAD"], Some(root)),
        "git_dirty": output_of("git", &["status", "--porcelain"], Some(root)).is_some(),
        "system": run.system,
    })
}

/// The earlier summary `--compare-to` names: a summary.json or a run
/// export (file), a directory holding summary.json, a stored run
/// (`stored` looks one up by id), or a git ref of the tree at `root`
/// (`REF:PATH`, or `REF` with `default_summary`). With a label saying
/// where it came from.
pub fn earlier(
    what: &str,
    root: &Path,
    default_summary: &Path,
    stored: &dyn Fn(&str) -> Option<BenchmarkSuiteRun>,
) -> Result<(Summary, String), Refused> {
    let parse = |text: &str| -> Result<Summary, Refused> {
        if let Ok(s) = serde_json::from_str::<Summary>(text) {
            return Ok(s);
        }
        let run = warpt_model::load_suite_run(text).map_err(|e| {
            Refused(format!(
                "--compare-to {what}: neither a harness summary.json nor a suite run: {e}"
            ))
        })?;
        Ok(Summary::of(&run))
    };
    let path = Path::new(what);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Refused(format!("--compare-to {what}: {e}")))?;
        return Ok((parse(&text)?, what.to_string()));
    }
    if path.is_dir() {
        let p = path.join("summary.json");
        let text = std::fs::read_to_string(&p)
            .map_err(|e| Refused(format!("--compare-to {}: {e}", p.display())))?;
        return Ok((parse(&text)?, p.display().to_string()));
    }
    if let Some(run) = stored(what) {
        return Ok((Summary::of(&run), format!("stored run {what}")));
    }
    let (rev, file) = match what.split_once(':') {
        Some((r, f)) => (r.to_string(), f.to_string()),
        None => (what.to_string(), default_summary.display().to_string()),
    };
    let shown = output_of("git", &["show", &format!("{rev}:{file}")], Some(root)).or_else(|| {
        // A path relative to the repository's top.
        let top = output_of("git", &["rev-parse", "--show-toplevel"], Some(root))?;
        let abs = std::path::absolute(&file).ok()?;
        let rel = abs.strip_prefix(&top).ok()?.display().to_string();
        output_of("git", &["show", &format!("{rev}:{rel}")], Some(root))
    });
    match shown {
        Some(text) => Ok((parse(&text)?, format!("{rev}:{file}"))),
        None => Err(Refused(format!(
            "--compare-to '{what}': not a file, a directory with summary.json, a stored run id, \
             or a git ref holding {file}"
        ))),
    }
}

/// The report files of a run, by their path in the output directory:
/// `benchmarks/<id>[__tags].json` per result, `summary.json`, `summary.md`.
pub fn report_files(
    run: &BenchmarkSuiteRun,
    summary: &Summary,
    env: Option<&serde_json::Value>,
) -> serde_json::Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    for (r, e) in run.benchmarks.iter().zip(&summary.benchmarks) {
        let tags = warpt_model::tag_label(&e.tags);
        let tags = if tags.is_empty() {
            tags
        } else {
            format!("__{}", tags.replace([',', '='], "_"))
        };
        let name = format!("benchmarks/{}{tags}.json", e.id.replace('/', "__"));
        files.push((name, serde_json::to_string_pretty(r)?));
    }
    files.push((
        "summary.json".into(),
        serde_json::to_string_pretty(summary)?,
    ));
    files.push(("summary.md".into(), crate::summary::markdown(summary, env)));
    Ok(files)
}
