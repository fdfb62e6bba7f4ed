//! What every importer shares: metrics from samples or from a tool's own
//! summary, a result per benchmark, and a run id that is the same each time
//! the same file is imported (so a second import is recognised).

use std::collections::BTreeMap;
use std::path::Path;

use jiff::Timestamp;
use serde_json::Value;
use warpt_model::{
    BenchmarkId, BenchmarkKind, BenchmarkMetric, BenchmarkRunResult, BenchmarkSpec,
    BenchmarkSuiteRun, Params, RunStatus, StageLimits,
};

use crate::ImportError;

/// The text of `path`.
pub fn read(path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|e| ImportError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// When `path` was last written: the run's time when the file has none.
pub fn file_time(path: &Path) -> Timestamp {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| Timestamp::try_from(t).ok())
        .unwrap_or_else(Timestamp::now)
}

/// FNV-1a, 64 bits: a stable fingerprint of the imported content.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The array under `key` of a tool's JSON document, or why there is none.
pub fn array<'a>(
    doc: &'a serde_json::Value,
    key: &str,
) -> Result<&'a Vec<serde_json::Value>, String> {
    doc.get(key)
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| format!("no '{key}' array"))
}

/// A run id in warpt's shape (`20261124T181705Z-4c7a1c`) from the time
/// and the content, so importing the same file twice gives the same id.
pub fn run_id(at: Timestamp, content: &[u8]) -> String {
    warpt_model::run_id(at, &format!("{:06x}", fingerprint(content) & 0xff_ffff))
}

/// A metric from raw `samples` (value: their median), with full statistics.
pub fn sampled(
    name: &str,
    unit: &str,
    higher_is_better: bool,
    samples: &[f64],
) -> Option<BenchmarkMetric> {
    let stats = warpt_model::MetricStats::summarize(samples)?;
    Some(BenchmarkMetric {
        name: name.into(),
        value: stats.median,
        unit: unit.into(),
        higher_is_better,
        tags: BTreeMap::new(),
        stats: Some(stats),
    })
}

/// A metric known only by the tool's own figure (no samples in the file).
pub fn point(name: &str, unit: &str, higher_is_better: bool, value: f64) -> BenchmarkMetric {
    BenchmarkMetric {
        name: name.into(),
        value,
        unit: unit.into(),
        higher_is_better,
        tags: BTreeMap::new(),
        stats: None,
    }
}

/// A passed result of benchmark `suite/name` with `metrics`.
pub fn result(
    suite: &str,
    name: &str,
    tool: &str,
    params: Params,
    metrics: Vec<BenchmarkMetric>,
    at: Timestamp,
) -> BenchmarkRunResult {
    let spec = BenchmarkSpec {
        id: BenchmarkId::new(suite, name),
        components: Vec::new(),
        kind: BenchmarkKind::Application,
        description: Some(format!("imported from {tool}")),
        default_duration_seconds: None,
        external_tool: Some(tool.into()),
        params: params.clone(),
        param_help: BTreeMap::new(),
        param_kinds: Default::default(),
        param_ranges: Default::default(),
        param_choices: BTreeMap::new(),
        param_units: Default::default(),
        clock_probe: Default::default(),
        check: None,
        timeouts: StageLimits::default(),
        metrics: metrics.iter().map(|m| m.name.clone()).collect(),
    };
    let mut r = BenchmarkRunResult::new(spec, params, RunStatus::Passed, at);
    // Metrics of a swept parameter carry it as a tag, as warpt's own do.
    let tags: BTreeMap<String, String> = r
        .params
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    r.metrics = metrics
        .into_iter()
        .map(|mut m| {
            m.tags.extend(tags.clone());
            m
        })
        .collect();
    r
}

/// The suite run of imported `benchmarks`, `metadata` saying where from.
pub fn suite_run(
    suite: &str,
    benchmarks: Vec<BenchmarkRunResult>,
    at: Timestamp,
    content: &[u8],
    metadata: BTreeMap<String, String>,
) -> BenchmarkSuiteRun {
    BenchmarkSuiteRun {
        id: run_id(at, content),
        suite: suite.into(),
        components: Vec::new(),
        benchmarks,
        metadata: Some(metadata),
        start_time: Some(at),
        end_time: Some(at),
        interrupted: false,
        // Neither warpt's manifest nor this machine's description: the
        // file came from elsewhere, and saying otherwise would be false.
        manifest: None,
        system: None,
        trials: Vec::new(),
    }
}

/// A number field of `v`.
pub fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}
