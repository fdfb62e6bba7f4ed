//! `warpt exec`: flags to an [`ExecPlan`], measured by
//! [`warpt_exec::session`], printed as hyperfine does (plus warpt's table),
//! exported, recorded.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use warpt_exec::engine::Observer;
use warpt_exec::session::{Session, calibration_line};
use warpt_exec::{ExecError, ExecPlan, Job, Measure, Output, Parameter, Sample, Shell, ShellCost};

use crate::cli::ExecArgs;
use crate::cli::MeasureArg;
use crate::{Outcome, UsageError};
use warpt_run::ExportTarget;

fn usage(e: ExecError) -> anyhow::Error {
    match e {
        ExecError::Usage(m) => UsageError(m).into(),
        other => other.into(),
    }
}

fn plan(args: &ExecArgs) -> Result<ExecPlan> {
    let parameter = Parameter::from_flags(
        &args.parameter_scan,
        args.parameter_step_size,
        &args.parameter_list,
    )
    .map_err(usage)?;
    Ok(ExecPlan {
        commands: args.commands.clone(),
        names: args.command_name.clone(),
        shell: if args.no_shell || args.shell == "none" {
            Shell::None
        } else {
            Shell::Path(args.shell.clone())
        },
        prepare: args.prepare.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        parameter,
        input: args.input.clone(),
        output: Output::parse(&args.output),
        warmup: args.warmup,
        runs: args.runs,
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        min_time: Duration::from_secs_f64(args.min_time),
        max_time: Duration::from_secs_f64(args.max_time),
        target_rel_ci: args.precision / 100.0,
        ignore_failure: args.ignore_failure,
        interleave: !args.no_interleave,
        duet: args.duet,
        timeout: args.timeout.map(Duration::from_secs_f64),
        seed: args.seed,
        measure: match args.measure {
            MeasureArg::Time => Measure::Time,
            MeasureArg::Instructions => Measure::Instructions,
        },
        labels: args.labels.iter().cloned().collect(),
        description: args.description.clone(),
    })
}

/// A spinner with the runs so far (hidden when stderr is not a terminal).
struct Spinner {
    bar: ProgressBar,
    runs: Mutex<usize>,
}

impl Observer for Spinner {
    fn run_done(&self, job: &Job, runs: usize, _: &Sample) {
        let total = {
            let mut t = self.runs.lock().unwrap_or_else(|e| e.into_inner());
            *t += 1;
            *t
        };
        self.bar
            .set_message(format!("{total} runs; '{}': {runs}", job.name));
    }

    fn calibrated(&self, cost: &ShellCost) {
        self.bar.suspend(|| eprintln!("{}", calibration_line(cost)));
    }
}

/// `warpt exec`.
pub fn run(args: &ExecArgs) -> Result<Outcome> {
    let plan = plan(args)?;
    let jobs = plan.jobs().map_err(usage)?;
    // Check every destination before spending minutes measuring.
    let prepare =
        |p: &Option<std::path::PathBuf>| p.as_deref().map(ExportTarget::prepare).transpose();
    // hyperfine's formats, each behind its `--export-NAME` flag.
    let mut exports = Vec::new();
    for format in warpt_export::EXEC.formats() {
        if let Some(t) = prepare(args.export_path(format.name()))? {
            exports.push((t, format));
        }
    }
    let warpt_out = prepare(&args.export_file)?;
    let interrupt = warpt_run::interrupt::install_handler()?;
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let spinner = Spinner {
        bar,
        runs: Mutex::new(0),
    };
    let session = Session::run(
        &plan,
        jobs,
        &spinner,
        Some(&interrupt),
        std::env::args().collect(),
    )
    .map_err(usage)?;
    spinner.bar.finish_and_clear();
    let text = session.text(plan.seed);
    if args.json {
        eprint!("{text}");
        println!("{}", serde_json::to_string_pretty(&session.suite_run)?);
    } else {
        print!("{text}");
    }
    for (target, format) in exports {
        for path in target.write(&format.render(&session.results)?)? {
            eprintln!("wrote {}", path.display());
        }
    }
    if let Some(t) = warpt_out {
        eprintln!("exported {}", t.write_json(&session.suite_run)?.display());
    }
    warpt_run::history::record_run(&args.store.choice(), None, &session.suite_run);
    Ok(Outcome::of(&session.suite_run))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// `warpt exec` without flags plans what `ExecPlan::new` says are the
    /// defaults: the library's callers and the command line agree.
    #[test]
    fn the_flags_defaults_are_the_librarys() {
        let cli = crate::cli::Cli::try_parse_from(["warpt", "exec", "true", "sleep 0"])
            .unwrap_or_else(|e| panic!("{e}"));
        let crate::cli::Command::Exec(args) = cli.command else {
            panic!("not exec");
        };
        let planned = super::plan(&args).unwrap_or_else(|e| panic!("{e}"));
        let commands = vec!["true".to_string(), "sleep 0".to_string()];
        assert_eq!(planned, warpt_exec::ExecPlan::new(commands));
    }
}
