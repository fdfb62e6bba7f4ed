//! Which format a file is, from what it holds (not its name).

use std::path::Path;

use serde_json::Value;

use crate::{Format, ImportError, common::read, criterion::measurements};

/// The format of `path`: a directory with criterion's measurements, or a
/// JSON document shaped like one of the tools' exports. `None` for
/// anything else (warpt's own export included: the caller reads that).
pub fn detect(path: &Path) -> Result<Option<Format>, ImportError> {
    if path.is_dir() {
        return Ok((!measurements(path).is_empty()).then_some(Format::Criterion));
    }
    let text = read(path)?;
    let Ok(doc) = serde_json::from_str::<Value>(&text) else {
        return Ok(None);
    };
    Ok(of_json(&doc))
}

/// The format of a parsed JSON document.
pub fn of_json(doc: &Value) -> Option<Format> {
    let first = |key: &str| {
        doc.get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
    };
    if let Some(r) = first("results")
        && r.get("command").is_some()
        && (r.get("times").is_some() || r.get("mean").is_some())
    {
        return Some(Format::Hyperfine);
    }
    if doc.get("context").is_some()
        && first("benchmarks")
            .is_some_and(|b| b.get("time_unit").is_some() || b.get("real_time").is_some())
    {
        return Some(Format::Gbench);
    }
    if doc.get("machine_info").is_some()
        && first("benchmarks").is_some_and(|b| b.get("stats").is_some())
    {
        return Some(Format::PytestBenchmark);
    }
    None
}
