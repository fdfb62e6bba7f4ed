//! `warpt completions SHELL` and `warpt man`: generated from the command
//! line's own clap model, so they never drift from it.

use std::io::Write;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::Outcome;
use crate::cli::Cli;

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<Outcome> {
    let mut cmd = Cli::command();
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut cmd, "warpt", &mut text);
    print_all(&text).context("writing the completion script")
}

/// Prints the man page (roff) on stdout.
pub fn man() -> Result<Outcome> {
    let mut text = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut text)
        .context("rendering the man page")?;
    print_all(&text).context("writing the man page")
}

/// Writes `text` to stdout; a reader that stopped early (`| head`) is not
/// an error, as for any Unix filter.
fn print_all(text: &[u8]) -> std::io::Result<Outcome> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(Outcome::Success),
    }
}
