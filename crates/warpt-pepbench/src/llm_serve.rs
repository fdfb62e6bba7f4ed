//! `llm_serve`: an OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp,
//! Ollama, ...) measured from the client, the way users meet it: streamed
//! completions under a closed-loop `concurrency` or an open-loop
//! `request_rate`, each token timestamped as it arrives (warpt-serving).
//!
//! Per request TTFT, every inter-token latency, TPOT and end-to-end
//! latency; per run output tokens/s, requests/s and goodput (requests/s
//! meeting every SLO given). Failed, timed-out and cut-off requests are
//! counted by kind, never dropped; above `max_error_pct` the run fails.

use std::time::Duration;

use tokenizers::Tokenizer;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, Measured, RunContext, SeriesDef, SeriesMetrics,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkMetric, BenchmarkSpec, ParamKind,
    ParamValue, Params, StageLimits, StopReason, Validation,
};
use warpt_serving::load::{Arrival, Load, Run, drive};
use warpt_serving::request::{RequestSpec, Status};
use warpt_serving::timing::{Counting, Figures, figures};
use warpt_serving::{Api, Endpoint};

use crate::corpus;
use crate::sampling::choices;

/// Benchmark name within the suite.
pub const NAME: &str = "llm_serve";
/// Per-request values kept in a metric's `samples`.
const EVENTS_KEPT: usize = 20_000;

/// The spec of `llm_serve`.
pub fn spec() -> BenchmarkSpec {
    let p = |k: &str, v: ParamValue| (k.to_string(), v);
    let h = |k: &str, v: &str| (k.to_string(), v.to_string());
    BenchmarkSpec {
        id: BenchmarkId::new(crate::SUITE, NAME),
        components: vec![BenchmarkComponent::Network, BenchmarkComponent::System],
        kind: BenchmarkKind::Application,
        description: Some(
            "An OpenAI-compatible LLM server measured from the client (`endpoint`: vLLM, SGLang, TGI, \
             llama.cpp, Ollama, ...): `requests` streamed requests (`api` = completions or chat) of about \
             `input_tokens` prompt tokens (seeded text) asking for `output_tokens` tokens (`ignore_eos` sent), \
             closed loop at `concurrency` or open loop at `request_rate` with `arrival` = poisson, constant or \
             gamma (`burstiness`). Every chunk is timestamped as its bytes arrive. Per request `ttft_ms`, every \
             inter-token latency `itl_ms` (a chunk of k tokens arriving g after the last gives k latencies of \
             g/k), `tpot_ms` = (latency - TTFT) / (tokens - 1), `request_latency_ms`; per run \
             `output_tokens_per_s`, `requests_per_s` and `goodput_requests_per_s` (requests meeting \
             `slo_ttft_ms`, `slo_tpot_ms` and `slo_latency_ms`, those above 0). Tokens are counted per chunk \
             with `tokenizer` (a tokenizer.json) when given, else totals come from the server's `usage` and \
             latencies per chunk, else a token per chunk: `details.token_counting` says which. Failed, \
             timed-out and cut-off requests are counted by kind; above `max_error_pct` the run fails. \
             Skipped without an endpoint. Validation: every stream ended properly, and its token count equals \
             the server's `usage` where both are known."
                .into(),
        ),
        default_duration_seconds: Some(30.0),
        external_tool: None,
        params: [
            p("endpoint", ParamValue::Str(String::new())),
            p("api", ParamValue::Str("completions".into())),
            p("model", ParamValue::Str(String::new())),
            p("api_key_env", ParamValue::Str(String::new())),
            p("concurrency", ParamValue::Int(1)),
            p("request_rate", ParamValue::Float(0.0)),
            p("arrival", ParamValue::Str("poisson".into())),
            p("burstiness", ParamValue::Float(1.0)),
            p("requests", ParamValue::Int(100)),
            p("input_tokens", ParamValue::Int(128)),
            p("output_tokens", ParamValue::Int(64)),
            p("tokenizer", ParamValue::Str(String::new())),
            p("prompts_file", ParamValue::Str(String::new())),
            p("dataset_format", ParamValue::Str("jsonl".into())),
            p("slo_ttft_ms", ParamValue::Float(0.0)),
            p("slo_tpot_ms", ParamValue::Float(0.0)),
            p("slo_latency_ms", ParamValue::Float(0.0)),
            p("max_error_pct", ParamValue::Float(1.0)),
            p("timeout_s", ParamValue::Float(300.0)),
        ]
        .into(),
        param_help: [
            h("endpoint", "the server's base URL, http://host:port (a trailing /v1 is fine); empty: skipped"),
            h("api", "completions (/v1/completions) or chat (/v1/chat/completions)"),
            h("model", "the model to ask for; empty: the first /v1/models lists"),
            h(
                "api_key_env",
                "the environment variable holding the API key (sent as a bearer token; never stored or printed)",
            ),
            h("concurrency", "closed loop: clients, each sending when its last response ended"),
            h("request_rate", "open loop: requests per second (0: closed loop)"),
            h("arrival", "open loop gaps: poisson, constant or gamma"),
            h("burstiness", "gamma's shape: 1 = Poisson, below 1 burstier, above 1 more even"),
            h("requests", "requests sent"),
            h("input_tokens", "prompt length: words of seeded text, cut to exactly this many tokens with tokenizer"),
            h("output_tokens", "max_tokens of each request (ignore_eos sent)"),
            h("tokenizer", "a tokenizer.json to count streamed tokens with (the server's own)"),
            h(
                "prompts_file",
                "your prompts instead of seeded text: JSONL ({\"prompt\": ..., \"output_tokens\": n optional}) or ShareGPT JSON",
            ),
            h("dataset_format", "prompts_file's format: jsonl or sharegpt"),
            h("slo_ttft_ms", "goodput's TTFT bound, ms (0: none)"),
            h("slo_tpot_ms", "goodput's TPOT bound, ms (0: none)"),
            h("slo_latency_ms", "goodput's end-to-end latency bound, ms (0: none)"),
            h("max_error_pct", "the run fails when more requests than this percentage fail"),
            h("timeout_s", "longest wait for one response"),
        ]
        .into(),
        param_kinds: ParamKind::table(&[
            ("tokenizer", ParamKind::InputPath),
            ("prompts_file", ParamKind::InputPath),
            ("api_key_env", ParamKind::Secret),
        ]),
        param_ranges: Default::default(),
        param_choices: choices(&[
            ("api", &["completions", "chat"]),
            ("arrival", &["poisson", "constant", "gamma"]),
            ("dataset_format", warpt_serving::prompts::FORMATS),
        ]),
        timeouts: StageLimits {
            setup: Some(120.0),
            ..StageLimits::default()
        },
        metrics: [
            "ttft_ms",
            "itl_ms",
            "tpot_ms",
            "request_latency_ms",
            "output_tokens_per_s",
            "requests_per_s",
            "goodput_requests_per_s",
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// The checked parameters.
#[derive(Debug, Clone)]
struct Config {
    url: String,
    api: Api,
    model: String,
    key_env: String,
    load: Load,
    requests: usize,
    input_tokens: usize,
    output_tokens: u32,
    tokenizer: String,
    prompts_file: String,
    dataset_format: String,
    slo_ms: [f64; 3],
    max_error_pct: f64,
    timeout: Duration,
}

fn config(params: &Params) -> Result<Config, String> {
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
    let load = if rate > 0.0 {
        Load::Open {
            rate,
            arrival: Arrival::parse(&s("arrival"), f("burstiness"))?,
        }
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
    if max_error_pct > 100.0 {
        return Err(format!(
            "parameter 'max_error_pct' must be at most 100, not {max_error_pct}"
        ));
    }
    Ok(Config {
        url: s("endpoint"),
        api: Api::parse(&s("api"))?,
        model: s("model"),
        key_env: s("api_key_env"),
        load,
        requests: int("requests", 1, 10_000_000)?,
        input_tokens: int("input_tokens", 1, 1 << 20)?,
        output_tokens: int("output_tokens", 1, 1 << 20)? as u32,
        tokenizer: s("tokenizer"),
        prompts_file: s("prompts_file"),
        dataset_format: s("dataset_format"),
        slo_ms: [
            nonneg("slo_ttft_ms")?,
            nonneg("slo_tpot_ms")?,
            nonneg("slo_latency_ms")?,
        ],
        max_error_pct,
        timeout: Duration::from_secs_f64(timeout),
    })
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let c = config(params)?;
    if !c.url.is_empty() {
        Endpoint::new(&c.url, c.api, &c.model, "", c.timeout).map_err(|e| e.to_string())?;
    }
    if !c.tokenizer.is_empty() {
        crate::tokenize::load_file(std::path::Path::new(&c.tokenizer))
            .map_err(|e| format!("parameter 'tokenizer': {e}"))?;
    }
    if !c.prompts_file.is_empty() {
        warpt_serving::prompts::read(std::path::Path::new(&c.prompts_file), &c.dataset_format)?;
    }
    Ok(())
}

/// The running benchmark.
#[derive(Default)]
pub struct LlmServe {
    config: Option<Config>,
    endpoint: Option<Endpoint>,
    tokenizer: Option<Tokenizer>,
    specs: Vec<RequestSpec>,
    run: Option<Run>,
}

impl LlmServe {
    /// A fresh instance.
    pub fn new() -> Self {
        LlmServe::default()
    }

    fn count(&self) -> Option<impl Fn(&str) -> usize + '_> {
        self.tokenizer
            .as_ref()
            .map(|t| move |text: &str| t.encode(text, false).map_or(1, |e| e.get_ids().len()))
    }
}

/// `n` prompts of about `tokens` tokens from the seeded corpus: cut to
/// exactly that many with `tokenizer`, else that many words.
fn prompts(seed: u64, n: usize, tokens: usize, tokenizer: Option<&Tokenizer>) -> Vec<String> {
    let lines = corpus::lines(seed, n * (tokens / 8 + 2));
    let mut words = lines.iter().flat_map(|l| l.split_whitespace()).cycle();
    (0..n)
        .map(|_| {
            let text: Vec<&str> = words.by_ref().take(tokens).collect();
            let text = text.join(" ");
            match tokenizer.and_then(|t| t.encode(text.as_str(), false).ok()) {
                Some(enc) if enc.get_ids().len() > tokens => {
                    let end = enc.get_offsets()[tokens - 1].1;
                    text[..end].to_string()
                }
                _ => text,
            }
        })
        .collect()
}

impl Benchmark for LlmServe {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let c = config(&ctx.params).map_err(|reason| BenchmarkError::InvalidParam {
            key: NAME.into(),
            reason,
        })?;
        if c.url.is_empty() {
            return Err(BenchmarkError::Skipped(
                "no endpoint: give --param endpoint=http://HOST:PORT of an OpenAI-compatible server".into(),
            ));
        }
        let mut endpoint = Endpoint::new(&c.url, c.api, &c.model, &c.key_env, c.timeout)
            .map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        if endpoint.model.is_empty() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| BenchmarkError::Failed(e.to_string()))?;
            let client = Endpoint::client();
            endpoint.model = runtime
                .block_on(endpoint.first_model(&client))
                .map_err(|e| {
                    BenchmarkError::Failed(format!("asking {} for its models: {e}", c.url))
                })?;
        }
        if !c.tokenizer.is_empty() {
            self.tokenizer = Some(
                crate::tokenize::load_file(std::path::Path::new(&c.tokenizer))
                    .map_err(BenchmarkError::Failed)?,
            );
        }
        self.specs = if c.prompts_file.is_empty() {
            prompts(
                ctx.seed,
                c.requests,
                c.input_tokens,
                self.tokenizer.as_ref(),
            )
            .into_iter()
            .map(|prompt| RequestSpec {
                prompt,
                max_tokens: c.output_tokens,
                ignore_eos: true,
            })
            .collect()
        } else {
            let path = std::path::Path::new(&c.prompts_file);
            let all = warpt_serving::prompts::read(path, &c.dataset_format)
                .map_err(BenchmarkError::Failed)?;
            warpt_serving::prompts::take(&all, c.requests, ctx.seed)
                .into_iter()
                .map(|p| RequestSpec {
                    prompt: p.text,
                    max_tokens: p.output_tokens.unwrap_or(c.output_tokens),
                    ignore_eos: true,
                })
                .collect()
        };
        self.endpoint = Some(endpoint);
        self.config = Some(c);
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        _: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let (Some(c), Some(endpoint)) = (self.config.clone(), self.endpoint.clone()) else {
            return Err(BenchmarkError::not_prepared());
        };
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        // Connections opened before measuring: one per client (closed
        // loop), 16 for an open loop.
        let warmup = match c.load {
            Load::Closed { concurrency } => concurrency.min(self.specs.len()),
            Load::Open { .. } => 16,
        };
        let run = drive(
            &endpoint,
            c.load,
            self.specs.clone(),
            ctx.seed,
            threads,
            warmup,
        )
        .map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        // Counts by how each request ended.
        let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
        let mut first_error = None;
        for s in &run.requests {
            *kinds.entry(s.outcome.status.kind()).or_default() += 1;
            if let (None, Status::Failed(e) | Status::CutOff(e)) = (&first_error, &s.outcome.status)
            {
                first_error = Some(e.clone());
            }
        }
        let n = run.requests.len();
        let errors = n - kinds.get("ok").copied().unwrap_or(0);
        let error_pct = 100.0 * errors as f64 / n.max(1) as f64;
        let count = self.count();
        let done: Vec<(Figures, Counting)> = run
            .requests
            .iter()
            .filter_map(|s| {
                figures(
                    &s.outcome,
                    count.as_ref().map(|f| f as &dyn Fn(&str) -> usize),
                )
            })
            .collect();
        if error_pct > c.max_error_pct || done.is_empty() {
            return Err(BenchmarkError::Failed(format!(
                "{errors} of {n} requests failed ({error_pct:.1}% > max_error_pct {}): {}; first error: {}",
                c.max_error_pct,
                kinds
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                first_error
                    .as_deref()
                    .unwrap_or("requests streamed no text")
            )));
        }
        let counting = done[0].1;
        let wall = run.wall_s.max(1e-9);
        let [slo_ttft, slo_tpot, slo_latency] = c.slo_ms;
        let meets = |f: &Figures| {
            (slo_ttft == 0.0 || f.ttft_s * 1e3 <= slo_ttft)
                && (slo_tpot == 0.0 || f.tpot_s.is_none_or(|t| t * 1e3 <= slo_tpot))
                && (slo_latency == 0.0 || f.latency_s * 1e3 <= slo_latency)
        };
        let good = done.iter().filter(|(f, _)| meets(f)).count();
        let tokens: u64 = done.iter().map(|(f, _)| f.output_tokens).sum();
        let mut metrics = Vec::new();
        let ms = |v: f64| v * 1e3;
        let series: [(&str, Vec<f64>); 4] = [
            ("ttft_ms", done.iter().map(|(f, _)| ms(f.ttft_s)).collect()),
            (
                "itl_ms",
                done.iter()
                    .flat_map(|(f, _)| f.itl_s.iter().map(|s| ms(*s)))
                    .collect(),
            ),
            (
                "tpot_ms",
                done.iter().filter_map(|(f, _)| f.tpot_s.map(ms)).collect(),
            ),
            (
                "request_latency_ms",
                done.iter().map(|(f, _)| ms(f.latency_s)).collect(),
            ),
        ];
        for (name, values) in series {
            if values.is_empty() {
                continue;
            }
            let def = SeriesDef::new(name, "ms", false, &[], Convert::Time(1e3));
            metrics.extend(def.metric_of_events(&values, EVENTS_KEPT, Some(StopReason::TimeCap)));
        }
        metrics.push(BenchmarkMetric::single(
            "output_tokens_per_s",
            tokens as f64 / wall,
            "tokens/s",
            true,
        ));
        metrics.push(BenchmarkMetric::single(
            "requests_per_s",
            done.len() as f64 / wall,
            "requests/s",
            true,
        ));
        metrics.push(BenchmarkMetric::single(
            "goodput_requests_per_s",
            good as f64 / wall,
            "requests/s",
            true,
        ));
        // Whether the client kept its schedule: the rate it sent at, and
        // the latest a request left after it was due.
        let mut sent: Vec<f64> = run.requests.iter().map(|s| run.sent_s(s)).collect();
        sent.sort_by(f64::total_cmp);
        let sent_rate = if n > 1 {
            (n - 1) as f64 / (sent[n - 1] - sent[0]).max(1e-9)
        } else {
            0.0
        };
        let lag_ms = run
            .requests
            .iter()
            .map(|s| (run.sent_s(s) - s.due_s) * 1e3)
            .fold(0.0, f64::max);
        let mode = match c.load {
            Load::Closed { concurrency } => format!("closed loop, {concurrency} clients"),
            Load::Open { rate, arrival } => {
                format!("open loop, {rate} requests/s, {arrival:?} arrivals")
            }
        };
        let int = |v: usize| ParamValue::Int(v as i64);
        let mut details = vec![
            ("endpoint".into(), ParamValue::Str(endpoint.base.clone())),
            ("model".into(), ParamValue::Str(endpoint.model.clone())),
            ("mode".into(), ParamValue::Str(mode)),
            ("token_counting".into(), ParamValue::from(counting.name())),
            ("requests".into(), int(n)),
            ("requests_good".into(), int(good)),
            ("error_pct".into(), ParamValue::Float(error_pct)),
            ("output_tokens".into(), ParamValue::Int(tokens as i64)),
            ("wall_s".into(), ParamValue::Float(wall)),
            ("sent_requests_per_s".into(), ParamValue::Float(sent_rate)),
            ("max_send_lag_ms".into(), ParamValue::Float(lag_ms)),
        ];
        for kind in ["ok", "failed", "timed_out", "cut_off"] {
            details.push((
                format!("requests_{kind}"),
                int(kinds.get(kind).copied().unwrap_or(0)),
            ));
        }
        if let Some(e) = first_error {
            details.push(("first_error".into(), ParamValue::Str(e)));
        }
        drop(count);
        self.run = Some(run);
        Ok(Measured {
            metrics,
            details,
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(run) = &self.run else {
            return Validation::fail("nothing was sent");
        };
        let count = self.count();
        let mut ok = 0;
        let mut mismatched = Vec::new();
        for s in &run.requests {
            if s.outcome.status != Status::Ok {
                continue;
            }
            ok += 1;
            if let (Some(c), Some(usage)) = (&count, s.outcome.completion_tokens) {
                let counted: usize = s.outcome.chunks.iter().map(|(_, t)| c(t).max(1)).sum();
                if counted as u64 != usage {
                    mismatched.push((s.index, counted, usage));
                }
            }
        }
        if let Some((i, counted, usage)) = mismatched.first() {
            return Validation::fail(format!(
                "{} of {ok} streams' tokens, counted with the tokenizer, differ from the server's usage \
                 (request {i}: {counted} counted, {usage} in usage): is the tokenizer the server's?",
                mismatched.len()
            ));
        }
        Validation::pass(format!(
            "{ok} of {} streams ended properly{}",
            run.requests.len(),
            if count.is_some() {
                ", each one's tokens counted with the tokenizer equal to the server's usage"
            } else {
                ""
            }
        ))
    }
}
