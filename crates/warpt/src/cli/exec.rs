//! `warpt exec`: hyperfine's flags, spelled as hyperfine spells them.

use std::path::PathBuf;

use clap::Args;

use super::{StoreFlags, parse_percent, parse_seconds};

/// `warpt exec`
#[derive(Debug, Args)]
#[command(
    after_help = "Each COMMAND is one shell string, as hyperfine takes them. Several \
commands run interleaved (each once per round, in a new random order every round) so drift \
and heat hit them alike; --no-interleave runs one after the other. Every invocation is \
recorded as one `exec` suite run, so `benchmark compare`, `report` and `results` work on it."
)]
pub struct ExecArgs {
    /// The commands to benchmark.
    #[arg(required = true, value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// Unmeasured runs of each command first.
    #[arg(short = 'w', long, value_name = "N", default_value_t = 0)]
    pub warmup: u32,
    /// Exactly this many measured runs per command (no stopping rule).
    #[arg(short = 'r', long, value_name = "N", conflicts_with_all = ["min_runs", "max_runs"], value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// At least this many measured runs.
    #[arg(short = 'm', long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..))]
    pub min_runs: u32,
    /// At most this many measured runs.
    #[arg(short = 'M', long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(2..))]
    pub max_runs: u32,
    /// Measure each command at least this long (hyperfine's 3 s).
    #[arg(long, value_name = "SECONDS", default_value = "3", value_parser = parse_seconds)]
    pub min_time: f64,
    /// And at most this long, whatever the precision.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = parse_seconds)]
    pub max_time: f64,
    /// Stop once the median wall time's 95% CI half-width is within this
    /// percent of it (after --min-runs and --min-time).
    #[arg(long, value_name = "PERCENT", default_value = "1", value_parser = parse_percent)]
    pub precision: f64,
    /// Run before every run of a command (once for all, or once per command).
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Vec<String>,
    /// Run once before each command's runs.
    #[arg(short = 's', long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Run once after each command's runs.
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// The shell commands run in (its spawn time is measured and
    /// subtracted); `none` splits each command into argv instead.
    #[arg(short = 'S', long, value_name = "SHELL", default_value = "sh")]
    pub shell: String,
    /// No shell: the same as --shell none.
    #[arg(short = 'N')]
    pub no_shell: bool,
    /// Run each command for NAME = MIN, MIN+D, ... MAX, `{NAME}` substituted.
    #[arg(short = 'P', long, num_args = 3, value_names = ["NAME", "MIN", "MAX"], conflicts_with = "parameter_list")]
    pub parameter_scan: Vec<String>,
    /// The step D of --parameter-scan.
    #[arg(short = 'D', long, value_name = "D", requires = "parameter_scan")]
    pub parameter_step_size: Option<f64>,
    /// Run each command for NAME = each of the comma-separated VALUES.
    #[arg(short = 'L', long, num_args = 2, value_names = ["NAME", "VALUES"])]
    pub parameter_list: Vec<String>,
    /// A name for each command (in order; `{NAME}` substituted).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub command_name: Vec<String>,
    /// Feed this file to each run's stdin (default: /dev/null).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Where the commands' output goes: null, pipe, inherit or a file.
    #[arg(long, value_name = "WHERE", default_value = "null")]
    pub output: String,
    /// Record a non-zero exit status instead of stopping that command.
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// Run the commands one after the other instead of interleaved.
    #[arg(long)]
    pub no_interleave: bool,
    /// Two commands at the same time, each on its own half of the CPUs, started
    /// together; the verdict from their paired runs' ratios (Duet benchmarking).
    #[arg(long, conflicts_with_all = ["no_interleave", "timeout"])]
    pub duet: bool,
    /// Kill a run (and everything it started) after this long; the command
    /// then ends as timeout.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Option<f64>,
    /// Seed of the interleaving order.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
    /// A label recorded with the run (repeatable); `results list --label KEY=VALUE` finds it.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::cli::parse_label)]
    pub labels: Vec<(String, String)>,
    /// A sentence recorded with the run.
    #[arg(long, value_name = "TEXT", value_parser = crate::cli::parse_description)]
    pub description: Option<String>,
    /// Write hyperfine's JSON (its field names) to this file.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write hyperfine's Markdown table to this file.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Write hyperfine's CSV to this file.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write warpt's own export (the suite run) to this file.
    #[arg(long, value_name = "FILE")]
    pub export_file: Option<PathBuf>,
    /// Print the suite run as JSON on stdout (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// What to measure: `time` (hyperfine's measures), or `instructions` too:
    /// each command's executed instructions counted after its timed runs,
    /// three times, from the CPU's counters (perf_event_open) or else
    /// valgrind's cachegrind; skipped, saying why, where neither exists.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "time")]
    pub measure: MeasureArg,
    /// Where the run is recorded.
    #[command(flatten)]
    pub store: StoreFlags,
}

impl ExecArgs {
    /// The file `--export-NAME` names for hyperfine's format `name`
    /// (warpt-export's [`warpt_export::EXEC`]).
    pub fn export_path(&self, name: &str) -> &Option<PathBuf> {
        match name {
            "json" => &self.export_json,
            "markdown" => &self.export_markdown,
            "csv" => &self.export_csv,
            _ => &None,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// Every format of hyperfine's has its `--export-NAME` flag.
    #[test]
    fn each_hyperfine_format_has_its_export_flag() {
        for f in warpt_export::EXEC.formats() {
            let flag = format!("--export-{}", f.name());
            let cli = crate::cli::Cli::try_parse_from(["warpt", "exec", &flag, "out", "true"])
                .unwrap_or_else(|e| panic!("{flag}: {e}"));
            let crate::cli::Command::Exec(args) = cli.command else {
                panic!("{flag}: not exec");
            };
            assert!(args.export_path(f.name()).is_some(), "{flag}");
        }
    }
}

/// `--measure`'s choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MeasureArg {
    /// Wall, user and system time and peak memory.
    Time,
    /// The same, and executed instructions (deterministic).
    Instructions,
}
