//! `warpt serve`: the result history over HTTP (see `warpt-server`).

use anyhow::Result;
use warpt_server::{ServeError, ServeOptions};

use crate::cli::ServeArgs;
use crate::registry::{registry, registry_found};
use crate::{Outcome, UsageError};
use warpt_run::history;

/// Serves until Ctrl-C or SIGTERM.
pub fn run(args: &ServeArgs) -> Result<Outcome> {
    let bind = args.bind.parse().map_err(|e| {
        UsageError(format!(
            "--bind '{}': {e}; give ADDR:PORT, e.g. 127.0.0.1:8321",
            args.bind
        ))
    })?;
    let store = history::path(args.store.as_deref(), None)?;
    let (token_file, token_given) = match &args.token_file {
        Some(p) => (p.clone(), true),
        None => (
            warpt_server::auth::default_path().ok_or_else(|| {
                UsageError(
                    "no $XDG_CONFIG_HOME or $HOME for the token file: give --token-file".into(),
                )
            })?,
            false,
        ),
    };
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("finding the warpt binary to execute runs with: {e}"))?;
    let access = warpt_server::Access::new(
        args.allow_commands,
        &args.allow_paths,
        &args.allow_host,
        args.token_for_reads,
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let options = ServeOptions {
        bind,
        store,
        token_file,
        token_given,
        exe,
        cache_entries: args.cache_entries,
        access,
    };
    // The dashboard lists the declared benchmarks too; a broken declaration
    // is reported but does not keep the server down.
    let specs = match registry_found() {
        Ok(reg) => reg.all_specs(),
        Err(e) => {
            eprintln!("warning: {e:#}; the user suite is left out");
            registry().all_specs()
        }
    };
    match warpt_server::serve(&options, specs) {
        Ok(()) => Ok(Outcome::Success),
        Err(ServeError::Usage(msg)) => Err(UsageError(msg).into()),
        Err(e) => Err(e.into()),
    }
}
