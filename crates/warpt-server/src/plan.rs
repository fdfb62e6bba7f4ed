//! The body of `POST /api/v1/runs`: a plan as `benchmark run` takes it,
//! field for flag, turned into that command's arguments.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ApiError;

/// A run to queue. Each field is the `benchmark run` flag of the same
/// name (`benchmarks` → `--benchmark`, `params` → `--param K=V`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// `--suite`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// `--benchmark`, repeated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub benchmarks: Vec<String>,
    /// `--component`, repeated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// `--param KEY=VALUE`; values may be strings, numbers or booleans.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Value>,
    /// `--duration`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// `--burnin-seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burnin_seconds: Option<f64>,
    /// `--seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `--precision`, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// `--repeat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// `--timeout-multiplier`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_multiplier: Option<f64>,
    /// `--monitor` (telemetry streamed with the events); on unless false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<bool>,
    /// `--monitor-interval`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor_interval: Option<f64>,
}

impl RunRequest {
    /// Parses a request body; a bad key or value is a 400 naming it.
    pub fn parse(body: &str) -> Result<Self, ApiError> {
        let request: Self = serde_json::from_str(body).map_err(|e| {
            let text = e.to_string();
            // serde names the key in "unknown field `x`" and
            // "invalid type ... for key `x`"-style messages.
            let field = text
                .split('`')
                .nth(1)
                .filter(|_| text.contains("field"))
                .unwrap_or("body")
                .to_string();
            ApiError::bad_field(&field, format!("the run request: {text}"))
        })?;
        // A NUL cannot pass to a child's arguments: refused here, by name.
        let texts = request
            .suite
            .iter()
            .map(|s| ("suite", s.as_str()))
            .chain(
                request
                    .benchmarks
                    .iter()
                    .map(|b| ("benchmarks", b.as_str())),
            )
            .chain(
                request
                    .components
                    .iter()
                    .map(|c| ("components", c.as_str())),
            )
            .chain(request.params.keys().map(|k| ("params", k.as_str())))
            .chain(
                request
                    .params
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))),
            );
        for (field, text) in texts {
            if text.contains('\0') {
                return Err(ApiError::bad_field(
                    field,
                    format!("'{field}' holds a NUL byte, which no benchmark takes"),
                ));
            }
        }
        Ok(request)
    }

    /// The parameters as `--param` gives them: name and value as text.
    pub fn param_texts(&self) -> Vec<(String, String)> {
        self.params
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect()
    }

    /// The `benchmark run` arguments (after `benchmark run`).
    pub fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        let mut flag = |name: &str, value: String| {
            a.push(format!("--{name}"));
            a.push(value);
        };
        if let Some(s) = &self.suite {
            flag("suite", s.clone());
        }
        for b in &self.benchmarks {
            flag("benchmark", b.clone());
        }
        for c in &self.components {
            flag("component", c.clone());
        }
        for (k, v) in self.param_texts() {
            flag("param", format!("{k}={v}"));
        }
        if let Some(v) = self.duration {
            flag("duration", v.to_string());
        }
        if let Some(v) = self.burnin_seconds {
            flag("burnin-seconds", v.to_string());
        }
        if let Some(v) = self.seed {
            flag("seed", v.to_string());
        }
        if let Some(v) = self.precision {
            flag("precision", v.to_string());
        }
        if let Some(v) = self.repeat {
            flag("repeat", v.to_string());
        }
        if let Some(v) = self.timeout_multiplier {
            flag("timeout-multiplier", v.to_string());
        }
        if self.monitor != Some(false) {
            a.push("--monitor".into());
            if let Some(v) = self.monitor_interval {
                a.push("--monitor-interval".into());
                a.push(v.to_string());
            }
        }
        a
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_request_becomes_the_flags_of_benchmark_run() {
        let r = RunRequest::parse(
            r#"{"suite":"micro","benchmarks":["cpu_flops"],"params":{"threads":1,"precision":"fp64"},"duration":0.5,"monitor":false}"#,
        )
        .unwrap();
        assert_eq!(
            r.args().join(" "),
            "--suite micro --benchmark cpu_flops --param precision=fp64 --param threads=1 --duration 0.5"
        );
        let e = RunRequest::parse(r#"{"suite":"micro","sweet":1}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sweet"));
        let e = RunRequest::parse(r#"{"duration":"long"}"#).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        let e = RunRequest::parse(r#"{"params":{"sam":"a\u0000b"}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sam"));
    }
}
