//! warpt: one binary that measures how fast a machine and its workloads run.
//!
//! This crate is the command line only: parse, call the library crates, print
//! (and the one helper only its commands need: the history reads of the
//! report commands, [`stored`]).
//! Exit status: 0 success, 1 a benchmark failed (or a runtime error),
//! 2 bad usage, 130 interrupted.

mod cli;
mod commands;
mod progress;
mod registry;
mod stored;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{
    BenchmarkCommand, CiCommand, Cli, Command, ConfigCommand, FleetCommand, HarnessCommand,
    ResultsCommand,
};

pub use warpt_run::RunOutcome as Outcome;
pub use warpt_run::UsageError;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Benchmark { action } => match action {
            BenchmarkCommand::List(args) => commands::benchmark::list(&args),
            BenchmarkCommand::Describe(args) => commands::benchmark::describe(&args),
            BenchmarkCommand::Run(args) => commands::run::run(&args),
            BenchmarkCommand::Compare(args) => commands::compare::run(&args),
        },
        Command::Harness { action } => match action {
            HarnessCommand::Discover(args) => commands::harness::discover(&args),
            HarnessCommand::Run(args) => commands::harness_run::run(&args),
        },
        Command::Schema(args) => commands::schema::print(&args),
        Command::List(args) => commands::list::run(&args),
        Command::NetServer(args) => commands::net_server::run(&args),
        Command::Serve(args) => commands::serve::run(&args),
        Command::Exec(args) => commands::exec::run(&args),
        Command::Monitor(args) => commands::monitor::run(&args),
        Command::Stress(args) => commands::stress::run(&args),
        Command::Results { action } => match action {
            ResultsCommand::List(args) => commands::results::list(&args),
            ResultsCommand::Show(args) => commands::results::show(&args),
            ResultsCommand::Query(args) => commands::results::query(&args),
            ResultsCommand::Import(args) => commands::results::import(&args),
            ResultsCommand::Export(args) => commands::results::export(&args),
            ResultsCommand::Trend(args) => commands::trend::run(&args),
            ResultsCommand::Migrate(args) => commands::migrate::run(&args),
        },
        Command::Report(args) => commands::report::run(&args),
        Command::Score(args) => commands::score::run(&args),
        Command::Ci { action } => match action {
            CiCommand::Pr(args) => commands::ci::pr(&args),
            CiCommand::Record(args) => commands::ci_record::record(&args),
        },
        Command::Fleet { action } => match action {
            FleetCommand::Submit(args) => commands::fleet::submit(&args),
            FleetCommand::Status(args) => commands::fleet::status(&args),
            FleetCommand::Collect(args) => commands::fleet::collect(&args),
            FleetCommand::Outliers(args) => commands::outliers::run(&args),
            FleetCommand::Node(args) => commands::fleet_node::run(&args),
        },
        Command::Noise(args) => commands::noise::run(&args),
        Command::Demo(args) => commands::demo::run(&args),
        Command::Completions(args) => commands::shell::completions(args.shell),
        Command::Man => commands::shell::man(),
        Command::Config {
            action: ConfigCommand::Show(args),
        } => commands::config::show(&args),
        Command::Worker => commands::worker::run(),
    };
    match result {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(e) if warpt_run::is_usage_error(&e) => {
            eprintln!("error: {e}");
            ExitCode::from(warpt_run::outcome::EXIT_USAGE)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
