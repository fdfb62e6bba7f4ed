//! `warpt completions SHELL` and `warpt man`: generated from the command
//! line's own clap model, so they never drift from it.

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::Outcome;
use crate::cli::Cli;

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<Outcome> {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "warpt", &mut std::io::stdout());
    Ok(Outcome::Success)
}

/// Prints the man page (roff) on stdout.
pub fn man() -> Result<Outcome> {
    clap_mangen::Man::new(Cli::command())
        .render(&mut std::io::stdout())
        .context("writing the man page")?;
    Ok(Outcome::Success)
}
