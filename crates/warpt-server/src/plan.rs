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
        for c in &request.components {
            if let Err(e) = c.parse::<warpt_model::BenchmarkComponent>() {
                return Err(ApiError::bad_field("components", e.to_string()));
            }
        }
        // The same ranges the command line holds its flags to.
        if let Err(e) = request.to_request().validate() {
            return Err(ApiError::bad_field(e.field, e.to_string()));
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

    /// The run this asks for, as every front end spells it: its
    /// `to_args()` are what the queued child runs.
    pub fn to_request(&self) -> warpt_run::RunRequest {
        use warpt_run::config::Flags;
        use warpt_run::request::{MonitorRequest, PlanSource, Select};
        warpt_run::RunRequest {
            plan: PlanSource::Select(Select {
                suite: self.suite.clone(),
                benchmarks: self.benchmarks.clone(),
                // Checked by `parse`, which refuses an unknown one.
                components: self
                    .components
                    .iter()
                    .filter_map(|c| c.parse().ok())
                    .collect(),
                params: self
                    .param_texts()
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect(),
            }),
            settings: Flags {
                duration: self.duration,
                burnin_seconds: self.burnin_seconds,
                seed: self.seed,
                precision: self.precision,
                timeout_multiplier: self.timeout_multiplier,
                ..Flags::default()
            },
            repeat: self.repeat.unwrap_or(1),
            monitor: (self.monitor != Some(false)).then(|| MonitorRequest {
                interval: self.monitor_interval.unwrap_or(1.0),
                output: None,
            }),
            ..warpt_run::RunRequest::default()
        }
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
            r.to_request()
                .to_args()
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            "--suite micro --benchmark cpu_flops --param precision=fp64 --param threads=1 --duration 0.5"
        );
        let e = RunRequest::parse(r#"{"suite":"micro","sweet":1}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sweet"));
        let e = RunRequest::parse(r#"{"duration":"long"}"#).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        let e = RunRequest::parse(r#"{"params":{"sam":"a\u0000b"}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sam"));
        for (body, field) in [
            (r#"{"repeat":0}"#, "repeat"),
            (r#"{"duration":-1}"#, "duration"),
            (r#"{"monitor_interval":0.001}"#, "monitor_interval"),
            (r#"{"components":["cpu","tpu"]}"#, "components"),
        ] {
            let e = RunRequest::parse(body).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{body}");
        }
    }
}
