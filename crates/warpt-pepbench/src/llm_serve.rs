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
    Benchmark, BenchmarkError, Measure, MeasureResult, Measured, RunContext, Stage,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkMetric, BenchmarkSpec, Param, ParamKind,
    ParamValue, Params, StageLimits, Validation,
};
use warpt_serving::Endpoint;
use warpt_serving::load::{Arrival, Load, Plan, Run, drive};
use warpt_serving::request::Status;
use warpt_serving::search::{Limits, Step, search};

use crate::serve_config::{Config, config};
use crate::serve_figures::{Analysis, analyse};
use crate::serve_inputs::Inputs;

/// Benchmark name within the suite.
pub const NAME: &str = "llm_serve";

/// The spec of `llm_serve`.
pub fn spec() -> BenchmarkSpec {
    // Times and rates become `Duration`s and schedules: bounded before
    // anything runs.
    const DAY_MS: f64 = 86_400_000.0;
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .components([BenchmarkComponent::Network, BenchmarkComponent::System])
        .kind(BenchmarkKind::Application)
        .description(
            "An OpenAI-compatible LLM server measured from the client (`endpoint`: vLLM, SGLang, TGI, \
             llama.cpp, Ollama, ...): `requests` streamed requests (`api` = completions or chat) of about \
             `input_tokens` prompt tokens (seeded text) asking for `output_tokens` tokens (`ignore_eos` sent unless false), \
             closed loop at `concurrency` or open loop at `request_rate` with `arrival` = poisson, constant or \
             gamma (`burstiness`). Every chunk is timestamped as its bytes arrive. Per request `ttft_ms`, every \
             inter-token latency `itl_ms` (a chunk of k tokens arriving g after the last gives k latencies of \
             g/k), `tpot_ms` = (latency - TTFT) / (tokens - 1), `request_latency_ms`; per run \
             `output_tokens_per_s`, `requests_per_s` and `goodput_requests_per_s` (requests meeting \
             `slo_ttft_ms`, `slo_tpot_ms` and `slo_latency_ms`, those above 0). Tokens are counted per chunk \
             with `tokenizer` (a tokenizer.json) when given, else totals come from the server's `usage` and \
             latencies per chunk, else a token per chunk: `details.token_counting` says which. Failed, \
             timed-out and cut-off requests are counted by kind; above `max_error_pct` the run fails. \
             Inputs: seeded text (`input_tokens`/`output_tokens` ± `input_tokens_sd`/`output_tokens_sd`), the \
             user's `prompts_file` (JSONL or ShareGPT), or a `trace_file` replayed at its own times \
             (÷ `trace_speedup`); a `prefix_tokens` prefix shared by every request; conversations of `turns` \
             turns (each carrying the earlier ones). `max_throughput`: the highest open-loop rate at which \
             `slo_attainment_pct` of the requests meet the SLOs, by doubling then bisection, `requests` per step \
             (`max_throughput_requests_per_s`; the other metrics are that step's). \
             Skipped without an endpoint. Validation: every stream ended properly, and its token count equals \
             the server's `usage` where both are known; `validate=echo` (completions) also has the server stream \
             each prompt back first, checked against what was sent and not counted as output.",
        )
        .duration(30.0)
        .param(Param::names(ParamKind::Address, "endpoint", "").help(
            "the server's base URL, http(s)://host:port (a trailing /v1 is fine); empty: skipped",
        ))
        .param(
            Param::choice("api", "completions", &["completions", "chat"])
                .help("completions (/v1/completions) or chat (/v1/chat/completions)"),
        )
        .param(Param::text("model", "").help("the model to ask for; empty: the first /v1/models lists"))
        .param(Param::names(ParamKind::Secret, "api_key_env", "").help(
            "the environment variable holding the API key (sent as a bearer token; never stored or printed)",
        ))
        .param(
            Param::int("concurrency", 1, 1..=100_000)
                .help("closed loop: clients, each sending when its last response ended"),
        )
        .param(
            Param::float("request_rate", 0.0, 0.0..=1e7)
                .unit("requests/s")
                .help("open loop: requests per second (0: closed loop)"),
        )
        .param(
            Param::choice("arrival", "poisson", &["poisson", "constant", "gamma"])
                .help("open loop gaps: poisson, constant or gamma"),
        )
        .param(
            Param::float("burstiness", 1.0, 0.0..=1e6)
                .help("gamma's shape: 1 = Poisson, below 1 burstier, above 1 more even"),
        )
        .param(
            Param::int("requests", 100, 1..=10_000_000)
                .help("requests sent (per step with max_throughput)"),
        )
        .param(Param::int("input_tokens", 128, 1..=1 << 20).help(
            "prompt length: words of seeded text, cut to exactly this many tokens with tokenizer",
        ))
        .param(Param::int("output_tokens", 64, 1..=1 << 20).help("max_tokens of each request"))
        .param(Param::int("input_tokens_sd", 0, 0..=1 << 20).help(
            "prompt lengths' standard deviation (a rounded normal; 0: all input_tokens)",
        ))
        .param(
            Param::int("output_tokens_sd", 0, 0..=1 << 20)
                .help("output lengths' standard deviation (0: all output_tokens)"),
        )
        .param(Param::int("prefix_tokens", 0, 0..=1 << 20).help(
            "tokens of seeded text every conversation starts with, the same for all (exercises prefix caching)",
        ))
        .param(Param::int("turns", 1, 1..=1000).help(
            "turns per conversation: each sent when the previous ended, carrying it and its answer; the load paces conversations",
        ))
        .param(Param::input_path("trace_file", "").help(
            "a trace to replay: JSONL of timestamp (ms), input_tokens, output_tokens (Mooncake's input_length/output_length too); its first `requests` lines",
        ))
        .param(
            Param::float("trace_speedup", 1.0, 0.0..=1e6)
                .help("replay the trace this many times faster"),
        )
        .param(Param::flag("ignore_eos", true).help(
            "ask the server to generate output_tokens whatever it samples (vLLM, SGLang, llama.cpp); false for servers that refuse the field (transformers serve, OpenAI)",
        ))
        .param(Param::choice("validate", "usage", &["usage", "echo"]).help(
            "usage: each stream ended properly and its tokens match usage; echo (completions): the server also streams each prompt back first, checked against what was sent",
        ))
        .param(Param::flag("max_throughput", false).help(
            "search the highest request rate meeting the SLOs (needs an SLO): `requests` per step, doubling then bisecting",
        ))
        .param(
            Param::float("slo_attainment_pct", 99.0, 0.0..=100.0)
                .unit("%")
                .help("max_throughput: a rate passes when this percentage of its requests meet every SLO"),
        )
        .param(
            Param::input_path("tokenizer", "")
                .help("a tokenizer.json to count streamed tokens with (the server's own)"),
        )
        .param(Param::input_path("prompts_file", "").help(
            "your prompts instead of seeded text: JSONL ({\"prompt\": ..., \"output_tokens\": n optional}) or ShareGPT JSON",
        ))
        .param(
            Param::choice("dataset_format", "jsonl", warpt_serving::prompts::FORMATS)
                .help("prompts_file's format: jsonl or sharegpt"),
        )
        .param(
            Param::float("slo_ttft_ms", 0.0, 0.0..=DAY_MS)
                .unit("ms")
                .help("goodput's TTFT bound, ms (0: none)"),
        )
        .param(
            Param::float("slo_tpot_ms", 0.0, 0.0..=DAY_MS)
                .unit("ms")
                .help("goodput's TPOT bound, ms (0: none)"),
        )
        .param(
            Param::float("slo_latency_ms", 0.0, 0.0..=DAY_MS)
                .unit("ms")
                .help("goodput's end-to-end latency bound, ms (0: none)"),
        )
        .param(
            Param::float("max_error_pct", 1.0, 0.0..=100.0)
                .unit("%")
                .help("the run fails when more requests than this percentage fail"),
        )
        .param(
            Param::float("timeout_s", 300.0, 0.0..=86_400.0)
                .unit("s")
                .help("longest wait for one response"),
        )
        .param(Param::choice("http_version", "auto", &["auto", "1.1", "2"]).help(
            "auto: HTTP/1.1 keep-alive on http://, HTTP/2 on https:// when the server offers it; 1.1; 2 (h2c with prior knowledge on http://)",
        ))
        .param(Param::input_path("ca_file", "").help(
            "PEM root certificates to trust besides the system's, for an https:// endpoint",
        ))
        .check(check_params)
        .timeouts(StageLimits {
            setup: Some(120.0),
            ..StageLimits::default()
        })
        .metric("ttft_ms")
        .metric("itl_ms")
        .metric("tpot_ms")
        .metric("request_latency_ms")
        .metric("output_tokens_per_s")
        .metric("requests_per_s")
        .metric("goodput_requests_per_s")
        .metric("max_throughput_requests_per_s")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let c = config(params)?;
    if !c.url.is_empty() {
        c.endpoint("")?;
    }
    if !c.tokenizer.is_empty() {
        crate::tokenize::load_file(std::path::Path::new(&c.tokenizer))
            .map_err(|e| format!("parameter 'tokenizer': {e}"))?;
    }
    if !c.inputs.prompts_file.is_empty() {
        warpt_serving::prompts::read(
            std::path::Path::new(&c.inputs.prompts_file),
            &c.inputs.dataset_format,
        )?;
    }
    if !c.inputs.trace_file.is_empty() {
        warpt_serving::trace::read(
            std::path::Path::new(&c.inputs.trace_file),
            c.inputs.trace_speedup,
        )?;
    }
    Ok(())
}

/// The running benchmark.
#[derive(Default)]
pub struct LlmServe {
    config: Option<Config>,
    endpoint: Option<Endpoint>,
    tokenizer: Option<Tokenizer>,
    inputs: Option<Inputs>,
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

    /// Sends `inputs` under `load` and reads the run.
    fn step(
        &self,
        endpoint: &Endpoint,
        c: &Config,
        inputs: &Inputs,
        load: Load,
        seed: u64,
    ) -> Result<(Run, Analysis), BenchmarkError> {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        // Connections opened before measuring: one per client (closed
        // loop), 16 for an open loop or a replay.
        let warmup = match load {
            Load::Closed { concurrency } => concurrency.min(inputs.specs.len()),
            Load::Open { .. } | Load::Replay { .. } => 16,
        };
        let plan = Plan {
            load,
            specs: inputs.specs.clone(),
            turns: c.inputs.turns,
            seed,
            warmup,
        };
        let run =
            drive(endpoint, &plan, threads).map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        let count = self.count();
        let analysis = analyse(
            &run,
            count.as_ref().map(|f| f as &dyn Fn(&str) -> usize),
            c.slos,
        );
        Ok((run, analysis))
    }
}

/// The longest a load of `requests` can take when every request takes its
/// whole `timeout` (each has its own): the measurement's limit.
fn work_limit(c: &Config, load: &Load, requests: usize) -> Duration {
    let conversations = requests.div_ceil(c.inputs.turns);
    let rounds = match load {
        Load::Closed { concurrency } => conversations.div_ceil((*concurrency).max(1)) as f64,
        Load::Open { rate, .. } => 1.0 + conversations as f64 / rate / c.timeout.as_secs_f64(),
        Load::Replay { times } => {
            1.0 + times.last().copied().unwrap_or(0.0) / c.timeout.as_secs_f64()
        }
    };
    // The warm-up's requests, then every round of turns.
    c.timeout.mul_f64(1.0 + rounds * c.inputs.turns as f64)
}

impl Benchmark for LlmServe {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let c = config(&ctx.params).map_err(BenchmarkError::invalid(NAME))?;
        if c.url.is_empty() {
            return Err(BenchmarkError::Skipped(
                "no endpoint: give --param endpoint=http://HOST:PORT of an OpenAI-compatible server".into(),
            ));
        }
        let mut endpoint = c.endpoint(&c.key_env).map_err(BenchmarkError::Failed)?;
        if endpoint.model.is_empty() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| BenchmarkError::Failed(e.to_string()))?;
            let client = endpoint.client();
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
        let mut inputs = crate::serve_inputs::build(&c.inputs, ctx.seed, self.tokenizer.as_ref())
            .map_err(BenchmarkError::Failed)?;
        for spec in &mut inputs.specs {
            spec.echo = c.echo;
        }
        self.inputs = Some(inputs);
        self.endpoint = Some(endpoint);
        self.config = Some(c);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let (Some(c), Some(endpoint), Some(inputs)) = (
            self.config.clone(),
            self.endpoint.clone(),
            self.inputs.clone(),
        ) else {
            return Err(BenchmarkError::not_prepared());
        };
        // No warm-up pass: the load opens its connections itself, and a
        // second full pass would double the run. Without this the
        // supervisor holds the whole load to the warm-up's limit.
        measure.begin_measurement();
        let n = inputs.specs.len();
        let mut load = match &inputs.times {
            Some(times) => Load::Replay {
                times: times.clone(),
            },
            None => c.load.clone(),
        };
        let mut steps = Vec::new();
        let (run, analysis) = if c.max_throughput {
            let limits = Limits::default();
            // The first rate: the one asked for, else what a closed loop
            // at `concurrency` clients got through.
            let start = match c.load {
                Load::Open { rate, .. } => rate,
                _ => {
                    measure.limit_stage(
                        Stage::Measure,
                        work_limit(&c, &c.load, n),
                        "closed-loop probe",
                    );
                    let (_, probe) = self.step(&endpoint, &c, &inputs, c.load.clone(), ctx.seed)?;
                    probe.done.len() as f64 / probe.wall_s.max(1e-9)
                }
            };
            let arrival = match c.load {
                Load::Open { arrival, .. } => arrival,
                _ => Arrival::Poisson,
            };
            let mut best: Option<(f64, Run, Analysis)> = None;
            let mut last: Option<(Run, Analysis)> = None;
            let mut tried = 0;
            let (found, log) = search(start, limits, |rate| {
                tried += 1;
                let step_load = Load::Open { rate, arrival };
                measure.limit_stage(
                    Stage::Measure,
                    work_limit(&c, &step_load, n).mul_f64((limits.max_steps + 1) as f64),
                    "max_throughput search",
                );
                measure.report_progress(
                    "max_throughput",
                    tried as f64 / limits.max_steps as f64,
                    tried,
                );
                let (run, a) = self.step(&endpoint, &c, &inputs, step_load, ctx.seed)?;
                let passed =
                    a.error_pct() <= c.max_error_pct && a.attainment_pct() >= c.attainment_pct;
                if passed && best.as_ref().is_none_or(|(r, ..)| rate > *r) {
                    best = Some((rate, run, a));
                } else {
                    last = Some((run, a));
                }
                Ok::<bool, BenchmarkError>(passed)
            })?;
            steps = log;
            let Some((rate, run, a)) = best else {
                let worst = last.map(|(_, a)| a);
                return Err(BenchmarkError::Failed(format!(
                    "max_throughput: no rate met the SLOs for {}% of requests ({}); at the last, {}",
                    c.attainment_pct,
                    steps_text(&steps),
                    worst.map_or(String::new(), |a| format!(
                        "{:.1}% met them, {}",
                        a.attainment_pct(),
                        a.counts()
                    ))
                )));
            };
            debug_assert_eq!(found, Some(rate));
            load = Load::Open { rate, arrival };
            (run, a)
        } else {
            measure.limit_stage(Stage::Measure, work_limit(&c, &load, n), "requests");
            self.step(&endpoint, &c, &inputs, load.clone(), ctx.seed)?
        };
        let errors = analysis.errors();
        if analysis.error_pct() > c.max_error_pct || analysis.done.is_empty() {
            return Err(BenchmarkError::Failed(format!(
                "{errors} of {} requests failed ({:.1}% > max_error_pct {}): {}; first error: {}{}",
                analysis.sent,
                analysis.error_pct(),
                c.max_error_pct,
                analysis.counts(),
                analysis
                    .first_error
                    .as_deref()
                    .unwrap_or("requests streamed no text"),
                // The body of a refusal is never read (it is the server's,
                // not ours to store): a 400 or 422 to requests that carried
                // ignore_eos is the usual sign of a server without it.
                if c.inputs.ignore_eos
                    && analysis
                        .first_error
                        .as_deref()
                        .is_some_and(|e| e.contains("HTTP 400") || e.contains("HTTP 422"))
                {
                    " (servers that do not take ignore_eos refuse every request: try --param ignore_eos=false)"
                } else {
                    ""
                }
            )));
        }
        let mut metrics = analysis.metrics();
        let mode = match &load {
            Load::Closed { concurrency } => format!("closed loop, {concurrency} clients"),
            Load::Open { rate, arrival } => {
                format!("open loop, {rate} requests/s, {arrival:?} arrivals")
            }
            Load::Replay { times } => format!(
                "trace replay, {} requests over {:.1} s",
                times.len().min(n),
                times.get(n.saturating_sub(1)).copied().unwrap_or(0.0)
            ),
        };
        let mut details = vec![
            ("endpoint".into(), ParamValue::Str(endpoint.base.clone())),
            ("model".into(), ParamValue::Str(endpoint.model.clone())),
            ("mode".into(), ParamValue::Str(mode)),
        ];
        details.extend(analysis.details(&run));
        if c.max_throughput {
            if let Load::Open { rate, .. } = load {
                metrics.push(BenchmarkMetric::single(
                    "max_throughput_requests_per_s",
                    rate,
                    "requests/s",
                    true,
                ));
            }
            details.push(("search_steps".into(), ParamValue::Str(steps_text(&steps))));
        }
        self.run = Some(run);
        Ok(Measured {
            metrics,
            details,
            warnings: inputs.warnings.clone(),
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
                let counted = s
                    .outcome
                    .chunks
                    .iter()
                    .map(|(_, t)| c(t).max(1))
                    .sum::<usize>() as u64;
                // A stream that stopped on its end-of-sequence token counts
                // it in usage but prints nothing for it.
                let silent = u64::from(s.outcome.finish_reason.as_deref() == Some("stop"));
                if counted > usage || counted + silent < usage {
                    mismatched.push((s.index, counted, usage));
                }
            }
        }
        let echoed = self.config.as_ref().is_some_and(|c| c.echo);
        let wrong_echo: Vec<usize> = run
            .requests
            .iter()
            .filter(|s| s.outcome.status == Status::Ok && echoed && s.outcome.echo != Some(true))
            .map(|s| s.index)
            .collect();
        if let Some(i) = wrong_echo.first() {
            return Validation::fail(format!(
                "{} of {ok} streams did not echo their prompt as sent (request {i} the first): the server read something else, or does not echo",
                wrong_echo.len()
            ));
        }
        if let Some((i, counted, usage)) = mismatched.first() {
            return Validation::fail(format!(
                "{} of {ok} streams' tokens, counted with the tokenizer, differ from the server's usage \
                 (request {i}: {counted} counted, {usage} in usage): is the tokenizer the server's?",
                mismatched.len()
            ));
        }
        Validation::pass(format!(
            "{ok} of {} streams ended properly{}{}",
            run.requests.len(),
            if echoed {
                ", each echoing its prompt exactly as sent"
            } else {
                ""
            },
            if count.is_some() {
                ", each one's tokens counted with the tokenizer equal to the server's usage (less an end-of-sequence token, which prints nothing)"
            } else {
                ""
            }
        ))
    }
}

/// The search's steps as `12.5 pass, 25 fail, ...` (requests/s).
fn steps_text(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("{:.3} {}", s.rate, if s.passed { "pass" } else { "fail" }))
        .collect::<Vec<_>>()
        .join(", ")
}
