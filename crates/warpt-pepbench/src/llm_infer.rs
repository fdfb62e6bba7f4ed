//! `llm_infer`: a batch of requests through a Llama decoder, prefill then
//! greedy decode with a KV cache; TTFT and TPOT per request as MLPerf
//! defines them, output and prefill tokens/s per batch.
//!
//! Validation: the tiny preset at the run's precision against a plain f64
//! forward pass (first logits within the precision's tolerance, greedy
//! tokens equal while the reference chose them firmly); the measured model
//! gives the same tokens twice, batched requests the same tokens as each
//! request run alone, and its last decode step the logits of the same
//! tokens recomputed without a cache (its family's KV cache and positions).

use std::sync::atomic::Ordering;

use warpt_harness::SeriesMetrics;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef, WorkLimit, at_floor_rate,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, StageLimits, Validation,
};

use warpt_models::device::{self, MemoryPeak};
use warpt_models::family::Family;
use warpt_models::llm::{Decoder, random_prompts};
use warpt_models::model::{Preset, Shape};
use warpt_models::sampling::{DEVICES, LLM_MODELS, PRECISIONS};
use warpt_models::select::{Config, Source, build, check, config};

/// Benchmark name within the suite.
pub const NAME: &str = "llm_infer";
/// Per-request TTFT/TPOT values kept in a metric's `samples`.
const EVENTS_KEPT: usize = 20_000;
/// The rate a generation is held to before it counts as stuck (GFLOP/s):
/// far below any CPU's, so a long prompt or a big batch is given the time
/// its work needs rather than the default warm-up limit.
const FLOOR_GFLOPS: f64 = 1.0;

/// The arithmetic of one `generate` (GFLOP): every weight once per token
/// fed (2 flops a multiply-add; the prompt's, then `n_gen - 1` decode steps:
/// the first token comes from the prefill) and attention's scores and
/// weighted sums over the positions up to each token fed.
fn generate_gflop(
    parameters: usize,
    shape: &Shape,
    batch: usize,
    prompt: usize,
    n_gen: usize,
) -> f64 {
    let tokens = (batch * (prompt + n_gen - 1)) as f64;
    let (p, steps) = (prompt as f64, n_gen as f64 - 1.0);
    // Positions attended to, summed over a request's tokens: 1..=p for the
    // prompt, then p + 1, p + 2, ... for the decode steps.
    let attended = p * (p + 1.0) / 2.0 + steps * p + steps * (steps + 1.0) / 2.0;
    let attention =
        4.0 * (shape.layers * shape.heads * shape.head_dim) as f64 * attended * batch as f64;
    (2.0 * parameters as f64 * tokens + attention) / 1e9
}

/// The spec of `llm_infer`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .components([BenchmarkComponent::Cpu, BenchmarkComponent::Ram, BenchmarkComponent::Gpu])
        .kind(BenchmarkKind::Application)
        .description(format!(
            "LLM inference on a decoder (candle; the presets are Llama-architecture, `model_dir` may hold a \
             {} model, `details.family` says which): `batch` requests of `prompt_tokens` \
             tokens, prefilled as one batch, then `gen_tokens` tokens each by greedy decoding with a KV \
             cache (for t5, an encoder-decoder, the prompt is the encoder's input and decoding starts from its \
             start token). Per request `ttft_ms` (submission to first token; for t5 encoding plus the first decoder step) and `tpot_ms` = (latency - TTFT) / \
             (gen_tokens - 1), as MLPerf defines them; per batch `output_tokens_per_s` (tokens generated \
             after the first, over the decode time) and `prefill_tokens_per_s`. Weights generated from the \
             seed. Presets (`family=llama`): tiny = {}; mini = {}; small = {}; base (TinyLlama-1.1B's shape) = {}; large (Llama-2-7B's) = {}; \
             xl (Llama-2-13B's) = {}; `family` = mistral, qwen2, qwen3, phi3, gemma or gemma2 runs those widths in \
             the family's own block, gpt2 GPT-2's released sizes (small = gpt2 124 M .. xl = gpt2-xl 1.5 B), \
             t5 T5's (small = t5-small .. xl = t5-3b); a preset the free memory cannot hold is skipped before \
             it is generated, naming the nearest preset and precision that fits. Validation: the tiny \
             preset against a plain f64 forward pass, repeatability, batched = alone, and the measured model's \
             last decode step = the same tokens recomputed without a cache. Runs here: {}.",
            warpt_models::family::Family::llm_list(),
            Preset::Tiny.shape().describe(),
            Preset::Mini.shape().describe(),
            Preset::Small.shape().describe(),
            Preset::Base.shape().describe(),
            Preset::Large.shape().describe(),
            Preset::Xl.shape().describe(),
            warpt_models::support::summary("pepbench/llm_infer")
        ))
        .duration(10.0)
        .param(
            Param::choice("family", "llama", &Family::LLM.map(Family::model_type))
                .help("the presets' family (details.family); a model_dir or model_file names its own"),
        )
        .param(Param::choice("model", "small", LLM_MODELS).help(
            "preset: tiny (~10 M), mini (~34 M), small (~110 M), base (~1.1 B), large (~6.7 B), xl (~13 B) for llama; \
             the family's own sizes for gpt2 and t5",
        ))
        .param(Param::input_path("model_dir", "").help(format!(
            "a Hugging Face decoder or encoder-decoder directory (config.json, safetensors): model_type {} (details.family); overrides model",
            warpt_models::family::Family::llm_list()
        )))
        .param(
            Param::input_path("model_file", "")
                .help("a quantized Llama GGUF file (its own precision); overrides model"),
        )
        .param(Param::choice("device", "cpu", DEVICES).help(device::HELP))
        .param(Param::choice("precision", "f32", PRECISIONS).help(
            "f32, bf16, f16, q8_0 or q4_0 (GGML blocks; norms f32); with model_file, the file's",
        ))
        .param(Param::int("batch", 1, 1..).help("requests prefilled and decoded together"))
        .param(Param::int("prompt_tokens", 128, 1..).help("tokens in each prompt"))
        .param(Param::int("gen_tokens", 32, 2..).help("tokens generated per request (at least 2)"))
        .check(warpt_models::select::check_params)
        // Generating the base preset's 1.1 B weights takes a while.
        .timeouts(StageLimits {
            setup: Some(300.0),
            validate: Some(300.0),
            ..StageLimits::default()
        })
        .metric("ttft_ms")
        .metric("tpot_ms")
        .metric("output_tokens_per_s")
        .metric("prefill_tokens_per_s")
        .build()
}

/// The running benchmark.
#[derive(Default)]
pub struct LlmInfer {
    config: Option<Config>,
    decoder: Option<Decoder>,
    prompts: Vec<Vec<u32>>,
    seed: u64,
    memory: MemoryPeak,
}

impl Benchmark for LlmInfer {
    fn work_limits(&self, ctx: &RunContext) -> Vec<WorkLimit> {
        // Whatever the duration, the warm-up and the measurement each take
        // at least one whole generation (batch 8 of 2,048 tokens on a small
        // model is seconds to minutes).
        let (Some(c), Some(d)) = (&self.config, &self.decoder) else {
            return Vec::new();
        };
        let gflop = generate_gflop(d.parameters, &d.shape, c.batch, c.prompt, c.n_gen);
        let one = at_floor_rate(gflop, FLOOR_GFLOPS);
        let part = format!(
            "generations of {} x {} + {} tokens: {gflop:.0} GFLOP each, {:.0} s at a floor of {FLOOR_GFLOPS} GFLOP/s",
            c.batch,
            c.prompt,
            c.n_gen,
            one.as_secs_f64()
        );
        vec![
            WorkLimit::warmup(ctx.burnin, one, part.clone()),
            WorkLimit::measure(ctx.duration, one, part),
        ]
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        crate::heap::keep_freed_memory();
        let c = config(&ctx.params).map_err(BenchmarkError::invalid(NAME))?;
        let dev = device::open(ctx.str_param("device")?)?;
        self.memory = MemoryPeak::new(&dev);
        let decoder = build(&c, ctx, &dev)?;
        self.prompts = random_prompts(ctx.seed, c.batch, c.prompt, decoder.shape.vocab);
        device::settle(&dev, || {
            decoder
                .generate(&self.prompts, 2)
                .map_err(|e| e.to_string())
        })?;
        self.memory.sample();
        self.decoder = Some(decoder);
        self.config = Some(c);
        self.seed = ctx.seed;
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let c = warpt_harness::prepared(&self.config)?.clone();
        let decoder = warpt_harness::prepared(&self.decoder)?;
        let defs = [
            SeriesDef::rate(
                "output_tokens_per_s",
                "tokens/s",
                (c.batch * (c.n_gen - 1)) as f64,
            ),
            SeriesDef::rate(
                "prefill_tokens_per_s",
                "tokens/s",
                (c.batch * c.prompt) as f64,
            ),
        ];
        let measuring = measure.measuring_flag();
        let (mut ttft, mut tpot) = (Vec::new(), Vec::new());
        let mut failure = None;
        let policy = MeasurePolicy::share_of(ctx, 1);
        let memory = &self.memory;
        let m = measure.run(&policy, NAME, &defs, |out| {
            let generated = decoder.generate(&self.prompts, c.n_gen);
            memory.sample();
            match generated {
                Ok(g) => {
                    out[0] = (g.total_s - g.ttft_s).max(1e-9);
                    out[1] = g.ttft_s.max(1e-9);
                    if measuring.load(Ordering::Relaxed) {
                        let per_token = (g.total_s - g.ttft_s) / (c.n_gen - 1) as f64;
                        ttft.extend(std::iter::repeat_n(g.ttft_s * 1e3, c.batch));
                        tpot.extend(std::iter::repeat_n(per_token * 1e3, c.batch));
                    }
                }
                Err(e) => {
                    failure.get_or_insert(e.to_string());
                    out[0] = 1.0;
                    out[1] = 1.0;
                }
            }
        });
        if let Some(e) = failure {
            return Err(BenchmarkError::Failed(format!("generating: {e}")));
        }
        let mut metrics = m.metrics;
        for (name, values) in [("ttft_ms", &ttft), ("tpot_ms", &tpot)] {
            let def = SeriesDef::new(name, "ms", false, &[], Convert::Time(1e3));
            metrics.extend(def.metric_of_events(values, EVENTS_KEPT, Some(m.stop_reason)));
        }
        let shape = decoder.shape;
        let mut details = vec![
            (
                "architecture".into(),
                ParamValue::from(decoder.family.model_type()),
            ),
            (
                "family".into(),
                ParamValue::from(decoder.family.model_type()),
            ),
            (
                "model".into(),
                ParamValue::from(match &c.source {
                    Source::Preset(p) => p.name(),
                    Source::Dir(_) => "model_dir",
                    Source::File(..) => "model_file",
                }),
            ),
            ("shape".into(), ParamValue::Str(shape.describe())),
            (
                "parameters".into(),
                ParamValue::Int(decoder.parameters as i64),
            ),
            (
                "model_bytes".into(),
                ParamValue::Int(decoder.model_bytes as i64),
            ),
            (
                "precision".into(),
                ParamValue::from(match &c.source {
                    Source::File(_, stored) => stored.as_str(),
                    _ => c.precision.name(),
                }),
            ),
            (
                "weights".into(),
                ParamValue::Str(match &c.source {
                    Source::Preset(_) => "generated from the seed".into(),
                    Source::Dir(p) | Source::File(p, _) => p.clone(),
                }),
            ),
            (
                "kv_cache_bytes".into(),
                ParamValue::Int(decoder.kv_cache_bytes(c.batch, c.prompt + c.n_gen) as i64),
            ),
            (
                "kv_cache_bytes_per_token".into(),
                ParamValue::Int(decoder.kv_cache_bytes(1, 1) as i64),
            ),
            ("engine".into(), ParamValue::from(decoder.engine())),
            ("attention".into(), ParamValue::from(decoder.attention())),
            ("requests".into(), ParamValue::Int(ttft.len() as i64)),
            ("heap".into(), ParamValue::from(crate::heap::SETTING)),
            (
                "counting".into(),
                ParamValue::from(
                    "TTFT: submission to first token (batched prefill + first argmax), the same for every \
                         request of a batch; TPOT = (latency - TTFT) / (gen_tokens - 1); output_tokens_per_s = \
                         batch x (gen_tokens - 1) / decode time (the first token belongs to the prefill)",
                ),
            ),
        ];
        if let Some(isa) = decoder.isa() {
            details.push(("isa".into(), ParamValue::from(isa)));
        }
        details.extend(device::details(decoder.device(), &self.memory));
        Ok(Measured::new(metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let (Some(c), Some(decoder)) = (self.config.clone(), self.decoder.as_ref()) else {
            return Validation::fail("nothing was generated");
        };
        let through_gguf =
            c.precision.quantized().is_some() || matches!(c.source, Source::File(..));
        match check(c.precision, through_gguf, decoder, &self.prompts, self.seed) {
            Ok(msg) => Validation::pass(msg),
            Err(msg) => Validation::fail(msg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generation_counts_its_weights_and_the_positions_attended() {
        let shape = Preset::Tiny.shape();
        let per_position = 4.0 * (shape.layers * shape.heads * shape.head_dim) as f64;
        // A 1-token prompt and 2 generated: 2 tokens fed (the prompt's, one
        // decode step), attending 1 and then 2 positions.
        let got = generate_gflop(1000, &shape, 1, 1, 2) * 1e9;
        let want = 2.0 * 1000.0 * 2.0 + per_position * 3.0;
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        // A batch multiplies everything; a prompt's attention grows as its square.
        let batched = generate_gflop(1000, &shape, 8, 1, 2) * 1e9;
        assert!((batched - 8.0 * want).abs() < 1e-6, "{batched}");
        let long = generate_gflop(0, &shape, 1, 2048, 2) * 1e9;
        assert!(
            (long - per_position * (2048.0 * 2049.0 / 2.0 + 2049.0)).abs() < 1e-3,
            "{long}"
        );
    }
}
