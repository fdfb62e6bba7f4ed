//! Reading the logs LoadGen leaves (the official one or warpt's): the
//! summary's verdict, flags and numbers, and the detail's `:::MLLOG`
//! entries.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::logs::{DETAIL_FILE, SUMMARY_FILE};

/// What a pair of LoadGen logs says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedLog {
    /// `SUT name`.
    pub sut_name: String,
    /// `Scenario` (`SingleStream`, ...; older LoadGens write `Single Stream`).
    pub scenario: String,
    /// `Mode`.
    pub mode: String,
    /// `Result is : VALID`.
    pub valid: bool,
    /// `Performance constraints satisfied` (Server only).
    pub perf_constraints_met: Option<bool>,
    /// `Min duration satisfied`.
    pub min_duration_met: Option<bool>,
    /// `Min queries satisfied`.
    pub min_queries_met: Option<bool>,
    /// `Early stopping satisfied`.
    pub early_stopping_met: Option<bool>,
    /// The `Recommendations:` lines, without their bullets.
    pub recommendations: Vec<String>,
    /// Every `name : number` line of the summary.
    pub values: BTreeMap<String, f64>,
    /// Every `:::MLLOG` entry of the detail log (the last of a repeated key).
    pub detail: BTreeMap<String, Value>,
}

/// Why logs could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// The file could not be read.
    #[error("reading {path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        reason: String,
    },
    /// The summary stops before its verdict.
    #[error("{0} is truncated or not a LoadGen summary: no '{1}' line")]
    Missing(String, &'static str),
}

impl ParsedLog {
    /// A summary value by its exact name (as left of ` : `).
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied()
    }

    /// The first summary value whose name starts with `prefix` and ends with `suffix`.
    pub fn value_like(&self, prefix: &str, suffix: &str) -> Option<f64> {
        self.values
            .iter()
            .find(|(k, _)| k.starts_with(prefix) && k.ends_with(suffix))
            .map(|(_, v)| *v)
    }

    /// A numeric detail entry.
    pub fn detail_f64(&self, key: &str) -> Option<f64> {
        self.detail.get(key).and_then(Value::as_f64)
    }

    /// The scenario without spaces (`Single Stream` → `SingleStream`).
    pub fn scenario_key(&self) -> String {
        self.scenario.replace(' ', "")
    }
}

fn yes(v: &str) -> Option<bool> {
    match v.trim() {
        "Yes" => Some(true),
        "NO" | "No" => Some(false),
        _ => None,
    }
}

/// Parses the text of `mlperf_log_summary.txt` (`name` is for messages).
pub fn parse_summary(text: &str, name: &str) -> Result<ParsedLog, ParseError> {
    let mut p = ParsedLog::default();
    let mut verdict = false;
    let mut in_recommendations = false;
    for raw in text.lines() {
        let line = raw.trim_end();
        if in_recommendations {
            if let Some(r) = line.strip_prefix(" * ") {
                p.recommendations.push(r.trim().to_string());
                continue;
            }
            if line.starts_with("   ") {
                if let Some(last) = p.recommendations.last_mut() {
                    last.push(' ');
                    last.push_str(line.trim());
                }
                continue;
            }
            in_recommendations = false;
        }
        if line == "Recommendations:" {
            in_recommendations = true;
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "SUT name" => p.sut_name = value.to_string(),
            "Scenario" => p.scenario = value.to_string(),
            "Mode" => p.mode = value.to_string(),
            "Result is" => {
                verdict = true;
                p.valid = value == "VALID";
            }
            "Performance constraints satisfied" => p.perf_constraints_met = yes(value),
            "Min duration satisfied" => p.min_duration_met = yes(value),
            "Min queries satisfied" => p.min_queries_met = yes(value),
            "Early stopping satisfied" => p.early_stopping_met = yes(value),
            _ => {
                if let Ok(v) = value.parse::<f64>() {
                    p.values.insert(key.to_string(), v);
                }
            }
        }
    }
    if p.scenario.is_empty() {
        return Err(ParseError::Missing(name.into(), "Scenario :"));
    }
    if !verdict {
        return Err(ParseError::Missing(name.into(), "Result is :"));
    }
    Ok(p)
}

/// The entries of `mlperf_log_detail.txt`; lines that are not `:::MLLOG`
/// JSON (or are cut off) are skipped.
pub fn parse_detail(text: &str) -> BTreeMap<String, Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix(":::MLLOG "))
        .filter_map(|j| serde_json::from_str::<Value>(j).ok())
        .filter_map(|v| Some((v.get("key")?.as_str()?.to_string(), v.get("value")?.clone())))
        .collect()
}

/// Reads the summary (required) and the detail log (when present) in `dir`.
pub fn read_dir(dir: &Path) -> Result<ParsedLog, ParseError> {
    let path = dir.join(SUMMARY_FILE);
    let io = |p: &Path, e: std::io::Error| ParseError::Io {
        path: p.display().to_string(),
        reason: e.to_string(),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
    let mut parsed = parse_summary(&text, &path.display().to_string())?;
    let detail = dir.join(DETAIL_FILE);
    if detail.is_file() {
        let text = std::fs::read_to_string(&detail).map_err(|e| io(&detail, e))?;
        parsed.detail = parse_detail(&text);
    }
    Ok(parsed)
}
