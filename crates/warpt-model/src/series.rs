//! A measured series: the metric its samples become, and how the seconds
//! of one sample convert to the metric's value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How the seconds of one sample become the metric's value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Convert {
    /// A rate: `value = work / seconds` (e.g. GFLOP per sample for GFLOP/s).
    Rate(f64),
    /// A time per unit: `value = seconds * factor` (e.g. 1e9 / loads for ns per load).
    Time(f64),
    /// Not a time: the sample is the metric's value itself (a number a
    /// command printed, a byte count). Any finite value, zero and
    /// negative included.
    Value,
}

impl Convert {
    /// The metric value of a sample that took `seconds`.
    pub fn apply(self, seconds: f64) -> f64 {
        match self {
            Convert::Rate(work) => work / seconds,
            Convert::Time(factor) => seconds * factor,
            Convert::Value => seconds,
        }
    }

    /// Whether a sample must be a positive time (every kind but `Value`).
    pub fn is_time(self) -> bool {
        !matches!(self, Convert::Value)
    }
}

/// One measured series: the metric it becomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesDef {
    /// Metric name.
    pub name: String,
    /// Metric unit.
    pub unit: String,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// Metric tags.
    pub tags: BTreeMap<String, String>,
    /// From seconds to the metric's value.
    pub convert: Convert,
}

impl SeriesDef {
    /// A series with the given metric identity.
    pub fn new(
        name: &str,
        unit: &str,
        higher_is_better: bool,
        tags: &[(&str, String)],
        convert: Convert,
    ) -> Self {
        SeriesDef {
            name: name.to_string(),
            unit: unit.to_string(),
            higher_is_better,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            convert,
        }
    }

    /// An untagged rate, higher better: `per_pass` units of work done by
    /// each timed pass, over its seconds.
    pub fn rate(name: &str, unit: &str, per_pass: f64) -> Self {
        SeriesDef::new(name, unit, true, &[], Convert::Rate(per_pass))
    }

    /// The series with tag `key` set to `value`.
    pub fn tag(mut self, key: &str, value: impl Into<String>) -> Self {
        self.tags.insert(key.to_string(), value.into());
        self
    }
}
