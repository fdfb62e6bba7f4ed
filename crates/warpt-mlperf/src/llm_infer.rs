//! `llm_infer`: pepbench's LLM as an MLPerf LLM system under test — the
//! same decoder (presets, precisions, Hugging Face or GGUF models), served
//! under LoadGen's scenarios with token latencies: TTFT and TPOT per
//! sample, bound in Server by `ttft_bound_ms` and `tpot_bound_ms`, and
//! tokens/s.

use std::time::Instant;

use warpt_harness::{Benchmark, BenchmarkError, Measure, MeasureResult, RunContext};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Params, Validation};
use warpt_models::device::{self, MemoryPeak};
use warpt_models::llm::{Decoder, Precision, random_prompts};

use crate::bench::{self, ModelRules, Outcome, SpecParts};
use crate::loadgen::{QuerySample, Responder, Response, Scenario, SystemUnderTest};

/// Benchmark name within the suite.
pub const NAME: &str = "llm_infer";

const MODEL: ModelRules = ModelRules {
    name: "llama2-70b",
    server_latency_ms: 0.0,
    offline_min_count: 24576,
    library: 24576,
    // llama2-70b's Server bounds in mlperf.conf.
    token_bounds_ms: Some((2000.0, 200.0)),
};

/// The spec of `llm_infer`.
pub fn spec() -> BenchmarkSpec {
    bench::scenario_spec(SpecParts {
        name: NAME,
        scenario: Scenario::Offline,
        batch: Some(8),
        components: vec![
            BenchmarkComponent::Cpu,
            BenchmarkComponent::Ram,
            BenchmarkComponent::Gpu,
        ],
        description: "pepbench's LLM (candle, a Llama-architecture decoder, greedy with a KV cache) as an MLPerf LLM SUT: \
             seeded prompts of `prompt_tokens`, `gen_tokens` generated each, up to `batch` samples prefilled and \
             decoded together. TTFT and TPOT per sample as LoadGen counts them, tokens/s; in Server the p99 TTFT \
             and TPOT must meet their bounds. Validation: pepbench's (the tiny preset against an f64 forward, \
             repeatability, batched = alone) and every sample answered once with gen_tokens tokens.",
        devices: warpt_models::sampling::DEVICES,
        params: vec![
            Param::choice("model", "small", warpt_models::sampling::LLM_MODELS)
                .help("pepbench preset: tiny, mini, small, base, large, xl"),
            Param::input_path("model_file", "")
                .help("a quantized Llama GGUF file; overrides model"),
            Param::choice("precision", "f32", warpt_models::sampling::PRECISIONS)
                .help("f32, bf16, f16, q8_0 or q4_0"),
            Param::int("prompt_tokens", 128, 1..).help("tokens per prompt"),
            Param::int("gen_tokens", 32, 2..).help("tokens generated per sample (at least 2)"),
            bench::token_bound(
                "ttft_bound_ms",
                "Server p99 TTFT bound; 0 = llama2-70b's 2000 ms",
            ),
            bench::token_bound(
                "tpot_bound_ms",
                "Server p99 TPOT bound; 0 = llama2-70b's 200 ms",
            ),
        ],
        check: check_params,
        metrics: &["tokens_per_s", "ttft_ms", "tpot_ms"],
    })
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    bench::check_common(params)?;
    warpt_models::select::check_params(params)
}

/// The LLM SUT.
pub struct LlmSut {
    decoder: Decoder,
    prompt: usize,
    n_gen: usize,
    batch: usize,
    seed: u64,
    name: String,
    memory: MemoryPeak,
}

impl LlmSut {
    /// Library sample `index`: its prompt.
    pub fn prompt(&self, index: usize) -> Vec<u32> {
        random_prompts(
            self.seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            1,
            self.prompt,
            self.decoder.shape.vocab,
        )
        .remove(0)
    }
}

impl SystemUnderTest for LlmSut {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn max_batch(&self) -> usize {
        self.batch
    }

    fn process(&self, batch: &[QuerySample], responder: &Responder) -> Result<(), String> {
        let prompts: Vec<Vec<u32>> = batch.iter().map(|s| self.prompt(s.index)).collect();
        let start = Instant::now();
        let g = self
            .decoder
            .generate(&prompts, self.n_gen)
            .map_err(|e| format!("generating: {e}"))?;
        self.memory.sample();
        let first = start + std::time::Duration::from_secs_f64(g.ttft_s);
        for (sample, tokens) in batch.iter().zip(&g.tokens) {
            responder.first_token_at(sample, first);
            responder.complete(
                sample,
                Response {
                    data: tokens.iter().flat_map(|t| t.to_le_bytes()).collect(),
                    tokens: Some(tokens.len() as u64),
                },
            );
        }
        Ok(())
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct LlmInfer {
    sut: Option<LlmSut>,
    precision: Option<(Precision, bool)>,
    outcome: Option<Outcome>,
}

impl Benchmark for LlmInfer {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        warpt_models::heap::keep_freed_memory();
        let dev = device::open(ctx.str_param("device")?)?;
        let memory = MemoryPeak::new(&dev);
        let (decoder, precision, through_gguf) = warpt_models::select::decoder(ctx, &dev)?;
        device::settle(&dev, || {
            let prompt = random_prompts(ctx.seed, 1, 8, decoder.shape.vocab);
            decoder.generate(&prompt, 2).map_err(|e| e.to_string())
        })?;
        memory.sample();
        let name = format!(
            "warpt LLM ({} parameters, {}, {} prompt + {} generated tokens)",
            decoder.parameters,
            precision.name(),
            ctx.int_param("prompt_tokens", 1)?,
            ctx.int_param("gen_tokens", 2)?
        );
        self.sut = Some(LlmSut {
            decoder,
            prompt: ctx.int_param("prompt_tokens", 1)? as usize,
            n_gen: ctx.int_param("gen_tokens", 2)? as usize,
            batch: ctx.int_param("batch", 1)? as usize,
            seed: ctx.seed,
            name,
            memory,
        });
        self.precision = Some((precision, through_gguf));
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let sut = warpt_harness::prepared(&self.sut)?;
        let (mut m, outcome) = bench::measure_sut(ctx, measure, sut, &MODEL, NAME)?;
        m.details.push(("sut".into(), ParamValue::from(sut.name())));
        m.details
            .extend(device::details(sut.decoder.device(), &sut.memory));
        m.details.push((
            "counting".into(),
            ParamValue::from(
                "TTFT from the sample's scheduled time to its first token (a batch's prefill); TPOT = (latency - TTFT) / (tokens - 1); tokens/s counts every generated token",
            ),
        ));
        self.outcome = Some(outcome);
        Ok(m)
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let (Some(sut), Some((precision, gguf)), Some(outcome)) =
            (&self.sut, self.precision, &self.outcome)
        else {
            return Validation::fail("nothing was measured");
        };
        let n_gen = sut.n_gen;
        let answers = match crate::check_answers(&outcome.summary, |r| {
            r.tokens == Some(n_gen as u64) && r.data.len() == 4 * n_gen
        }) {
            Ok(m) => m,
            Err(e) => return Validation::fail(e),
        };
        let prompts: Vec<Vec<u32>> = (0..sut.batch.min(4)).map(|i| sut.prompt(i)).collect();
        match warpt_models::select::check(precision, gguf, &sut.decoder, &prompts, sut.seed) {
            Ok(m) => Validation::pass(format!("{answers}; {m}")),
            Err(e) => Validation::fail(e),
        }
    }
}
