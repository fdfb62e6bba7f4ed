//! `warpt exec`: flags to an [`ExecPlan`], measure, print as hyperfine
//! does (plus warpt's table), export, record.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use warpt_exec::engine::Observer;
use warpt_exec::hyperfine::time;
use warpt_exec::{ExecError, ExecPlan, Job, Output, Parameter, Sample, Shell};

use crate::cli::ExecArgs;
use crate::{Outcome, UsageError};
use warpt_report::terminal as output;
use warpt_run::ExportTarget;

fn usage(e: ExecError) -> anyhow::Error {
    match e {
        ExecError::Usage(m) => UsageError(m).into(),
        other => other.into(),
    }
}

fn plan(args: &ExecArgs) -> Result<ExecPlan> {
    let parameter = match (&args.parameter_scan[..], &args.parameter_list[..]) {
        ([name, min, max], []) => {
            let num = |v: &str, what: &str| {
                v.parse::<f64>().map_err(|_| {
                    UsageError(format!(
                        "--parameter-scan {name}: {what} '{v}' is not a number"
                    ))
                })
            };
            Some(
                Parameter::scan(
                    name,
                    num(min, "MIN")?,
                    num(max, "MAX")?,
                    args.parameter_step_size.unwrap_or(1.0),
                )
                .map_err(usage)?,
            )
        }
        ([], [name, values]) => Some(Parameter {
            name: name.clone(),
            values: values.split(',').map(str::to_string).collect(),
        }),
        _ => None,
    };
    let output = match args.output.as_str() {
        "null" => Output::Null,
        "pipe" => Output::Pipe,
        "inherit" => Output::Inherit,
        file => Output::File(file.into()),
    };
    if args.min_time > args.max_time {
        return Err(UsageError(format!(
            "--min-time {} is above --max-time {}",
            args.min_time, args.max_time
        ))
        .into());
    }
    if args.min_runs > args.max_runs {
        return Err(UsageError(format!(
            "--min-runs {} is above --max-runs {}",
            args.min_runs, args.max_runs
        ))
        .into());
    }
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
        output,
        warmup: args.warmup,
        runs: args.runs,
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        min_time: Duration::from_secs_f64(args.min_time),
        max_time: Duration::from_secs_f64(args.max_time),
        target_rel_ci: args.precision / 100.0,
        ignore_failure: args.ignore_failure,
        interleave: !args.no_interleave,
        timeout: args.timeout.map(Duration::from_secs_f64),
        seed: args.seed,
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
}

/// `warpt exec`.
pub fn run(args: &ExecArgs) -> Result<Outcome> {
    let plan = plan(args)?;
    let jobs = plan.jobs().map_err(usage)?;
    // Check every destination before spending minutes measuring.
    let prepare =
        |p: &Option<std::path::PathBuf>| p.as_deref().map(ExportTarget::prepare).transpose();
    let (json_out, md_out, csv_out, warpt_out) = (
        prepare(&args.export_json)?,
        prepare(&args.export_markdown)?,
        prepare(&args.export_csv)?,
        prepare(&args.export_file)?,
    );
    let interrupt = warpt_run::interrupt::install_handler()?;
    let start = jiff::Timestamp::now();
    let cost = warpt_exec::calibrate(&plan).map_err(usage)?;
    if let Some(c) = cost {
        eprintln!(
            "shell spawn time (subtracted from every run): {} wall, {} user, {} system (mean of {} runs of an empty command)",
            time(c.wall_s),
            time(c.user_s),
            time(c.sys_s),
            c.runs
        );
    }
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
    let results = warpt_exec::measure(&plan, jobs, cost, &spinner, Some(&interrupt));
    spinner.bar.finish_and_clear();
    let interrupted = interrupt.load(std::sync::atomic::Ordering::Relaxed);
    let suite_run = warpt_exec::report::suite_run(
        &plan,
        &results,
        cost,
        start,
        std::env::args().collect(),
        interrupted,
    );

    let mut text = String::new();
    for (i, r) in results.iter().enumerate() {
        text += &warpt_exec::hyperfine::describe(i, r);
        text.push('\n');
    }
    text += &output::results(&suite_run);
    text += &warpt_exec::report::summary_text(&results, plan.seed);
    if args.json {
        eprint!("{text}");
        println!("{}", serde_json::to_string_pretty(&suite_run)?);
    } else {
        print!("{text}");
    }
    if let Some(t) = json_out {
        eprintln!(
            "wrote {}",
            t.write_json(&warpt_exec::hyperfine::json(&results))?
                .display()
        );
    }
    if let Some(t) = md_out {
        eprintln!(
            "wrote {}",
            t.write_text(&warpt_exec::hyperfine::markdown(&results))?
                .display()
        );
    }
    if let Some(t) = csv_out {
        eprintln!(
            "wrote {}",
            t.write_text(&warpt_exec::hyperfine::csv(&results))?
                .display()
        );
    }
    if let Some(t) = warpt_out {
        eprintln!("exported {}", t.write(&suite_run)?.display());
    }
    warpt_run::history::record_run(&args.store.choice(), None, &suite_run);
    Ok(Outcome::of(&suite_run))
}
