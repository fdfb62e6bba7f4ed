//! The run request as `POST /api/v1/runs` spells it (and as a server's
//! queue stores it): a JSON object whose fields are `benchmark run`'s flags
//! (`suite`, `benchmarks`, `components`, `params`, `duration`, ...), read
//! straight into the one typed [`RunRequest`]. Parameter names are taken
//! exactly as the keys are written: nothing is trimmed or split, so a key
//! that is not a parameter's name is refused by that name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use warpt_harness::ParamArg;

use crate::config::Flags;
use crate::request::{Invalid, MonitorRequest, PlanSource, RunRequest, Select};

/// The JSON fields, as they arrive.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    suite: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    benchmarks: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    components: Vec<String>,
    /// Values may be strings, numbers or booleans.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    params: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    burnin_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    precision: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repeat: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_multiplier: Option<f64>,
    /// Seconds the whole run may take (0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    suite_timeout: Option<f64>,
    /// Percentiles added to every metric's stats (`[50, 90, 99.9]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    percentiles: Option<Vec<f64>>,
    /// The run's labels (`{"bios": "1.2"}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    /// The run's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// Telemetry streamed with the events: on unless false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    monitor: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    monitor_interval: Option<f64>,
    /// Every benchmark in the warpt process instead of a worker each (the
    /// pytest plugin's runs: the measured code lives in pytest's process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    in_process: Option<bool>,
}

/// Why a body is not a run request: the field (or parameter) at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct BadBody {
    /// The key at fault (`body` when the JSON itself is wrong).
    pub field: String,
    /// The run parameter at fault, when the field is `params`.
    pub parameter: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl BadBody {
    fn field(field: &str, message: impl Into<String>) -> Self {
        BadBody {
            field: field.to_string(),
            parameter: None,
            message: message.into(),
        }
    }
}

impl RunRequest {
    /// The request a JSON body asks for. An unknown key, a value of the
    /// wrong type, a NUL byte, an unknown component, a setting out of its
    /// range or a parameter name that cannot be one as written is refused,
    /// naming it. (Whether each parameter exists is the plan's to say.)
    pub fn from_json(body: &str) -> Result<RunRequest, BadBody> {
        let b: Body = serde_json::from_str(body).map_err(|e| {
            let text = e.to_string();
            // serde names the key in "unknown field `x`" and
            // "invalid type ... for key `x`"-style messages.
            let field = text
                .split('`')
                .nth(1)
                .filter(|_| text.contains("field"))
                .unwrap_or("body");
            BadBody::field(field, format!("the run request: {text}"))
        })?;
        // A NUL byte: named by its field, or by the parameter it is in.
        let texts = b
            .suite
            .iter()
            .map(|s| ("suite", s.as_str()))
            .chain(b.benchmarks.iter().map(|s| ("benchmarks", s.as_str())))
            .chain(b.components.iter().map(|s| ("components", s.as_str())))
            .chain(
                b.params
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))),
            );
        for (field, text) in texts {
            if text.contains('\0') {
                let parameter = b.params.contains_key(field).then(|| field.to_string());
                return Err(BadBody {
                    field: field.to_string(),
                    parameter,
                    message: format!("'{field}' holds a NUL byte, which no benchmark takes"),
                });
            }
        }
        let mut components = Vec::with_capacity(b.components.len());
        for c in &b.components {
            components.push(c.parse().map_err(|e: warpt_model::UnknownComponent| {
                BadBody::field("components", e.to_string())
            })?);
        }
        let mut params = Vec::with_capacity(b.params.len());
        for (name, value) in &b.params {
            if let Some(why) = warpt_harness::param_name_problem(name) {
                return Err(BadBody {
                    field: "params".into(),
                    parameter: Some(name.clone()),
                    message: format!(
                        "parameter name {name:?} {why}; parameters are named exactly as `benchmark describe` lists them"
                    ),
                });
            }
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => value.to_string(),
                other => {
                    return Err(BadBody {
                        field: "params".into(),
                        parameter: Some(name.clone()),
                        message: format!(
                            "parameter '{name}': {other} is not a string, number or boolean"
                        ),
                    });
                }
            };
            params.push(ParamArg::new(name.clone(), text));
        }
        let request = RunRequest {
            plan: PlanSource::Select(Select {
                suite: b.suite,
                benchmarks: b.benchmarks,
                components,
                params,
            }),
            settings: Flags {
                duration: b.duration,
                burnin_seconds: b.burnin_seconds,
                seed: b.seed,
                precision: b.precision,
                timeout_multiplier: b.timeout_multiplier,
                suite_timeout: b.suite_timeout,
                percentiles: b
                    .percentiles
                    .as_deref()
                    .map(warpt_model::Percentiles::new)
                    .transpose()
                    .map_err(|why| BadBody::field("percentiles", why))?,
                labels: b.labels.into_iter().collect(),
                description: b.description,
                in_process: b.in_process.unwrap_or(false),
                ..Flags::default()
            },
            repeat: b.repeat.unwrap_or(1),
            monitor: (b.monitor != Some(false)).then(|| MonitorRequest {
                interval: b.monitor_interval.unwrap_or(1.0),
                output: None,
            }),
            ..RunRequest::default()
        };
        request
            .validate()
            .map_err(|e: Invalid| BadBody::field(e.field, e.to_string()))?;
        Ok(request)
    }

    /// The request as [`RunRequest::from_json`] reads it back: what a
    /// server answers and stores. Only a selection's fields are spelt (a
    /// replay, the store, the export and the run id are the server's own).
    pub fn to_json(&self) -> Value {
        let mut b = Body {
            duration: self.settings.duration,
            burnin_seconds: self.settings.burnin_seconds,
            seed: self.settings.seed,
            precision: self.settings.precision,
            timeout_multiplier: self.settings.timeout_multiplier,
            suite_timeout: self.settings.suite_timeout,
            percentiles: self
                .settings
                .percentiles
                .as_ref()
                .map(|p| p.values().to_vec()),
            labels: self.settings.labels.iter().cloned().collect(),
            description: self.settings.description.clone(),
            repeat: (self.repeat != 1).then_some(self.repeat),
            monitor: self.monitor.is_none().then_some(false),
            monitor_interval: self.monitor.as_ref().map(|m| m.interval),
            in_process: self.settings.in_process.then_some(true),
            ..Body::default()
        };
        if let PlanSource::Select(s) = &self.plan {
            b.suite = s.suite.clone();
            b.benchmarks = s.benchmarks.clone();
            b.components = s
                .components
                .iter()
                .map(|c| c.as_str().to_string())
                .collect();
            b.params = s
                .params
                .iter()
                .map(|p| (p.name.clone(), Value::String(p.value.clone())))
                .collect();
        }
        serde_json::to_value(&b).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_body_becomes_the_typed_request_and_back() {
        let r = RunRequest::from_json(
            r#"{"suite":"micro","benchmarks":["cpu_flops"],"params":{"threads":1,"precision":"fp64"},"duration":0.5,"suite_timeout":600,"labels":{"bios":"1.2"},"description":"before","monitor":false}"#,
        )
        .unwrap();
        let PlanSource::Select(s) = &r.plan else {
            panic!("a selection")
        };
        assert_eq!(
            s.params,
            [
                ParamArg::new("precision", "fp64"),
                ParamArg::new("threads", "1")
            ]
        );
        assert_eq!(r.settings.duration, Some(0.5));
        assert_eq!(r.settings.suite_timeout, Some(600.0));
        assert_eq!(r.settings.labels, [("bios".to_string(), "1.2".to_string())]);
        assert_eq!(r.settings.description.as_deref(), Some("before"));
        assert_eq!(r.monitor, None);
        let again = RunRequest::from_json(&r.to_json().to_string()).unwrap();
        assert_eq!(again, r);
    }

    #[test]
    fn bad_keys_values_and_names_are_refused_by_name() {
        let e = RunRequest::from_json(r#"{"suite":"micro","sweet":1}"#).unwrap_err();
        assert_eq!(e.field, "sweet");
        // serde does not name the key of a mistyped value: the body is.
        let e = RunRequest::from_json(r#"{"duration":"long"}"#).unwrap_err();
        assert!(e.message.contains("invalid type"), "{e}");
        let e = RunRequest::from_json(r#"{"params":{"sam":"a\u0000b"}}"#).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.parameter.as_deref()),
            ("sam", Some("sam"))
        );
        for (body, field) in [
            (r#"{"repeat":0}"#, "repeat"),
            (r#"{"duration":-1}"#, "duration"),
            (r#"{"duration":1e300}"#, "duration"),
            (r#"{"timeout_multiplier":1e300}"#, "timeout_multiplier"),
            (r#"{"suite_timeout":-1}"#, "suite_timeout"),
            (r#"{"labels":{"a b":"1"}}"#, "labels"),
            (r#"{"monitor_interval":0.001}"#, "monitor_interval"),
            (r#"{"components":["cpu","tpu"]}"#, "components"),
        ] {
            let e = RunRequest::from_json(body).unwrap_err();
            assert_eq!(e.field, field, "{body}");
        }
        // Names are never tidied into another: each of these is refused as
        // written (an unknown but well-formed name is the plan's to refuse).
        for name in [" command", "command=", "command\t", "com\u{7}mand", ""] {
            let body = serde_json::json!({"params": {name: "id"}}).to_string();
            let e = RunRequest::from_json(&body).unwrap_err();
            assert_eq!(
                (e.field.as_str(), e.parameter.as_deref()),
                ("params", Some(name))
            );
        }
        let e = RunRequest::from_json(r#"{"params":{"n":[1]}}"#).unwrap_err();
        assert_eq!(e.parameter.as_deref(), Some("n"));
    }
}
