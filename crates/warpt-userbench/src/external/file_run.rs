//! What one benchmark file runs with ([`FileRun`]): the harness suite's
//! parameters, and how its adapter starts (a fresh process, a bench.yaml
//! command, or the pytest plugin's socket).

use std::path::PathBuf;

use tempfile::TempDir;
use warpt_harness::{BenchmarkError, RunContext};

use super::failed;
use crate::counted;
use crate::driver::{Driver, LoadOptions};

/// Environment variables of the compiled-graph caches a fresh interpreter
/// under `--cold-start` gets empty directories for.
const COMPILED_CACHES: [&str; 2] = ["TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"];

/// What one benchmark file runs with: the harness suite's parameters.
#[derive(Debug, Clone, Default)]
pub struct FileRun {
    /// The benchmark file.
    pub file: PathBuf,
    /// The interpreter.
    pub python: String,
    /// How the adapter loads it.
    pub load: LoadOptions,
    /// Where the last call's output goes (a JSON array), if anywhere.
    pub output_file: Option<PathBuf>,
    /// A fresh interpreter (load and setup untimed) for every sample.
    pub cold_start: bool,
    /// The adapter command line for a file in another language (bench.yaml
    /// `command`, `{file}` replaced); Python's adapter without one.
    pub command: Option<String>,
    /// `measure=instructions`: one call's instructions counted too
    /// ([`crate::counted`]).
    pub count: bool,
    /// The Unix socket of an adapter that is already running (the pytest
    /// plugin's, [`crate::pytest`]): `file` is then the name it knows the
    /// benchmark by (a test's node id), not a file.
    pub connect: Option<PathBuf>,
}

impl FileRun {
    /// The run the parameters of a `harness` benchmark describe.
    pub fn from_context(ctx: &RunContext) -> Result<Self, BenchmarkError> {
        let object =
            |key: &str| -> Result<serde_json::Map<String, serde_json::Value>, BenchmarkError> {
                match ctx.str_param(key)? {
                    "" => Ok(serde_json::Map::new()),
                    text => serde_json::from_str(text).map_err(|e| BenchmarkError::InvalidParam {
                        key: key.into(),
                        reason: format!("not a JSON object: {e}"),
                    }),
                }
            };
        let kwargs = object("kwargs")?;
        let defaults = object("defaults")?;
        let cold_start = ctx.bool_param("cold_start")?;
        let mut settings = serde_json::Map::new();
        // The spec's choices (crate::suite) refuse any other value.
        let timing = ctx.str_param("timing")?;
        if !timing.is_empty() {
            settings.insert("timing".into(), timing.into());
        }
        for key in ["cold_cache", "device_hygiene"] {
            match ctx.str_param(key)? {
                "" => {}
                "true" => drop(settings.insert(key.into(), true.into())),
                "false" => drop(settings.insert(key.into(), false.into())),
                other => {
                    return Err(BenchmarkError::InvalidParam {
                        key: key.into(),
                        reason: format!("'{other}' is not true or false"),
                    });
                }
            }
        }
        if cold_start {
            // --cold-start asks for cold caches too, unless said otherwise.
            settings.entry("cold_cache").or_insert(true.into());
        }
        let output = ctx.str_param("output_file")?;
        Ok(FileRun {
            file: PathBuf::from(ctx.str_param("file")?),
            // The interpreter the run resolved `python` to, else `python`.
            python: match ctx.str_param("python_executable")? {
                "" => ctx.str_param("python")?,
                resolved => resolved,
            }
            .to_string(),
            load: LoadOptions {
                kwargs,
                reproducible: ctx.bool_param("reproducible")?.then_some(ctx.seed),
                settings,
                defaults,
                env: Vec::new(),
            },
            output_file: (!output.is_empty()).then(|| PathBuf::from(output)),
            cold_start,
            command: Some(ctx.str_param("command")?)
                .filter(|c| !c.is_empty())
                .map(str::to_string),
            // The spec's choices refuse anything but time and instructions.
            count: ctx.str_param("measure")? == "instructions",
            connect: None,
        })
    }

    /// A fresh adapter with the file loaded and set up (see
    /// [`FileRun::open`]).
    pub(super) fn start(
        &self,
        caches: &mut Vec<TempDir>,
        first: Option<&crate::shared::SharedSamples>,
    ) -> Result<Driver, BenchmarkError> {
        let mut driver = self.open(caches, first)?;
        // A socket's adapter was set up with the load.
        if self.connect.is_none() {
            driver.setup().map_err(failed)?;
        }
        Ok(driver)
    }

    /// Whether one adapter can serve this file's trials one after another
    /// (set up again after each teardown): Python's adapter in a process of
    /// its own — not a socket's, nor another language's (whose adapter the
    /// protocol does not ask to set up twice) — and neither `--cold-start`
    /// (a fresh interpreter per sample) nor a counted run.
    pub(super) fn serves_trials(&self) -> bool {
        self.connect.is_none() && self.command.is_none() && !self.cold_start && !self.count
    }

    /// A fresh adapter with the file loaded, not set up; under
    /// `--cold-start` with empty compiled-graph cache directories, kept in
    /// `caches` until the run ends.
    /// `first`: a socket's adapter is sent the speculative shared run
    /// ([`Driver::connect_sharing`]).
    pub(super) fn open(
        &self,
        caches: &mut Vec<TempDir>,
        first: Option<&crate::shared::SharedSamples>,
    ) -> Result<Driver, BenchmarkError> {
        let mut load = self.load.clone();
        if self.cold_start {
            let dir = tempfile::Builder::new()
                .prefix("warpt-cold-caches")
                .tempdir()
                .map_err(|e| {
                    BenchmarkError::Failed(format!("a fresh compiled-cache directory: {e}"))
                })?;
            for var in COMPILED_CACHES {
                load.env
                    .push((var.to_string(), dir.path().join(var.to_lowercase())));
            }
            caches.push(dir);
        }
        match (&self.connect, &self.command) {
            (Some(socket), _) => {
                Driver::connect_sharing(socket, &self.file.to_string_lossy(), &load, first)
            }
            (None, Some(line)) => Driver::start_with(
                Driver::shell_command(line, &self.file, &load),
                "sh",
                &self.file,
                &load,
            ),
            (None, None) => Driver::python_with(&self.python, &self.file, &load),
        }
        .map_err(failed)
    }
}

impl FileRun {
    /// How a counted session of this file starts.
    pub(super) fn session(&self) -> counted::Session {
        match &self.command {
            Some(line) => counted::Session::command(line, &self.file, &self.load),
            None => counted::Session::python(&self.python, &self.load),
        }
    }
}
