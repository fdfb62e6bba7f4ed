//! The suite's parameter tables: one row per parameter (name, default,
//! help), and the checks `check_params` runs before anything starts.

use std::collections::BTreeMap;

use warpt_model::{ParamKind, ParamValue, Params};

/// A benchmark's parameters: name, default, what it means.
pub type ParamTable = &'static [(&'static str, Default, &'static str)];

/// A default value that can live in a `const` table.
#[derive(Debug, Clone, Copy)]
pub enum Default {
    /// An integer.
    Int(i64),
    /// A number.
    Float(f64),
    /// Text.
    Str(&'static str),
}

/// An integer default.
pub const fn int(v: i64) -> Default {
    Default::Int(v)
}

/// A number default.
pub const fn float(v: f64) -> Default {
    Default::Float(v)
}

/// A text default.
pub const fn str_(v: &'static str) -> Default {
    Default::Str(v)
}

/// The defaults of `table`, as a spec holds them.
pub fn defaults(table: ParamTable) -> Params {
    table
        .iter()
        .map(|(k, d, _)| {
            let v = match *d {
                Default::Int(v) => ParamValue::Int(v),
                Default::Float(v) => ParamValue::Float(v),
                Default::Str(v) => ParamValue::Str(v.into()),
            };
            (k.to_string(), v)
        })
        .collect()
}

/// The defaults and help texts of `tables` together (a benchmark's own
/// parameters after the shared data ones).
pub fn merged(tables: &[ParamTable]) -> (Params, BTreeMap<String, String>) {
    let mut params = Params::new();
    let mut helps = BTreeMap::new();
    for t in tables {
        params.extend(defaults(t));
        helps.extend(help(t));
    }
    (params, helps)
}

/// The suite's parameters that name files: the inputs it reads and the
/// outputs it writes.
const PATH_KINDS: &[(&str, ParamKind)] = &[
    ("reference", ParamKind::InputPath),
    ("reads", ParamKind::InputPath),
    ("reads2", ParamKind::InputPath),
    ("queries", ParamKind::InputPath),
    ("targets", ParamKind::InputPath),
    ("export", ParamKind::OutputPath),
    ("scores", ParamKind::OutputPath),
    ("sam", ParamKind::OutputPath),
    ("vcf", ParamKind::OutputPath),
    ("contigs", ParamKind::OutputPath),
    ("histo", ParamKind::OutputPath),
];

/// The kinds of those of `params` that name files, as a spec holds them.
pub fn kinds(params: &Params) -> BTreeMap<String, ParamKind> {
    PATH_KINDS
        .iter()
        .filter(|(k, _)| params.contains_key(*k))
        .map(|(k, v)| (k.to_string(), *v))
        .collect()
}

/// The help texts of `table`.
pub fn help(table: ParamTable) -> BTreeMap<String, String> {
    table
        .iter()
        .map(|(k, _, h)| (k.to_string(), h.to_string()))
        .collect()
}

/// Allowed values of string parameters, as a spec holds them.
pub fn choices(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect()
}

/// `key`, if present, is an integer in `min..=max`.
pub fn check_int(p: &Params, key: &str, min: i64, max: i64) -> Result<(), String> {
    match p.get(key).map(|v| (v, v.as_i64())) {
        Some((_, Some(v))) if (min..=max).contains(&v) => Ok(()),
        Some((_, Some(v))) => Err(format!(
            "parameter '{key}' must be from {min} to {max}, not {v}"
        )),
        Some((v, None)) => Err(format!("parameter '{key}': '{v}' is not an integer")),
        None => Ok(()),
    }
}

/// `key`, if present, is a number in `min..=max`.
pub fn check_float(p: &Params, key: &str, min: f64, max: f64) -> Result<(), String> {
    match p.get(key).map(|v| (v, v.as_f64())) {
        Some((_, Some(v))) if (min..=max).contains(&v) => Ok(()),
        Some((_, Some(v))) => Err(format!(
            "parameter '{key}' must be from {min} to {max}, not {v}"
        )),
        Some((v, None)) => Err(format!("parameter '{key}': '{v}' is not a number")),
        None => Ok(()),
    }
}

/// `key`, if present and not empty, names a readable file.
pub fn check_file(p: &Params, key: &str) -> Result<(), String> {
    match p.get(key).and_then(ParamValue::as_str) {
        Some(path) if !path.is_empty() => match std::fs::metadata(path) {
            Ok(m) if m.is_file() => Ok(()),
            Ok(_) => Err(format!("parameter '{key}': {path} is not a file")),
            Err(e) => Err(format!("parameter '{key}': {path}: {e}")),
        },
        _ => Ok(()),
    }
}
