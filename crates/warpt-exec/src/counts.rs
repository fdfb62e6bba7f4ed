//! `--measure instructions`: each command's executed instructions counted
//! after its timed runs ([`warpt_counts`]: the CPU's counters, else
//! cachegrind), as metrics of their own beside the times. Counts do not
//! move with the machine's load, so an A/A comparison of them shows no
//! change at all and a small change in executed work shows every time.

use std::process::{Command, Stdio};

use warpt_counts::{Counts, Source};
use warpt_model::RunStatus;

use crate::plan::{ExecPlan, Job, Shell};
use crate::spawn::Spawn;
use crate::state::JobResult;

/// Counted runs per command: a deterministic count needs one; three show
/// that it repeats (the spread is 0 for a deterministic program).
pub const COUNT_RUNS: usize = 3;

/// The instructions of the shell's empty command (`sh -c ''`), subtracted
/// from every count as its spawn time is from every time; `None` without a
/// shell.
pub fn shell_count(plan: &ExecPlan, source: &Source) -> Result<Option<u64>, String> {
    if plan.shell == Shell::None {
        return Ok(None);
    }
    let argv = plan.argv("").map_err(|e| e.to_string())?;
    let quiet = |c: &mut Command| {
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    };
    let counts = (0..COUNT_RUNS)
        .map(|_| source.count(&argv, &quiet).map(|c| c.instructions))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("counting the shell's empty command: {e}"))?;
    Ok(counts.into_iter().min())
}

/// Counts every job that passed its timed runs, [`COUNT_RUNS`] times each,
/// with its directory and input as timed and its output discarded; a count
/// that fails fails the job, saying why.
pub fn count(results: &mut [JobResult], source: &Source, shell: Option<u64>) {
    for r in results.iter_mut().filter(|r| r.status == RunStatus::Passed) {
        r.count_source = Some(source.name());
        r.shell_instructions = shell;
        for _ in 0..COUNT_RUNS {
            match source.count(&r.job.spawn.argv, &|c| configure(&r.job.spawn, c)) {
                Ok(c) => r.counts.push(less(c, shell)),
                Err(e) => {
                    r.status = RunStatus::Failed;
                    r.message = Some(format!("counting '{}''s instructions: {e}", r.job.name));
                    r.counts.clear();
                    break;
                }
            }
        }
    }
}

fn less(c: Counts, shell: Option<u64>) -> Counts {
    Counts {
        instructions: c.instructions.saturating_sub(shell.unwrap_or(0)),
        cache: c.cache,
    }
}

fn configure(spawn: &Spawn, cmd: &mut Command) {
    if let Some(dir) = &spawn.cwd {
        cmd.current_dir(dir);
    }
    match spawn.input.as_ref().map(std::fs::File::open) {
        Some(Ok(f)) => cmd.stdin(f),
        _ => cmd.stdin(Stdio::null()),
    };
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
}

/// Every job skipped, saying why (no source of counts here): the times
/// alone would not be what was asked for.
pub fn skipped(jobs: Vec<Job>, why: &str) -> Vec<JobResult> {
    let now = jiff::Timestamp::now();
    jobs.into_iter()
        .map(|job| JobResult {
            status: RunStatus::Skipped,
            message: Some(format!("--measure instructions: {why}")),
            ..JobResult::new(job, now)
        })
        .collect()
}

/// The line under hyperfine's for a counted job: `  Instructions: N
/// (source, runs; identical or their range)`.
pub fn describe(r: &JobResult) -> Option<String> {
    let first = r.counts.first()?;
    let lo = r.counts.iter().map(|c| c.instructions).min()?;
    let hi = r.counts.iter().map(|c| c.instructions).max()?;
    let spread = if lo == hi {
        "identical".to_string()
    } else {
        format!("{lo} … {hi}")
    };
    let cycles = first
        .cache
        .map(|k| {
            format!(
                ", estimated cycles {}",
                k.estimated_cycles(first.instructions)
            )
        })
        .unwrap_or_default();
    Some(format!(
        "  Instructions: {}{cycles}    [{}, {} runs: {spread}]\n",
        first.instructions,
        r.count_source.unwrap_or("?"),
        r.counts.len()
    ))
}
