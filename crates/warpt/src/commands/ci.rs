//! `warpt ci pr`: two git refs of the user's repository compared on this
//! machine, interleaved, with a verdict for the pull request.
//!
//! Both refs are checked out as detached git worktrees in a temporary
//! directory (the user's tree, index and branches are never touched), built
//! with `--build`, and run with the same `benchmark run` (or `exec`, or
//! `harness run`) arguments in
//! randomized interleaved trials ([`warpt_run::trials::interleaved`]) so slow
//! drifts of the machine hit both sides alike. The worktrees are removed
//! afterwards, on errors and after Ctrl-C too (which ends the trials; the
//! complete rounds are compared and the exit status is 130).

use std::path::{Path, PathBuf};

use anyhow::Result;
use warpt_model::BenchmarkSuiteRun;
use warpt_report::{Options, exports, render};

use crate::cli::CiPrArgs;
use crate::{Outcome, UsageError};
use warpt_run::ci::{Worktrees, build, git, same_places, split_command};
use warpt_run::history;
use warpt_run::trials::{self as rerun, Subprocess};

/// `warpt ci pr`.
pub fn pr(args: &CiPrArgs) -> Result<Outcome> {
    let (command, run_args) = split_command(&args.args, "ci pr")?;
    rerun::check_reserved(command, &run_args, rerun::Runs::Several)?;
    let repo = git(&args.workdir, &["rev-parse", "--show-toplevel"]).map_err(|e| {
        UsageError(format!(
            "{} is not inside a git repository: {e}",
            args.workdir.display()
        ))
    })?;
    let repo = PathBuf::from(repo);
    let resolve = |r: &str| {
        git(
            &repo,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{r}^{{commit}}"),
            ],
        )
        .map_err(|_| UsageError(format!("'{r}' is not a commit of {}", repo.display())))
    };
    let (base_sha, head_sha) = (resolve(&args.base)?, resolve(&args.head)?);
    let short = |s: &str| s.chars().take(10).collect::<String>();
    let base_label = format!("{} ({})", args.base, short(&base_sha));
    let head_label = format!("{} ({})", args.head, short(&head_sha));

    let mut trees = Worktrees::new(&repo)?;
    // The benchmarks run where the user ran warpt: the same directory
    // relative to the repository's top, in each checkout.
    let here = std::fs::canonicalize(&args.workdir)?;
    let relative = here
        .strip_prefix(std::fs::canonicalize(&repo)?)
        .unwrap_or(Path::new(""));
    let base_dir = trees.add("base", &base_sha)?.join(relative);
    let head_dir = trees.add("head", &head_sha)?.join(relative);
    if let Some(cmd) = &args.build {
        build(cmd, &base_dir, &base_label)?;
        build(cmd, &head_dir, &head_label)?;
    }
    let (base_side, head_side) = (trees.side("base"), trees.side("head"));
    let a = Subprocess::in_dir(&base_label, &base_dir, command, &run_args)?
        .reports_in(&base_side.join("reports"));
    let b = Subprocess::in_dir(&head_label, &head_dir, command, &run_args)?
        .reports_in(&head_side.join("reports"));
    let sides = rerun::interleaved(a, b, args.trials, args.seed)?;
    drop(trees);
    for run in [&sides.base, &sides.current] {
        history::record_run(&args.store.choice(), None, run);
    }
    let outcome = verdict(
        args,
        sides.interrupted,
        &same_places(&sides.base, &base_side),
        &base_label,
        &same_places(&sides.current, &head_side),
        &head_label,
    )?;
    Ok(if sides.interrupted {
        Outcome::Interrupted
    } else {
        outcome
    })
}

/// The comparison printed, and written as the comment and JUnit files.
fn verdict(
    args: &CiPrArgs,
    interrupted: bool,
    base: &BenchmarkSuiteRun,
    base_label: &str,
    head: &BenchmarkSuiteRun,
    head_label: &str,
) -> Result<Outcome> {
    let options = Options {
        threshold_pct: args.threshold,
        paired: true,
        ..Options::default()
    };
    let noise = history::noise_lookup(
        &args.store.choice(),
        None,
        vec![base.id.clone(), head.id.clone()],
    );
    let c = warpt_report::compare(base, base_label, head, head_label, &options, noise.as_ref());
    print!("{}", render::text(&c));
    let failed = c.regressed() || (args.fail_on_inconclusive && c.inconclusive());
    if let Some(path) = &args.comment {
        let planned = interrupted.then_some(args.trials);
        let text = render::pr_comment(&c, base_label, head_label, base.trial_count(), planned);
        warpt_run::ExportTarget::prepare(path)?.write_text(&text)?;
    }
    if let Some(path) = &args.junit {
        warpt_run::ExportTarget::prepare(path)?.write_text(&exports::junit(head, Some(&c)))?;
    }
    Ok(if failed {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}
