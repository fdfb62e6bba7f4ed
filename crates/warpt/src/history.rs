//! The result history from the CLI's side: which store a command uses and
//! recording a finished run in it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use warpt_model::{BenchmarkSuiteRun, StressRun};
use warpt_store::{Recorded, Source, Store};

use crate::UsageError;
use crate::cli::StoreFlags;
use crate::config::{Config, Flags};

/// The store path: `--store`, else `WARPT_STORE`, else `store` in the
/// configuration file (`config` or the one found), else the XDG default.
pub fn path(flag: Option<&Path>, config: Option<&Path>) -> Result<PathBuf> {
    let flags = Flags {
        store: flag.map(Path::to_path_buf),
        ..Flags::default()
    };
    let cfg = Config::load(config, &|k| std::env::var(k).ok(), &flags)?;
    match cfg.store.value {
        Some(p) => Ok(PathBuf::from(p)),
        None => warpt_store::default_path().ok_or_else(|| {
            UsageError("no store path: set --store, WARPT_STORE or HOME".into()).into()
        }),
    }
}

fn report(what: &str, id: &str, store: &Path, done: Recorded) {
    match done {
        Recorded::Added => eprintln!("recorded {what} {id} in {}", store.display()),
        Recorded::AlreadyStored => {
            eprintln!("{what} {id} was already in {}", store.display())
        }
    }
}

/// Records a finished suite run unless `--no-store`. A store that cannot be
/// written is a warning: the results were already printed and exported.
pub fn record_run(flags: &StoreFlags, config: Option<&Path>, run: &BenchmarkSuiteRun) {
    if flags.no_store {
        return;
    }
    let done = path(flags.store.as_deref(), config).and_then(|p| {
        let mut store =
            Store::open(&p).with_context(|| format!("opening the store {}", p.display()))?;
        let done = store.record_run(run, &Source::Run)?;
        Ok((p, done))
    });
    match done {
        Ok((p, done)) => report("run", &run.id, &p, done),
        Err(e) => eprintln!("warning: the run was not recorded in the store: {e:#}"),
    }
}

/// Records a finished stress run unless `--no-store`.
pub fn record_stress(flags: &StoreFlags, run: &StressRun) {
    if flags.no_store {
        return;
    }
    let done = path(flags.store.as_deref(), None).and_then(|p| {
        let mut store =
            Store::open(&p).with_context(|| format!("opening the store {}", p.display()))?;
        let done = store.record_stress(run, run.system.as_ref())?;
        Ok((p, done))
    });
    match done {
        Ok((p, done)) => report("stress run", &run.id, &p, done),
        Err(e) => eprintln!("warning: the stress run was not recorded in the store: {e:#}"),
    }
}

/// Opens the store a `results` command reads, which must exist.
pub fn open_existing(flag: Option<&Path>) -> Result<(Store, PathBuf)> {
    let p = path(flag, None)?;
    if !p.exists() {
        return Err(UsageError(format!(
            "no store at {} (nothing recorded yet, or set --store / WARPT_STORE)",
            p.display()
        ))
        .into());
    }
    let store = Store::open(&p).with_context(|| format!("opening the store {}", p.display()))?;
    Ok((store, p))
}
