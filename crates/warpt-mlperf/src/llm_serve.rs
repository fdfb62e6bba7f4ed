//! `llm_serve`: an OpenAI-compatible server (the endpoint pepbench's
//! `llm_serve` drives, through the same client, warpt-serving) as an MLPerf
//! LLM system under test. LoadGen's scenarios issue the samples — Server at
//! its Poisson schedule with latency counted from the scheduled time,
//! Offline all at once — and `concurrency` workers each stream one request
//! at a time; TTFT is when the first chunk arrived, TPOT from the tokens
//! the server's `usage` reports (else one a chunk). Validity, early
//! stopping, the peak search and the log files are the suite's.

use std::time::Duration;

use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasureResult, RunContext, Stage, WARMUP_MARGIN,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkSpec, Param, ParamKind, ParamValue, Params, Validation,
};
use warpt_serving::HttpClient;
use warpt_serving::request::{RequestSpec, Status, send};
use warpt_serving::{Api, Endpoint, HttpVersion};

use crate::bench::{self, ModelRules, Outcome, SpecParts};
use crate::loadgen::{QuerySample, Responder, Response, Scenario, SystemUnderTest};

/// Benchmark name within the suite.
pub const NAME: &str = "llm_serve";

const MODEL: ModelRules = ModelRules {
    name: "llama2-70b",
    server_latency_ms: 0.0,
    offline_min_count: 24576,
    // Prompts held by the client (LoadGen's performance sample count).
    library: 1024,
    // llama2-70b's Server bounds in mlperf.conf.
    token_bounds_ms: Some((2000.0, 200.0)),
};

/// The spec of `llm_serve`.
pub fn spec() -> BenchmarkSpec {
    bench::scenario_spec(SpecParts {
        name: NAME,
        scenario: Scenario::Server,
        batch: None,
        devices: &[],
        components: vec![BenchmarkComponent::Network, BenchmarkComponent::System],
        description: "An OpenAI-compatible LLM server (`endpoint`: vLLM, SGLang, TGI, llama.cpp, Ollama, ...) as an \
             MLPerf LLM SUT, through pepbench llm_serve's client: each sample a streamed request (`api`) of \
             `input_tokens` words of seeded text asking for `output_tokens` tokens (`ignore_eos` sent unless false), at most \
             `concurrency` in flight. TTFT = the first chunk's arrival, TPOT = (latency - TTFT) / (tokens - 1) \
             with tokens from the server's usage (else a chunk each); in Server the p99 TTFT and TPOT must meet \
             their bounds. Skipped without an endpoint. Validation: every sample answered once, each stream \
             ended properly with at least one token; a failed request ends the test.",
        params: vec![
            Param::names(ParamKind::Address, "endpoint", "")
                .help("the server's base URL, http://host:port; empty: skipped"),
            Param::choice("api", "completions", &["completions", "chat"])
                .help("completions or chat"),
            Param::text("model", "").help("the model to ask for; empty: the first /v1/models lists"),
            Param::names(ParamKind::Secret, "api_key_env", "")
                .help("the environment variable holding the API key (never stored or printed)"),
            Param::int("concurrency", 16, 1..=100_000)
                .help("requests in flight at most (the SUT's workers)"),
            Param::int("input_tokens", 128, 1..=1 << 20).help("prompt words"),
            Param::int("output_tokens", 64, 1..=1 << 20).help("max_tokens of each request"),
            Param::flag("ignore_eos", true).help(
                "send ignore_eos (false for servers that refuse it: transformers serve, OpenAI)",
            ),
            Param::float("timeout_s", 300.0, 0.0..=bench::WEEK_S)
                .unit("s")
                .help("longest wait for one response"),
            Param::choice("http_version", "auto", &["auto", "1.1", "2"]).help(
                "auto: HTTP/1.1 on http://, HTTP/2 on https:// when offered; 1.1; 2 (h2c on http://)",
            ),
            Param::input_path("ca_file", "")
                .help("PEM root certificates to trust besides the system's (https://)"),
            bench::token_bound("ttft_bound_ms", "Server p99 TTFT bound; 0 = llama2-70b's 2000 ms"),
            bench::token_bound("tpot_bound_ms", "Server p99 TPOT bound; 0 = llama2-70b's 200 ms"),
        ],
        check: check_params,
        metrics: &["tokens_per_s", "ttft_ms", "tpot_ms"],
    })
}

/// The checked connection parameters.
fn endpoint(params: &Params) -> Result<Option<Endpoint>, String> {
    let s = |k: &str| params.get(k).and_then(ParamValue::as_str).unwrap_or("");
    let timeout = params
        .get("timeout_s")
        .and_then(ParamValue::as_f64)
        .unwrap_or(0.0);
    if !(timeout > 0.0 && timeout.is_finite()) {
        return Err(format!(
            "parameter 'timeout_s' must be above 0, not {timeout}"
        ));
    }
    let api = Api::parse(s("api"))?;
    let version = HttpVersion::parse(s("http_version"))?;
    if s("endpoint").is_empty() {
        return Ok(None);
    }
    Endpoint::new(
        s("endpoint"),
        api,
        s("model"),
        s("api_key_env"),
        Duration::from_secs_f64(timeout),
    )
    .and_then(|e| {
        let ca = (!s("ca_file").is_empty()).then(|| std::path::Path::new(s("ca_file")));
        e.with_transport(version, ca)
    })
    .map(Some)
    .map_err(|e| e.to_string())
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    bench::check_common(params)?;
    // Checked without reading the key: it is read when the run starts.
    let mut p = params.clone();
    p.insert("api_key_env".into(), ParamValue::Str(String::new()));
    endpoint(&p).map(|_| ())
}

/// The endpoint as a SUT.
pub struct EndpointSut {
    endpoint: Endpoint,
    client: HttpClient,
    runtime: tokio::runtime::Runtime,
    prompts: Vec<RequestSpec>,
    workers: usize,
}

impl SystemUnderTest for EndpointSut {
    fn name(&self) -> String {
        format!("{} at {}", self.endpoint.model, self.endpoint.base)
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn max_batch(&self) -> usize {
        1
    }

    fn process(&self, batch: &[QuerySample], responder: &Responder) -> Result<(), String> {
        for sample in batch {
            let spec = &self.prompts[sample.index % self.prompts.len()];
            let o = self
                .runtime
                .block_on(send(&self.client, &self.endpoint, spec));
            if o.status != Status::Ok {
                return Err(format!(
                    "sample {}: the request {} ({})",
                    sample.index,
                    o.status.kind(),
                    match &o.status {
                        Status::Failed(e) | Status::CutOff(e) => e.as_str(),
                        _ => "no complete answer within timeout_s",
                    }
                ));
            }
            if let Some((first, _)) = o.chunks.first() {
                responder.first_token_at(sample, *first);
            }
            let tokens = o.completion_tokens.unwrap_or(o.chunks.len() as u64);
            // Complete when the stream ended, not after the text is joined.
            responder.complete_at(
                sample,
                o.done,
                Response {
                    data: o.text().into_bytes(),
                    tokens: Some(tokens),
                },
            );
        }
        Ok(())
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct LlmServe {
    sut: Option<EndpointSut>,
    outcome: Option<Outcome>,
}

impl Benchmark for LlmServe {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let invalid = |reason| BenchmarkError::InvalidParam {
            key: NAME.into(),
            reason,
        };
        let Some(mut endpoint) = endpoint(&ctx.params).map_err(invalid)? else {
            return Err(BenchmarkError::Skipped(
                "no endpoint: give --param endpoint=http://HOST:PORT of an OpenAI-compatible server"
                    .into(),
            ));
        };
        let workers = ctx.int_param("concurrency", 1)? as usize;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(std::thread::available_parallelism().map_or(1, usize::from))
            .enable_all()
            .build()
            .map_err(|e| BenchmarkError::Failed(format!("starting the client runtime: {e}")))?;
        let client = endpoint.client();
        if endpoint.model.is_empty() {
            endpoint.model = runtime
                .block_on(endpoint.first_model(&client))
                .map_err(|e| {
                    BenchmarkError::Failed(format!("asking {} for its models: {e}", endpoint.base))
                })?;
        }
        let words = ctx.int_param("input_tokens", 1)? as usize;
        let max_tokens = ctx.int_param("output_tokens", 1)? as u32;
        let ignore_eos = ctx.bool_param("ignore_eos")?;
        let library = match ctx.int_param("samples", 0)? {
            n if n > 0 => n as usize,
            _ => MODEL.library as usize,
        };
        let text: Vec<String> = warpt_models::corpus::lines(ctx.seed, library * (words / 8 + 2))
            .iter()
            .flat_map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .collect();
        let prompts = (0..library)
            .map(|i| {
                let prompt: Vec<&str> = (0..words)
                    .map(|k| text[(i * words + k) % text.len()].as_str())
                    .collect();
                RequestSpec::new(prompt.join(" "), max_tokens, ignore_eos)
            })
            .collect();
        self.sut = Some(EndpointSut {
            endpoint,
            client,
            runtime,
            prompts,
            workers,
        });
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let sut = warpt_harness::prepared(&self.sut)?;
        let settings = bench::settings(ctx, &MODEL, 8)?;
        // The warm-up sends two bursts of `concurrency` requests to a
        // server that may be slow (a CPU llama.cpp): each burst may take up
        // to the response timeout, which the default warm-up limit (for
        // in-process work) does not allow for.
        measure.limit_stage(
            Stage::Warmup,
            ctx.burnin + 2 * sut.endpoint.timeout + WARMUP_MARGIN,
            "warm-up: two bursts of requests",
        );
        let outcome = bench::run(ctx, measure, sut, &settings, NAME)?;
        let mut m = crate::metrics::measured(&outcome, measure);
        m.details.push(("sut".into(), ParamValue::from(sut.name())));
        m.details.push((
            "counting".into(),
            ParamValue::from(
                "TTFT from the sample's scheduled time to its first streamed chunk; TPOT = (latency - TTFT) / (tokens - 1), tokens from the server's usage (else one a chunk)",
            ),
        ));
        self.outcome = Some(outcome);
        Ok(m)
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(outcome) = &self.outcome else {
            return Validation::fail("nothing was measured");
        };
        match crate::check_answers(&outcome.summary, |r| {
            r.tokens.is_some_and(|t| t >= 1) && !r.data.is_empty()
        }) {
            Ok(m) => Validation::pass(format!("{m} (each stream ended properly with text)")),
            Err(e) => Validation::fail(e),
        }
    }
}
