//! The numbers a kernel's answer must match: bench.yaml's `reference`, a
//! JSON file of expected numbers or a Python function called with the
//! kernel's arguments in an adapter of its own (killed, with its process
//! group, past the setup stage's limit).

use std::path::Path;
use std::time::Duration;

use crate::accuracy;
use crate::config::Reference;
use crate::driver::{Driver, LoadOptions};

use super::Unit;

/// The expected numbers of `unit`'s reference; a callable's answer is
/// written to `scratch` (kept beside the kernel's own output). `foreign`:
/// the kernel runs through bench.yaml's `command`, where only a file can
/// be the reference.
pub(super) fn expected(
    unit: &Unit,
    python: &str,
    foreign: bool,
    limit: Duration,
    scratch: &Path,
) -> Result<Vec<Option<f64>>, String> {
    let dir = unit.file.parent().unwrap_or(Path::new("."));
    let Some(reference) = unit.combo.reference.clone() else {
        return Err("no reference".into());
    };
    match reference.under(dir) {
        Reference::Expected(path) => accuracy::read_expected(&path),
        Reference::Callable { .. } if foreign => Err(
            "a reference function needs Python's adapter, and this kernel runs through \
             bench.yaml's command: give a JSON file of the expected numbers"
                .into(),
        ),
        Reference::Callable { file, function } => {
            let load = LoadOptions {
                kwargs: unit.combo.kwargs.clone(),
                defaults: unit.combo.settings.clone(),
                ..Default::default()
            };
            let kwargs = unit.combo.kwargs.clone();
            let out = scratch.to_path_buf();
            let name = function.clone();
            let done = Driver::start_limited(
                Driver::python_command(python, &load),
                python,
                &unit.file,
                &load,
                limit,
                move |driver| -> Result<(), String> {
                    let mut driver = driver.map_err(|e| e.to_string())?;
                    driver
                        .reference(file.as_deref(), &name, &kwargs, &out)
                        .map_err(|e| e.to_string())?;
                    driver.finish().map_err(|e| e.to_string())
                },
            )
            .map_err(|e| e.to_string())?;
            match done {
                Some(called) => called.map_err(|e| format!("the reference {function}(): {e}"))?,
                None => {
                    return Err(format!(
                        "the reference {function}() took longer than {:.0} s",
                        limit.as_secs_f64()
                    ));
                }
            }
            accuracy::read_expected(scratch)
        }
    }
}
