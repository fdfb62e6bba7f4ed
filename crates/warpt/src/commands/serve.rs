//! `warpt serve`: the result history over HTTP (see `warpt-server`).

use anyhow::Result;
use warpt_server::{ServeError, ServeOptions};

use crate::cli::ServeArgs;
use crate::registry::Builtin;
use crate::{Outcome, UsageError};
use warpt_run::history;
use warpt_run::run::Suites;

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
        cache_entries: args.cache_entries,
        access,
        limits: warpt_server::listen::Limits {
            connections: usize::try_from(args.max_connections)?,
            header_read: std::time::Duration::from_secs(args.header_timeout),
            request: std::time::Duration::from_secs(args.request_timeout),
        },
    };
    // The configuration and the declared benchmarks, read once: submitted
    // runs are planned against them, never against a caller's files. A
    // broken declaration is reported but does not keep the server down.
    let config = warpt_run::config::Config::load(
        None,
        &|k| std::env::var(k).ok(),
        &warpt_run::config::Flags::default(),
    )?;
    let registry = match Builtin.declaring(config.file.as_deref().map(std::path::Path::new)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("warning: {e:#}; the user suite is left out");
            Builtin.plain()
        }
    };
    let base = warpt_run::PlanBase::new(config, registry)?;
    match warpt_server::serve(&options, base, std::sync::Arc::new(Builtin)) {
        Ok(()) => Ok(Outcome::Success),
        Err(ServeError::Usage(msg)) => Err(UsageError(msg).into()),
        Err(e) => Err(e.into()),
    }
}
