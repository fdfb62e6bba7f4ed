//! The CI front ends' plumbing: `ci pr`'s git worktrees of two refs and
//! their builds, the warpt command a CI step names, and `ci record`'s
//! history directory of exports.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use warpt_model::{BenchmarkSuiteRun, ParamValue};
use warpt_store::{Location, Source, Store, TrendQuery};

use crate::UsageError;
use crate::trials::Warpt;

/// Runs `git` in `dir`: its trimmed stdout, or an error with its stderr.
pub fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        anyhow::bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The worktrees of one `ci pr`, removed when dropped.
pub struct Worktrees {
    repo: PathBuf,
    paths: Vec<PathBuf>,
    _dir: tempfile::TempDir,
}

impl Worktrees {
    /// No worktrees yet, of the repository at `repo`, in a new temporary
    /// directory.
    pub fn new(repo: &Path) -> Result<Worktrees> {
        Ok(Worktrees {
            repo: repo.to_path_buf(),
            paths: Vec::new(),
            _dir: tempfile::Builder::new()
                .prefix("warpt-ci-")
                .tempdir()
                .context("creating a directory for the worktrees")?,
        })
    }

    /// The directory of side `name`: its checkout and its reports.
    pub fn side(&self, name: &str) -> PathBuf {
        self._dir.path().join(name)
    }

    /// Checks out `commit` (detached) as the worktree of side `name`.
    pub fn add(&mut self, name: &str, commit: &str) -> Result<PathBuf> {
        let path = self.side(name).join("checkout");
        let target = path.to_string_lossy().into_owned();
        git(
            &self.repo,
            &["worktree", "add", "--detach", "--quiet", &target, commit],
        )?;
        self.paths.push(path.clone());
        Ok(path)
    }
}

impl Drop for Worktrees {
    fn drop(&mut self) {
        for p in &self.paths {
            let target = p.to_string_lossy().into_owned();
            if let Err(e) = git(&self.repo, &["worktree", "remove", "--force", &target]) {
                eprintln!("warning: could not remove the worktree {target}: {e}");
            }
        }
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}

/// One side of `ci pr`: a ref checked out (and built).
#[derive(Debug, Clone)]
pub struct PrSide {
    /// The ref as given, with its short commit: `main (0123456789)`.
    pub label: String,
    /// Where its benchmarks run: the user's directory, in the checkout.
    pub dir: PathBuf,
    /// The side's own directory (its checkout and its reports).
    pub root: PathBuf,
}

/// The two sides of `ci pr`, in worktrees removed when this is dropped
/// (the user's tree, index and branches are never touched).
pub struct PrCheckouts {
    /// The base ref.
    pub base: PrSide,
    /// The head ref.
    pub head: PrSide,
    _trees: Worktrees,
}

impl PrCheckouts {
    /// Checks out `base` and `head` of the repository holding `workdir`,
    /// and runs `build_cmd` in each; refs that are not commits are usage
    /// errors.
    pub fn new(workdir: &Path, base: &str, head: &str, build_cmd: Option<&str>) -> Result<Self> {
        let repo = git(workdir, &["rev-parse", "--show-toplevel"]).map_err(|e| {
            UsageError(format!(
                "{} is not inside a git repository: {e}",
                workdir.display()
            ))
        })?;
        let repo = PathBuf::from(repo);
        let mut trees = Worktrees::new(&repo)?;
        // The benchmarks run where the user ran warpt: the same directory
        // relative to the repository's top, in each checkout.
        let here = std::fs::canonicalize(workdir)?;
        let canonical_repo = std::fs::canonicalize(&repo)?;
        let relative = here.strip_prefix(&canonical_repo).unwrap_or(Path::new(""));
        let mut side = |name: &str, r: &str| -> Result<PrSide> {
            let spec = format!("{r}^{{commit}}");
            let sha = git(&repo, &["rev-parse", "--verify", "--quiet", &spec])
                .map_err(|_| UsageError(format!("'{r}' is not a commit of {}", repo.display())))?;
            let short: String = sha.chars().take(10).collect();
            Ok(PrSide {
                label: format!("{r} ({short})"),
                dir: trees.add(name, &sha)?.join(relative),
                root: trees.side(name),
            })
        };
        let (base, head) = (side("base", base)?, side("head", head)?);
        if let Some(cmd) = build_cmd {
            build(cmd, &base.dir, &base.label)?;
            build(cmd, &head.dir, &head.label)?;
        }
        Ok(PrCheckouts {
            base,
            head,
            _trees: trees,
        })
    }
}

/// Runs `--build` in a worktree; an error names the side and its last lines.
pub fn build(cmd: &str, dir: &Path, side: &str) -> Result<()> {
    eprintln!("ci pr: building {side}: {cmd}");
    let out = Command::new("sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .context("running the build command")?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = text.lines().collect();
        anyhow::bail!(
            "the build of {side} failed ({}):\n{}",
            out.status,
            lines[lines.len().saturating_sub(10)..].join("\n")
        );
    }
    Ok(())
}

/// The warpt command in `args` (`benchmark run ...`, `exec ...` or
/// `harness run ...`) and its arguments; a usage error naming `what`
/// otherwise.
pub fn split_command(args: &[String], what: &str) -> Result<(Warpt, Vec<String>)> {
    match args {
        [bench, run, rest @ ..] if bench == "benchmark" && run == "run" => {
            Ok((Warpt::BenchmarkRun, rest.to_vec()))
        }
        [harness, run, rest @ ..] if harness == "harness" && run == "run" => {
            Ok((Warpt::HarnessRun, rest.to_vec()))
        }
        [exec, rest @ ..] if exec == "exec" => Ok((Warpt::Exec, rest.to_vec())),
        _ => Err(UsageError(format!(
            "{what} runs `benchmark run ...`, `exec ...` or `harness run ...`; got `{}`",
            args.join(" ")
        ))
        .into()),
    }
}

/// Writes `run` into `dir` as `<start time>_<id>.json` (names sort by time).
pub fn write_export(dir: &Path, run: &BenchmarkSuiteRun) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stamp: String = run
        .start_time
        .map(|t| t.to_string())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = dir.join(format!("{stamp}_{}.json", run.id));
    // Atomic, as every export: the history directory is read back into a
    // store, and a half-written run there would poison every later record.
    crate::ExportTarget::prepare(&path)?.write(run)?;
    eprintln!("ci record: wrote {}", path.display());
    Ok(())
}

/// Every export in `dir`, recorded into a new SQLite store at `db`.
pub fn store_of_dir(dir: &Path, db: &Path) -> Result<Store> {
    let mut store = Store::open(Location::Sqlite(db.to_path_buf()))?;
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        let run = warpt_model::load_suite_run(&text)
            .map_err(|e| UsageError(format!("{}: not a warpt export: {e}", f.display())))?;
        store.record_run(&run, &Source::Run)?;
    }
    Ok(store)
}

/// `run` as the comparison sees it: a parameter naming a path in the
/// side's directory (a benchmark file in its checkout, a report beside it)
/// names it the same way for either side, so only a real difference in
/// the parameters is warned about. The recorded runs keep the real paths.
pub fn same_places(run: &BenchmarkSuiteRun, side: &Path) -> BenchmarkSuiteRun {
    let side = side.to_string_lossy();
    let mut run = run.clone();
    for r in &mut run.benchmarks {
        for v in r.params.values_mut() {
            if let ParamValue::Str(s) = v
                && s.contains(side.as_ref())
            {
                *s = s.replace(side.as_ref(), "<ci pr side>");
            }
        }
    }
    run
}

/// `ci record`'s alerts: every metric of `run`'s passed results, its
/// history on this machine in `store`, and a line for each whose history
/// ends after a regression step of at least `threshold_pct` percent. With
/// the number of series looked at.
pub fn regression_alerts(
    store: &Store,
    run: &BenchmarkSuiteRun,
    threshold_pct: f64,
) -> Result<(usize, Vec<String>)> {
    let machine = run.system.as_ref().map(|s| s.os.hostname.clone());
    let mut alerts = Vec::new();
    let mut series = 0;
    for r in run
        .benchmarks
        .iter()
        .filter(|r| r.status == warpt_model::RunStatus::Passed)
    {
        for m in &r.metrics {
            let rows = store.trend(&TrendQuery {
                suite: Some(&r.spec.id.suite),
                benchmark: &r.spec.id.name,
                metric: &m.name,
                tags: &m.tags,
                machine: machine.as_deref(),
            })?;
            let values: Vec<f64> = rows.iter().map(|x| x.value).collect();
            series += 1;
            let steps = warpt_report::trend::change_points(&values);
            if let Some(s) =
                warpt_report::history::latest_regression(&steps, m.higher_is_better, threshold_pct)
            {
                alerts.push(warpt_report::history::alert_line(
                    &r.spec.id,
                    m,
                    s,
                    &rows[s.index].run_id,
                    rows.len(),
                ));
            }
        }
    }
    Ok((series, alerts))
}
