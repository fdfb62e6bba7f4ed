//! `embed`: sentence embeddings as sentence-transformers computes them — a
//! BERT encoder, mean pooling over the attention mask, L2 normalisation —
//! in sentences/s and batch latency.
//!
//! The encoder has all-MiniLM-L6-v2's shape with weights from the seed, or
//! is a real BERT, RoBERTa or XLM-RoBERTa from `model_dir` (config.json,
//! model.safetensors, tokenizer.json). Validation: the seeded MiniLM against a plain f64
//! forward pass (a padded batch of two sentences), unit-norm outputs, each
//! sentence embedded alone equal to its row of the batch; with a real
//! model, the cosine of a known pair is reported.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert;
use tokenizers::Tokenizer;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasureResult, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params, StageLimits,
    Validation,
};

use crate::bert::{
    generate, mean_pool_normalize, minilm_config, parameter_count, reference_embedding,
};
use crate::encoder::PackedBert;
use crate::llm::Precision;
use crate::sampling::{DEVICES, FLOAT_PRECISIONS, time_each};
use crate::{corpus, tokenize};
use warpt_models::bert_dense::DenseBert;
use warpt_models::device::{self, MemoryPeak};
use warpt_models::family::Family;
use warpt_models::packed;

use crate::embed_dir::{check_model_dir, preset_config, roberta_as_bert};

/// Benchmark name within the suite.
pub const NAME: &str = "embed";
/// The pair sentence-transformers' documentation scores (0.755 with all-MiniLM-L6-v2).
pub const KNOWN_PAIR: [&str; 2] = ["A man is eating food.", "A man is eating a piece of bread."];

/// The spec of `embed`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .components([BenchmarkComponent::Cpu, BenchmarkComponent::Gpu])
        .kind(BenchmarkKind::Application)
        .description(format!(
            "Sentence embeddings as sentence-transformers computes them (a BERT encoder, mean pooling over the \
             attention mask, L2 normalisation): `batch` sentences of `seq_len` tokens per sample, \
             `sentences_per_s` and `batch_latency_ms`. Presets, weights from the seed (`family` bert, roberta \
             or xlm-roberta: their vocabularies): tiny = bert-tiny's shape, small = all-MiniLM-L6-v2's (384 wide, \
             6 layers, 12 heads, 22.6 M parameters without the unused pooler), base = bert-base's, large = \
             bert-large's, xl = XLM-RoBERTa-XL's (2560 wide, 36 layers), xxl = XLM-RoBERTa-XXL's (4096 wide, \
             48 layers, the largest released encoder); a preset the free memory cannot hold \
             is skipped before it is generated. Or `model_dir` = a Hugging \
             Face bert, roberta or xlm-roberta directory (config.json, model.safetensors, tokenizer.json; \
             `details.family`). Validation: the seeded \
             encoder against a plain f64 forward pass, unit norms, each sentence alone = its row of the \
             batch; with a real model, the cosine of a known pair. Runs here: {}.",
            warpt_models::support::summary("pepbench/embed")
        ))
        .duration(5.0)
        .param(
            Param::choice("family", "bert", &["bert", "roberta", "xlm-roberta"])
                .help("the presets' family: bert, roberta or xlm-roberta (details.family)"),
        )
        .param(Param::choice("model", "small", warpt_models::sampling::MODELS).help(
            "preset: tiny (bert-tiny), small (all-MiniLM-L6-v2), base (bert-base), large (bert-large), xl (XLM-RoBERTa-XL), xxl (XLM-RoBERTa-XXL)",
        ))
        .param(Param::input_path("model_dir", "").help(
            "a Hugging Face encoder directory (model_type bert, roberta or xlm-roberta); overrides family and model",
        ))
        .param(Param::choice("device", "cpu", DEVICES).help(warpt_models::device::HELP))
        .param(Param::choice("precision", "f32", FLOAT_PRECISIONS).help("f32, bf16 or f16"))
        .param(Param::int("batch", 32, 1..=4096).help("sentences per batch"))
        .param(
            Param::int("seq_len", 128, 1..)
                .help("tokens per sentence (inputs are cut to exactly this)"),
        )
        .check(check_params)
        .timeouts(StageLimits {
            setup: Some(120.0),
            ..StageLimits::default()
        })
        .metric("sentences_per_s")
        .metric("batch_latency_ms")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let int = |k: &str| params.get(k).and_then(ParamValue::as_i64).unwrap_or(0);
    let seq = int("seq_len");
    let s = |k: &str| params.get(k).and_then(ParamValue::as_str).unwrap_or("");
    let dir = s("model_dir");
    let max = if dir.is_empty() {
        preset_config(s("family"), s("model"))?.max_position_embeddings
    } else {
        check_model_dir(dir)?.0.max_position_embeddings
    };
    if !(1..=max as i64).contains(&seq) {
        return Err(format!(
            "parameter 'seq_len' must be from 1 to the model's {max} positions, not {seq}"
        ));
    }
    Ok(())
}

/// What runs the forward pass.
enum Engine {
    /// f32 and bf16 on the CPU: warpt's GEMM engine.
    Packed(PackedBert),
    /// Other precisions and devices: BERT on candle's operations.
    Candle(DenseBert),
}

/// A loaded encoder and its tokenizer.
pub struct Encoder {
    engine: Engine,
    tokenizer: Tokenizer,
    config: bert::Config,
    device: Device,
    /// Its family (`details.family`).
    pub family: Family,
    /// Where the weights came from.
    pub source: String,
    /// Parameters, counted from the tensors.
    pub parameters: usize,
    /// Bytes of the weights in the run's precision.
    pub model_bytes: usize,
}

impl Encoder {
    /// The seeded preset `config` (`dir` empty) or the model in `dir`.
    pub fn load(
        dir: &str,
        preset: &bert::Config,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Self, String> {
        let (config, family, tensors, tokenizer, source): (_, _, HashMap<String, Tensor>, _, _) =
            if dir.is_empty() {
                let config = preset.clone();
                let family = config
                    .model_type
                    .as_deref()
                    .and_then(Family::from_model_type)
                    .unwrap_or(Family::Bert);
                let tensors = generate(&config, seed, device).map_err(|e| e.to_string())?;
                let (tokenizer, _) = tokenize::load_or_train("", seed)?;
                (
                    config,
                    family,
                    tensors,
                    tokenizer,
                    "generated from the seed".to_string(),
                )
            } else {
                let (config, family) = check_model_dir(dir)?;
                let path = Path::new(dir);
                let weights = path.join("model.safetensors");
                let mut tensors = candle_core::safetensors::load(&weights, device)
                    .map_err(|e| format!("loading {}: {e}", weights.display()))?;
                if family != Family::Bert {
                    tensors = roberta_as_bert(tensors, config.pad_token_id)?;
                }
                let tokenizer = tokenize::load_file(&path.join("tokenizer.json"))?;
                (config, family, tensors, tokenizer, dir.to_string())
            };
        let parameters: usize = tensors.values().map(Tensor::elem_count).sum();
        // f32 and bf16 on the CPU run on the GEMM engine (bf16: weights
        // and the linear layers' inputs rounded, sums in f32).
        let packed = match dtype {
            DType::F32 => Some(packed::Precision::F32),
            DType::BF16 => Some(packed::Precision::Bf16),
            _ => None,
        };
        let engine = if let Some(precision) = packed.filter(|_| device.is_cpu())
            && PackedBert::supports(&config)
        {
            Engine::Packed(PackedBert::load(&tensors, &config, precision)?)
        } else {
            Engine::Candle(
                DenseBert::load(tensors, &config, dtype, device)
                    .map_err(|e| format!("building BERT: {e}"))?,
            )
        };
        Ok(Encoder {
            engine,
            tokenizer,
            config,
            device: device.clone(),
            family,
            source,
            parameters,
            model_bytes: parameters * dtype.size_in_bytes(),
        })
    }

    /// What runs the forward pass, for the details.
    pub fn engine_name(&self) -> &'static str {
        match self.engine {
            Engine::Packed(_) => warpt_models::packed::ENGINE,
            Engine::Candle(_) => "warpt BERT on candle operations",
        }
    }

    /// The instruction set the forward pass's products use: the GEMM
    /// engine's tiles', or `candle` (candle's own kernels choose).
    pub fn isa(&self) -> &'static str {
        match self.engine {
            Engine::Packed(ref bert) => bert.precision().isa(),
            Engine::Candle(_) => "candle",
        }
    }

    /// Token ids of `text` with the tokenizer's special tokens, cut to `max`.
    pub fn ids(&self, text: &str, max: usize) -> Result<Vec<u32>, String> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| e.to_string())?;
        let mut ids = enc.get_ids().to_vec();
        ids.truncate(max);
        Ok(ids)
    }

    /// Embeddings (one unit-norm row per sequence) of `batch`, padded to
    /// the longest with the model's pad id and masked.
    pub fn embed(&self, batch: &[Vec<u32>]) -> candle_core::Result<Vec<Vec<f32>>> {
        let len = batch.iter().map(Vec::len).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * len);
        let mut mask = Vec::with_capacity(batch.len() * len);
        for seq in batch {
            ids.extend(seq.iter().copied());
            ids.extend(std::iter::repeat_n(
                self.config.pad_token_id as u32,
                len - seq.len(),
            ));
            mask.extend(std::iter::repeat_n(1u32, seq.len()));
            mask.extend(std::iter::repeat_n(0u32, len - seq.len()));
        }
        let model = match &self.engine {
            Engine::Packed(p) => {
                return p
                    .embed(&ids, &mask, batch.len(), len)
                    .map_err(candle_core::Error::Msg);
            }
            Engine::Candle(model) => model,
        };
        let shape = (batch.len(), len);
        let ids = Tensor::from_vec(ids, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let hidden = model.forward(&ids, &mask)?;
        mean_pool_normalize(&hidden, &mask)?.to_vec2::<f32>()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// The running benchmark.
#[derive(Default)]
pub struct Embed {
    encoder: Option<Encoder>,
    inputs: Vec<Vec<u32>>,
    precision: Option<Precision>,
    seed: u64,
    real_model: bool,
    memory: MemoryPeak,
}

impl Benchmark for Embed {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        crate::heap::keep_freed_memory();
        let precision = Precision::parse_float(ctx.str_param("precision")?)
            .map_err(BenchmarkError::invalid("precision"))?;
        let device = warpt_models::device::open(ctx.str_param("device")?)?;
        self.memory = MemoryPeak::new(&device);
        let dir = ctx.str_param("model_dir")?;
        let (batch, seq_len) = (
            ctx.int_param("batch", 1)? as usize,
            ctx.int_param("seq_len", 1)? as usize,
        );
        let preset = preset_config(ctx.str_param("family")?, ctx.str_param("model")?)
            .map_err(BenchmarkError::invalid(NAME))?;
        if dir.is_empty() {
            // The weights as generated (f32) and in the engine's format, and
            // a batch's activations (hidden, MLP and one layer's scores).
            let params = parameter_count(&preset) as u64;
            let (h, i, heads) = (
                preset.hidden_size as u64,
                preset.intermediate_size as u64,
                preset.num_attention_heads as u64,
            );
            let tokens = (batch * seq_len) as u64;
            let activations = 4 * (tokens * (4 * h + i) + heads * tokens * seq_len as u64) * 4;
            let need = params * (4 + 4) + activations;
            let budget = warpt_models::device::memory_budget(&device);
            if !budget.fits(need) {
                return Err(BenchmarkError::Skipped(format!(
                    "the {} {} preset at batch {batch} needs about {:.1} GiB; {:.1} GiB is available \
                     (a smaller model or batch runs)",
                    ctx.str_param("family")?,
                    ctx.str_param("model")?,
                    warpt_models::sampling::gib(need),
                    warpt_models::sampling::gib(budget.available)
                )));
            }
        }
        let encoder = Encoder::load(dir, &preset, ctx.seed, precision.dtype(), &device)
            .map_err(BenchmarkError::Failed)?;
        // Each input: corpus lines joined until there are seq_len tokens, cut there.
        let lines = corpus::lines(ctx.seed ^ 2, batch * 64);
        let mut inputs = Vec::with_capacity(batch);
        let mut text = String::new();
        for line in lines {
            text.push_str(&line);
            text.push(' ');
            let ids = encoder
                .ids(&text, seq_len)
                .map_err(BenchmarkError::Failed)?;
            if ids.len() == seq_len {
                inputs.push(ids);
                text.clear();
                if inputs.len() == batch {
                    break;
                }
            }
        }
        if inputs.len() < batch {
            return Err(BenchmarkError::Failed(
                "the corpus ran out before the batch was full".into(),
            ));
        }
        device::settle(&device, || {
            encoder.embed(&inputs[..1]).map_err(|e| e.to_string())
        })?;
        self.memory.sample();
        self.encoder = Some(encoder);
        self.inputs = inputs;
        self.precision = Some(precision);
        self.seed = ctx.seed;
        self.real_model = !dir.is_empty();
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let encoder = warpt_harness::prepared(&self.encoder)?;
        let batch = self.inputs.len();
        let seq_len = self.inputs.first().map_or(0, Vec::len);
        let defs = [
            SeriesDef::rate("sentences_per_s", "sentences/s", batch as f64),
            SeriesDef::new("batch_latency_ms", "ms", false, &[], Convert::Time(1e3)),
        ];
        let memory = &self.memory;
        let m = time_each(measure, ctx, NAME, &defs, || {
            let embedded = encoder.embed(&self.inputs).map_err(|e| e.to_string());
            memory.sample();
            embedded
        })
        .map_err(|e| BenchmarkError::Failed(format!("embedding: {e}")))?;
        let model_name = if self.real_model {
            "model_dir"
        } else {
            ctx.str_param("model")?
        };
        let mut details: Vec<(String, ParamValue)> = vec![
            ("architecture".into(), ParamValue::from("bert")),
            (
                "family".into(),
                ParamValue::from(encoder.family.model_type()),
            ),
            ("engine".into(), ParamValue::from(encoder.engine_name())),
            ("isa".into(), ParamValue::from(encoder.isa())),
            ("weights".into(), ParamValue::Str(encoder.source.clone())),
            ("model".into(), ParamValue::from(model_name)),
            ("heap".into(), ParamValue::from(crate::heap::SETTING)),
            (
                "parameters".into(),
                ParamValue::Int(encoder.parameters as i64),
            ),
            (
                "model_bytes".into(),
                ParamValue::Int(encoder.model_bytes as i64),
            ),
            (
                "precision".into(),
                ParamValue::from(self.precision.map_or("", Precision::name)),
            ),
            (
                "hidden_size".into(),
                ParamValue::Int(encoder.config.hidden_size as i64),
            ),
            (
                "tokens_per_batch".into(),
                ParamValue::Int((batch * seq_len) as i64),
            ),
            (
                "pooling".into(),
                ParamValue::from("mean over the attention mask, then L2 normalisation"),
            ),
        ];
        details.extend(device::details(&encoder.device, &self.memory));
        Ok(Measured::new(m.metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let (Some(encoder), Some(precision)) = (self.encoder.as_ref(), self.precision) else {
            return Validation::fail("nothing was embedded");
        };
        match check(encoder, precision, &self.inputs, self.seed, self.real_model) {
            Ok(msg) => Validation::pass(msg),
            Err(msg) => Validation::fail(msg),
        }
    }
}

/// Largest difference of unit-norm embedding components from the f64
/// reference that counts as agreement.
fn tolerance(p: Precision) -> f64 {
    match p {
        Precision::F32 => 1e-4,
        Precision::F16 => 1e-2,
        // parse_float never yields the quantized formats; were it to, they
        // would be held to bf16's bound.
        Precision::Bf16 | Precision::Q8_0 | Precision::Q4_0 => 5e-2,
    }
}

fn check(
    encoder: &Encoder,
    precision: Precision,
    inputs: &[Vec<u32>],
    seed: u64,
    real: bool,
) -> Result<String, String> {
    let err = |e: candle_core::Error| format!("embedding for validation: {e}");
    let tol = tolerance(precision);
    // 1. The seeded MiniLM at this precision against the f64 reference, on a
    //    padded batch of two sentences of different lengths.
    // The measured encoder is that model when it is the seeded small BERT.
    let minilm = minilm_config();
    let c = &encoder.config;
    let same = !real
        && (
            c.vocab_size,
            c.hidden_size,
            c.num_hidden_layers,
            c.type_vocab_size,
        ) == (
            minilm.vocab_size,
            minilm.hidden_size,
            minilm.num_hidden_layers,
            minilm.type_vocab_size,
        );
    let loaded;
    let seeded = if same {
        encoder
    } else {
        loaded = Encoder::load("", &minilm, seed, precision.dtype(), &encoder.device)?;
        &loaded
    };
    let a: Vec<u32> = (0..12).map(|i| 5 + i * 97 % 8000).collect();
    let b: Vec<u32> = (0..7).map(|i| 11 + i * 313 % 8000).collect();
    let got = seeded.embed(&[a.clone(), b.clone()]).map_err(err)?;
    let config = minilm;
    let mut worst = 0.0f64;
    for (row, ids) in got.iter().zip([&a, &b]) {
        let want = reference_embedding(&config, seed, ids);
        for (g, w) in row.iter().zip(&want) {
            worst = worst.max((*g as f64 - w).abs());
        }
    }
    if worst > tol {
        return Err(format!(
            "seeded MiniLM in {}: embeddings differ from the f64 reference by {worst:.2e} (tolerance {tol:.0e})",
            precision.name()
        ));
    }
    // 2. Unit norms and 3. alone = in the batch, on the measured encoder.
    let batch = encoder.embed(inputs).map_err(err)?;
    let norm = |r: &[f32]| r.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    if let Some(n) = batch
        .iter()
        .map(|r| norm(r))
        .find(|n| (n - 1.0).abs() > 1e-2)
    {
        return Err(format!("an embedding has norm {n:.4}, not 1"));
    }
    let mut apart = 0.0f64;
    for (i, seq) in inputs.iter().enumerate().take(3) {
        let alone = encoder.embed(std::slice::from_ref(seq)).map_err(err)?;
        for (x, y) in alone[0].iter().zip(&batch[i]) {
            apart = apart.max((x - y).abs() as f64);
        }
    }
    if apart > tol {
        return Err(format!(
            "a sentence embedded alone differs from its row of the batch by {apart:.2e}"
        ));
    }
    let mut msg = format!(
        "seeded MiniLM in {}: a padded batch within {worst:.1e} of the f64 reference (tolerance {tol:.0e}); \
         unit norms; sentences alone within {apart:.1e} of their batch rows",
        precision.name()
    );
    if real {
        let pair: Vec<Vec<u32>> = KNOWN_PAIR
            .iter()
            .map(|s| encoder.ids(s, encoder.config.max_position_embeddings))
            .collect::<Result<_, _>>()?;
        let e = encoder.embed(&pair).map_err(err)?;
        msg.push_str(&format!(
            "; cosine({:?}, {:?}) = {:.4}",
            KNOWN_PAIR[0],
            KNOWN_PAIR[1],
            cosine(&e[0], &e[1])
        ));
    }
    Ok(msg)
}
