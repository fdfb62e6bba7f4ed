//! `ci pr`'s two checkouts: git worktrees of the base and head refs,
//! built, and removed when done (the user's tree, index and branches are
//! never touched).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use warpt_run::UsageError;

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
