//! The result history from a run's side: which store a command uses and
//! recording a finished run in it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use warpt_model::{BenchmarkSuiteRun, StressRun};
use warpt_store::{Location, Recorded, Source, Store};

use crate::UsageError;
use crate::config::{Config, Flags};

/// Where a finished run is recorded (`--store`, `--no-store`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StoreChoice {
    /// The configured store (`WARPT_STORE`, the configuration file, the
    /// XDG default).
    #[default]
    Configured,
    /// This store: a SQLite file or a `postgres://` URL.
    At(PathBuf),
    /// This store, already resolved (`warpt serve`'s own): no
    /// configuration is read to find it.
    Open(Location),
    /// Not recorded (`--no-store`).
    Off,
}

impl StoreChoice {
    /// From the two flags.
    pub fn from_flags(store: Option<PathBuf>, no_store: bool) -> StoreChoice {
        match (store, no_store) {
            (_, true) => StoreChoice::Off,
            (Some(p), false) => StoreChoice::At(p),
            (None, false) => StoreChoice::Configured,
        }
    }

    /// The `--store` value, if one was given.
    pub fn flag(&self) -> Option<&Path> {
        match self {
            StoreChoice::At(p) => Some(p),
            _ => None,
        }
    }
}

/// The store: `--store`, else `WARPT_STORE`, else `store` in the
/// configuration file (`config` or the one found), else the XDG default. A
/// `postgres://` URL is a PostgreSQL database, anything else a SQLite file.
pub fn path(flag: Option<&Path>, config: Option<&Path>) -> Result<Location> {
    let flags = Flags {
        store: flag.map(Path::to_path_buf),
        ..Flags::default()
    };
    let cfg = Config::load(config, &|k| std::env::var(k).ok(), &flags)?;
    match cfg.store.value {
        Some(p) => Ok(Location::parse(&p)),
        None => warpt_store::default_path()
            .map(Location::Sqlite)
            .ok_or_else(|| {
                UsageError("no store path: set --store, WARPT_STORE or HOME".into()).into()
            }),
    }
}

/// Records `what` (a run's kind and id) with `write` unless `--no-store`.
/// A store that cannot be written is a warning: the results were already
/// printed and exported.
fn record(
    flags: &StoreChoice,
    config: Option<&Path>,
    what: (&str, &str),
    write: impl FnOnce(&mut Store) -> Result<Recorded, warpt_store::StoreError>,
) {
    let location = match flags {
        StoreChoice::Off => return,
        StoreChoice::Open(l) => Ok(l.clone()),
        _ => path(flags.flag(), config),
    };
    let done = location.and_then(|p| {
        let mut store = Store::open(&p).with_context(|| format!("opening the store {p}"))?;
        Ok((write(&mut store)?, p))
    });
    match done {
        Ok((Recorded::Added, p)) => eprintln!("recorded {} {} in {p}", what.0, what.1),
        Ok((Recorded::AlreadyStored, p)) => {
            eprintln!("{} {} was already in {p}", what.0, what.1)
        }
        Err(e) => eprintln!(
            "warning: the {} was not recorded in the store: {e:#}",
            what.0
        ),
    }
}

/// Records a finished suite run unless `--no-store`.
pub fn record_run(flags: &StoreChoice, config: Option<&Path>, run: &BenchmarkSuiteRun) {
    record(flags, config, ("run", &run.id), |s| {
        s.record_run(run, &Source::Run)
    });
}

/// Records a finished stress run unless `--no-store`.
pub fn record_stress(flags: &StoreChoice, run: &StressRun) {
    record(flags, None, ("stress run", &run.id), |s| {
        s.record_stress(run, run.system.as_ref())
    });
}

/// Opens the store a `results` command reads, which must exist.
pub fn open_existing(flag: Option<&Path>) -> Result<(Store, Location)> {
    let p = path(flag, None)?;
    if !p.exists() {
        return Err(UsageError(format!(
            "no store at {p} (nothing recorded yet, or set --store / WARPT_STORE)"
        ))
        .into());
    }
    let store = Store::open(&p).with_context(|| format!("opening the store {p}"))?;
    Ok((store, p))
}

/// Where a comparison finds noise: `--assume-noise` if given, else the
/// store (when one exists and `--no-store` is not set), else nowhere.
pub fn noise_lookup(
    flags: &StoreChoice,
    assume_pct: Option<f64>,
    exclude: Vec<String>,
) -> Box<dyn warpt_report::NoiseLookup> {
    if let Some(pct) = assume_pct {
        return Box::new(warpt_report::AssumedNoise(pct / 100.0));
    }
    if *flags == StoreChoice::Off {
        return Box::new(warpt_report::NoNoise);
    }
    match open_existing(flags.flag()) {
        Ok((store, _)) => Box::new(crate::StoreNoise::new(store, exclude)),
        Err(_) => Box::new(warpt_report::NoNoise),
    }
}

/// Compares two labelled runs with the noise [`noise_lookup`] finds (their
/// own ids left out of the histories).
pub fn compare(
    flags: &StoreChoice,
    assume_pct: Option<f64>,
    (base, base_label): (&BenchmarkSuiteRun, &str),
    (current, current_label): (&BenchmarkSuiteRun, &str),
    options: &warpt_report::Options,
) -> warpt_report::Comparison {
    let exclude = vec![base.id.clone(), current.id.clone()];
    let noise = noise_lookup(flags, assume_pct, exclude);
    warpt_report::compare(
        base,
        base_label,
        current,
        current_label,
        options,
        noise.as_ref(),
    )
}

/// A run named by an export file or by an id in the store, with its label.
pub fn load_side(what: &str, store: Option<&Path>) -> Result<(BenchmarkSuiteRun, String)> {
    let path = Path::new(what);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| UsageError(format!("{what}: {e}")))?;
        let run = warpt_model::load_suite_run(&text)
            .map_err(|e| UsageError(format!("{what}: not a warpt export: {e}")))?;
        return Ok((run, what.to_string()));
    }
    let (store, p) = open_existing(store).map_err(|e| {
        UsageError(format!(
            "'{what}' is not a file, and there is no store to look it up in: {e}"
        ))
    })?;
    let run = store.load_run(what).map_err(|e| {
        UsageError(format!(
            "'{what}' is neither a file nor a run in {}: {e}",
            p
        ))
    })?;
    let label = format!("run {}", run.id);
    Ok((run, label))
}

/// One file recorded by [`import_files`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Imported {
    /// The file, as given.
    pub file: String,
    /// The format it was read as (`warpt`, `hyperfine`, ...).
    pub format: &'static str,
    /// The run it holds.
    pub run_id: String,
    /// Its suite.
    pub suite: String,
    /// Its benchmark count.
    pub benchmarks: usize,
    /// Whether it was new to the store (false: already there).
    pub added: bool,
}

/// Reads every file (warpt's own export, or a tool's file in the format
/// named `forced` or recognised) before recording any — a file that does
/// not read is a usage error and nothing is recorded — then records each
/// into the store at `location` as an import.
pub fn import_files(
    location: &Location,
    files: &[PathBuf],
    forced: Option<&str>,
) -> Result<Vec<Imported>> {
    let mut runs = Vec::new();
    for file in files {
        let (format, run) =
            warpt_import::read_any(file, forced).map_err(|e| UsageError(e.to_string()))?;
        runs.push((file, format, run));
    }
    let mut store =
        Store::open(location).with_context(|| format!("opening the store {location}"))?;
    let mut out = Vec::new();
    for (file, format, run) in runs {
        let source = Source::Import(file.display().to_string());
        let added = matches!(store.record_run(&run, &source)?, Recorded::Added);
        out.push(Imported {
            file: file.display().to_string(),
            format,
            run_id: run.id.clone(),
            suite: run.suite.clone(),
            benchmarks: run.benchmarks.len(),
            added,
        });
    }
    Ok(out)
}
