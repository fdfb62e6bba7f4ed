//! The warpt command a CI step names, and the runs of the two sides as a
//! comparison sees them.

use std::path::Path;

use anyhow::Result;
use warpt_model::{BenchmarkSuiteRun, ParamValue};
use warpt_run::UsageError;
use warpt_run::trials::Warpt;

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
