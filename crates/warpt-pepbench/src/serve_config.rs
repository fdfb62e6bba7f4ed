//! `llm_serve`'s parameters, read and checked: the connection, the load,
//! the inputs, the SLOs and the search, with every error naming the
//! parameter.

use std::time::Duration;

use warpt_model::{ParamValue, Params};
use warpt_serving::load::{Arrival, Load};
use warpt_serving::{Api, Endpoint, HttpVersion};

use crate::serve_figures::Slos;
use crate::serve_inputs::InputConfig;

/// The checked parameters.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// The endpoint URL as given (empty: skipped).
    pub(crate) url: String,
    /// Completions or chat.
    pub(crate) api: Api,
    /// The model asked for (empty: the first /v1/models lists).
    pub(crate) model: String,
    /// The environment variable holding the API key.
    pub(crate) key_env: String,
    /// Closed or open loop.
    pub(crate) load: Load,
    /// What is sent.
    pub(crate) inputs: InputConfig,
    /// A tokenizer.json to count streamed tokens with, or empty.
    pub(crate) tokenizer: String,
    /// Goodput's bounds.
    pub(crate) slos: Slos,
    /// Search the highest rate meeting the SLOs.
    pub(crate) max_throughput: bool,
    /// `validate=echo`: ask for the prompt back and check it.
    pub(crate) echo: bool,
    /// The share of a step's requests that must meet the SLOs.
    pub(crate) attainment_pct: f64,
    /// Above this share of failed requests the run fails.
    pub(crate) max_error_pct: f64,
    /// Longest wait for one response.
    pub(crate) timeout: Duration,
    /// HTTP/1.1, HTTP/2 or whichever the server offers.
    pub(crate) http_version: HttpVersion,
    /// Extra root certificates (PEM) for an https:// endpoint, or empty.
    pub(crate) ca_file: String,
}

impl Config {
    /// The endpoint, its key read from `key_env` (empty: none; plan-time
    /// checks pass none, so an unset variable fails the run, not the plan).
    pub(crate) fn endpoint(&self, key_env: &str) -> Result<Endpoint, String> {
        let ca = (!self.ca_file.is_empty()).then(|| std::path::Path::new(&self.ca_file));
        Endpoint::new(&self.url, self.api, &self.model, key_env, self.timeout)
            .and_then(|e| e.with_transport(self.http_version, ca))
            .map_err(|e| e.to_string())
    }
}

/// Reads and checks `params`.
pub(crate) fn config(params: &Params) -> Result<Config, String> {
    let s = |k: &str| {
        params
            .get(k)
            .and_then(ParamValue::as_str)
            .unwrap_or("")
            .to_string()
    };
    let f = |k: &str| params.get(k).and_then(ParamValue::as_f64).unwrap_or(0.0);
    let int = |k: &str, min: i64, max: i64| -> Result<usize, String> {
        let v = params.get(k).and_then(ParamValue::as_i64).unwrap_or(0);
        if (min..=max).contains(&v) {
            Ok(v as usize)
        } else {
            Err(format!(
                "parameter '{k}' must be from {min} to {max}, not {v}"
            ))
        }
    };
    let nonneg = |k: &str| -> Result<f64, String> {
        let v = f(k);
        if v >= 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(format!("parameter '{k}' must be 0 or more, not {v}"))
        }
    };
    let rate = nonneg("request_rate")?;
    let arrival = Arrival::parse(&s("arrival"), f("burstiness"))?;
    let load = if rate > 0.0 {
        Load::Open { rate, arrival }
    } else {
        Load::Closed {
            concurrency: int("concurrency", 1, 100_000)?,
        }
    };
    let timeout = nonneg("timeout_s")?;
    if timeout == 0.0 {
        return Err("parameter 'timeout_s' must be above 0".into());
    }
    let max_error_pct = nonneg("max_error_pct")?;
    let attainment_pct = nonneg("slo_attainment_pct")?;
    for (k, v) in [
        ("max_error_pct", max_error_pct),
        ("slo_attainment_pct", attainment_pct),
    ] {
        if v > 100.0 {
            return Err(format!("parameter '{k}' must be at most 100, not {v}"));
        }
    }
    let slos = Slos {
        ttft_ms: nonneg("slo_ttft_ms")?,
        tpot_ms: nonneg("slo_tpot_ms")?,
        latency_ms: nonneg("slo_latency_ms")?,
    };
    let max_throughput = params
        .get("max_throughput")
        .and_then(ParamValue::as_bool)
        .unwrap_or(false);
    if max_throughput && !slos.any() {
        return Err(
            "parameter 'max_throughput' needs an SLO to meet: slo_ttft_ms, slo_tpot_ms or slo_latency_ms"
                .into(),
        );
    }
    let speedup = f("trace_speedup");
    if !(speedup > 0.0 && speedup.is_finite()) {
        return Err(format!(
            "parameter 'trace_speedup' must be above 0, not {speedup}"
        ));
    }
    let inputs = InputConfig {
        requests: int("requests", 1, 10_000_000)?,
        input_tokens: (
            int("input_tokens", 1, 1 << 20)?,
            int("input_tokens_sd", 0, 1 << 20)?,
        ),
        output_tokens: (
            int("output_tokens", 1, 1 << 20)?,
            int("output_tokens_sd", 0, 1 << 20)?,
        ),
        prefix_tokens: int("prefix_tokens", 0, 1 << 20)?,
        prompts_file: s("prompts_file"),
        dataset_format: s("dataset_format"),
        trace_file: s("trace_file"),
        trace_speedup: speedup,
        turns: int("turns", 1, 1000)?,
        ignore_eos: params
            .get("ignore_eos")
            .and_then(ParamValue::as_bool)
            .unwrap_or(true),
    };
    crate::serve_inputs::check(&inputs)?;
    let api = Api::parse(&s("api"))?;
    let echo = match s("validate").as_str() {
        "usage" | "" => false,
        "echo" if api == Api::Completions => true,
        "echo" => {
            return Err(
                "parameter 'validate': echo needs api=completions (chat has no echo)".into(),
            );
        }
        other => {
            return Err(format!(
                "parameter 'validate': '{other}' is not one of usage, echo"
            ));
        }
    };
    if max_throughput && !inputs.trace_file.is_empty() {
        return Err("parameters 'max_throughput' and 'trace_file' exclude each other: a trace keeps its own times".into());
    }
    Ok(Config {
        url: s("endpoint"),
        api,
        model: s("model"),
        key_env: s("api_key_env"),
        load,
        inputs,
        tokenizer: s("tokenizer"),
        slos,
        max_throughput,
        echo,
        attainment_pct,
        max_error_pct,
        timeout: Duration::from_secs_f64(timeout),
        http_version: HttpVersion::parse(&s("http_version"))?,
        ca_file: s("ca_file"),
    })
}
