//! The decoder engine shared by `llm_infer` and `end_to_end_infer`: a
//! candle-transformers Llama (or another decoder family's model) with a KV
//! cache, prefill then greedy decode of a batch of equal-length prompts,
//! timed the way MLPerf defines TTFT and TPOT.

use std::sync::Mutex;
use std::time::Instant;

use candle_core::quantized::GgmlDType;
use candle_core::{D, DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::{gemma, gemma2, llama, mistral, phi3, qwen2, qwen3};

use crate::family::Family;
use crate::hf::DirConfig;
use crate::qllama::{self, QLlama};

use crate::model::{self, Shape};

/// Numeric formats a model can run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// IEEE binary32.
    F32,
    /// bfloat16 weights and activations (attention softmax in f32, as candle does).
    Bf16,
    /// IEEE binary16.
    F16,
    /// GGML's 8-bit blocks (32 weights sharing one f16 scale), activations
    /// quantized likewise for the dot products; norms stay f32.
    Q8_0,
    /// GGML's 4-bit blocks (32 weights sharing one f16 scale).
    Q4_0,
}

impl Precision {
    /// The precision called `name`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "f16" => Ok(Precision::F16),
            "q8_0" => Ok(Precision::Q8_0),
            "q4_0" => Ok(Precision::Q4_0),
            other => Err(format!(
                "parameter 'precision': '{other}' is not one of f32, bf16, f16, q8_0, q4_0"
            )),
        }
    }

    /// The unquantized precision called `name` (what the BERT encoder runs in).
    pub fn parse_float(name: &str) -> Result<Self, String> {
        match Self::parse(name)? {
            p if p.quantized().is_some() => Err(format!(
                "parameter 'precision': '{name}' is not one of f32, bf16, f16 (the encoder runs unquantized)"
            )),
            p => Ok(p),
        }
    }

    /// Bytes one weight takes in this format (GGML blocks: their scale
    /// shared by 32 weights).
    pub fn bytes_per_weight(self) -> f64 {
        match self {
            Precision::F32 => 4.0,
            Precision::Bf16 | Precision::F16 => 2.0,
            Precision::Q8_0 => 34.0 / 32.0,
            Precision::Q4_0 => 18.0 / 32.0,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
            Precision::Q8_0 => "q8_0",
            Precision::Q4_0 => "q4_0",
        }
    }

    /// candle's dtype for the activations and the KV cache (f32 for the
    /// quantized formats).
    pub fn dtype(self) -> DType {
        match self {
            Precision::F32 | Precision::Q8_0 | Precision::Q4_0 => DType::F32,
            Precision::Bf16 => DType::BF16,
            Precision::F16 => DType::F16,
        }
    }

    /// The GGML type the weights are held in when the model runs on the
    /// GGUF engine ([`QLlama`]): the quantized formats, and f32, bf16 and
    /// f16, whose products run on [`crate::packed`] (bf16 and f16: the
    /// weights held so, the activations rounded per product, sums in f32,
    /// as llama.cpp multiplies them; norms and attention in f32).
    pub fn gguf_type(self) -> Option<GgmlDType> {
        match self {
            Precision::F32 => Some(GgmlDType::F32),
            Precision::Bf16 => Some(GgmlDType::BF16),
            Precision::F16 => Some(GgmlDType::F16),
            other => other.quantized(),
        }
    }

    /// [`Self::gguf_type`] on `device`: on a GPU only the quantized
    /// formats take the GGUF engine (its products on candle's GGML
    /// kernels there); f32, bf16 and f16 run on candle-transformers'
    /// Llama.
    pub fn engine_gguf_type(self, device: &Device) -> Option<GgmlDType> {
        match device.is_cpu() {
            true => self.gguf_type(),
            false => self.quantized(),
        }
    }

    /// The GGML block type of the weights, for the quantized formats.
    pub fn quantized(self) -> Option<GgmlDType> {
        match self {
            Precision::Q8_0 => Some(GgmlDType::Q8_0),
            Precision::Q4_0 => Some(GgmlDType::Q4_0),
            _ => None,
        }
    }

    /// Largest difference from the f64 reference's logits that still counts
    /// as agreement, relative to the largest reference logit (the rounding
    /// of the format, compounded over the layers, with a margin). For the
    /// quantized formats the reference runs on the same dequantized weights,
    /// so this bounds the 8-bit quantization of the activations.
    pub fn logit_tolerance(self) -> f64 {
        match self {
            Precision::F32 => 1e-4,
            Precision::Bf16 => 0.05,
            Precision::F16 => 0.01,
            Precision::Q8_0 | Precision::Q4_0 => 0.05,
        }
    }
}

/// The ways a decoder runs: candle-transformers' `llama` (f32, bf16 and
/// f16 on a GPU), warpt's batched GGUF engine ([`QLlama`]: on the CPU f32,
/// bf16, f16 and the quantized blocks; on a GPU the quantized blocks),
/// another family's candle-transformers model, which keeps its KV cache
/// inside (so one generation holds it at a time), or T5, which encodes the
/// prompt and decodes from its start token.
enum Engine {
    Dense {
        model: llama::Llama,
        config: llama::Config,
    },
    Quantized(QLlama),
    Family(Mutex<FamilyModel>),
    T5(crate::t5::Model),
}

/// A candle-transformers decoder of a family other than Llama.
enum FamilyModel {
    Mistral(mistral::Model),
    Qwen2(qwen2::ModelForCausalLM),
    Qwen3(qwen3::ModelForCausalLM),
    Phi3(phi3::Model),
    Gemma(gemma::Model),
    Gemma2(gemma2::Model),
    Gpt2(crate::gpt2::Model),
}

impl FamilyModel {
    fn clear(&mut self) {
        match self {
            FamilyModel::Mistral(m) => m.clear_kv_cache(),
            FamilyModel::Qwen2(m) => m.clear_kv_cache(),
            FamilyModel::Qwen3(m) => m.clear_kv_cache(),
            FamilyModel::Phi3(m) => m.clear_kv_cache(),
            FamilyModel::Gemma(m) => m.clear_kv_cache(),
            FamilyModel::Gemma2(m) => m.clear_kv_cache(),
            FamilyModel::Gpt2(m) => m.clear_kv_cache(),
        }
    }

    /// Logits after the last of `x`'s tokens, `(batch, vocab)`.
    fn forward(&mut self, x: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        let logits = match self {
            FamilyModel::Mistral(m) => m.forward(x, pos)?,
            FamilyModel::Qwen2(m) => m.forward(x, pos)?,
            FamilyModel::Qwen3(m) => m.forward(x, pos)?,
            FamilyModel::Phi3(m) => m.forward(x, pos)?,
            FamilyModel::Gemma(m) => m.forward(x, pos)?,
            FamilyModel::Gemma2(m) => m.forward(x, pos)?,
            FamilyModel::Gpt2(m) => m.forward(x, pos)?,
        };
        // All return `(batch, 1, vocab)`, the last position's, in the
        // model's dtype.
        logits.squeeze(1)?.to_dtype(DType::F32)
    }
}

/// A loaded model ready to generate.
pub struct Decoder {
    engine: Engine,
    /// The model's shape.
    pub shape: Shape,
    dtype: DType,
    device: Device,
    /// Parameters, counted from the tensors.
    pub parameters: usize,
    /// Its family (`details.family`).
    pub family: Family,
    /// Bytes of the weights in the run's precision.
    pub model_bytes: usize,
}

/// One batch's outcome.
#[derive(Debug, Clone)]
pub struct Generation {
    /// Generated tokens, one row per request.
    pub tokens: Vec<Vec<u32>>,
    /// Logits after each request's prompt (the first token's distribution),
    /// `(batch, vocab)`: kept as a tensor so that copying them out is left
    /// to validation, outside the timed region.
    pub first_logits: Tensor,
    /// Logits the last token was chosen from (a decode step's, when more
    /// than one token was generated), `(batch, vocab)`.
    pub last_logits: Tensor,
    /// Seconds from submission to the first token of every request (the
    /// prefill of the whole batch, plus the first argmax).
    pub ttft_s: f64,
    /// Seconds from submission to the last token.
    pub total_s: f64,
}

impl Decoder {
    /// The model of `shape` with the weights `seed` generates, in `precision`.
    pub fn generated(
        shape: Shape,
        seed: u64,
        precision: Precision,
        device: &Device,
    ) -> candle_core::Result<Self> {
        let tensors = model::generate(&shape, seed, device)?;
        if let Some(qtype) = precision.engine_gguf_type(device) {
            return Self::quantized(shape, &tensors, qtype, device)
                .map_err(candle_core::Error::msg);
        }
        let (parameters, model_bytes) = model::count(&tensors, precision.dtype());
        let vb = VarBuilder::from_tensors(tensors, precision.dtype(), device);
        let config = shape.candle_config();
        let model = llama::Llama::load(vb, &config)?;
        Ok(Decoder {
            engine: Engine::Dense { model, config },
            shape,
            dtype: precision.dtype(),
            device: device.clone(),
            parameters,
            family: Family::Llama,
            model_bytes,
        })
    }

    /// Hugging Face–named `tensors` on the GGUF engine in `qtype` (through
    /// an in-memory GGUF, exactly what `model_file` would load): the f32
    /// precision's model (`F32` keeps the values) and the quantized ones.
    pub fn quantized(
        shape: Shape,
        tensors: &std::collections::HashMap<String, Tensor>,
        qtype: GgmlDType,
        device: &Device,
    ) -> Result<Self, String> {
        let mut buf = std::io::Cursor::new(Vec::new());
        crate::gguf::write(&mut buf, &shape, tensors, qtype)?;
        buf.set_position(0);
        let (model, info) = crate::gguf::load(&mut buf, device)?;
        Ok(Self::from_quantized(model, shape, &info, device))
    }

    fn from_quantized(
        model: QLlama,
        shape: Shape,
        info: &crate::gguf::Info,
        device: &Device,
    ) -> Self {
        Decoder {
            engine: Engine::Quantized(model),
            shape,
            dtype: DType::F32,
            device: device.clone(),
            parameters: info.parameters,
            family: Family::Llama,
            model_bytes: info.model_bytes,
        }
    }

    /// The quantized model in the GGUF file at `path`, and the storage
    /// type of most of its weights.
    pub fn from_gguf(path: &str, device: &Device) -> Result<(Self, String), String> {
        let (model, info) = crate::gguf::load_file(path, device)?;
        Ok((
            Self::from_quantized(model, info.shape, &info, device),
            info.precision.clone(),
        ))
    }

    /// The model in the Hugging Face directory `dir`, in `precision`.
    pub fn from_dir(dir: &str, precision: Precision, device: &Device) -> Result<Self, String> {
        let (shape, config) = crate::hf::check_dir(dir)?;
        let config = match config {
            DirConfig::Llama(c) => c,
            other => return Self::family_from_dir(dir, shape, other, precision, device),
        };
        let tensors = crate::hf::load_weights(dir, device)?;
        // candle's loader panics on a missing layer tensor, and the GGUF
        // engine would name it by its GGUF name: check names first.
        for (name, _) in shape.tensors() {
            let tied = name == "lm_head.weight" && config.tie_word_embeddings;
            if !(tensors.contains_key(&name) || tied) {
                return Err(format!("{dir}: the weights have no tensor {name}"));
            }
        }
        if let Some(qtype) = precision.engine_gguf_type(device) {
            return Self::quantized(shape, &tensors, qtype, device)
                .map_err(|e| format!("quantizing the model in {dir}: {e}"));
        }
        let (parameters, model_bytes) = model::count(&tensors, precision.dtype());
        let vb = VarBuilder::from_tensors(tensors, precision.dtype(), device);
        let model = llama::Llama::load(vb, &config)
            .map_err(|e| format!("building the model from {dir}: {e}"))?;
        Ok(Decoder {
            engine: Engine::Dense { model, config },
            shape,
            dtype: precision.dtype(),
            device: device.clone(),
            parameters,
            family: Family::Llama,
            model_bytes,
        })
    }

    /// A decoder of another family than Llama from `dir`: dense candle
    /// weights in `precision` (f32, bf16, f16).
    fn family_from_dir(
        dir: &str,
        shape: Shape,
        config: DirConfig,
        precision: Precision,
        device: &Device,
    ) -> Result<Self, String> {
        let family = config.family();
        if precision.quantized().is_some() {
            return Err(format!(
                "parameter 'precision': {} runs on the GGUF engine, which runs Llama; the {} model in {dir} runs in f32, bf16 or f16",
                precision.name(),
                family.model_type()
            ));
        }
        let tensors = crate::hf::load_weights(dir, device)?;
        let (parameters, model_bytes) = model::count(&tensors, precision.dtype());
        let vb = VarBuilder::from_tensors(tensors, precision.dtype(), device);
        let engine = family_engine(&config, vb)
            .map_err(|e| format!("building the {} model from {dir}: {e}", family.model_type()))?;
        Ok(Decoder {
            engine,
            shape,
            dtype: precision.dtype(),
            device: device.clone(),
            parameters,
            family,
            model_bytes,
        })
    }

    /// `family`'s `preset` (see [`crate::family_presets`]) with weights
    /// from `seed`, in `precision`: built exactly as a directory of that
    /// family and size would be.
    pub fn seeded(
        family: Family,
        preset: crate::model::Preset,
        seed: u64,
        precision: Precision,
        device: &Device,
    ) -> Result<Self, String> {
        if family == Family::Llama {
            return Self::generated(preset.shape(), seed, precision, device)
                .map_err(|e| format!("building the model: {e}"));
        }
        let raw = crate::family_presets::preset_config(family, preset);
        let (shape, config) = crate::hf::parse_config(raw)
            .map_err(|e| format!("the {} {} preset{e}", family.model_type(), preset.name()))?;
        if precision.quantized().is_some() {
            return Err(format!(
                "parameter 'precision': {} runs on the GGUF engine, which runs Llama; {} runs in f32, bf16 or f16",
                precision.name(),
                family.model_type()
            ));
        }
        let (vb, made) = crate::seeded::var_builder(seed, precision.dtype(), device);
        let engine = family_engine(&config, vb).map_err(|e| {
            format!(
                "building the {} {} preset: {e}",
                family.model_type(),
                preset.name()
            )
        })?;
        let parameters = made.load(std::sync::atomic::Ordering::Relaxed);
        Ok(Decoder {
            engine,
            shape,
            dtype: precision.dtype(),
            device: device.clone(),
            parameters,
            family,
            model_bytes: parameters * precision.dtype().size_in_bytes(),
        })
    }

    /// The device it runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// What runs the model's products (`details.engine`): `warpt-gemm` on
    /// the GGUF engine, `candle` on candle-transformers' models.
    pub fn engine(&self) -> &'static str {
        match &self.engine {
            Engine::Quantized(_) if self.device.is_cpu() => crate::packed::ENGINE,
            Engine::Quantized(_) => "candle's GGML block kernels",
            _ => "candle",
        }
    }

    /// The instruction set of warpt's kernels the products run on
    /// (`details.isa`), on the GGUF engine.
    pub fn isa(&self) -> Option<&'static str> {
        match &self.engine {
            Engine::Quantized(m) => m.isa(),
            _ => None,
        }
    }

    /// How attention runs (`details.attention`).
    pub fn attention(&self) -> String {
        match &self.engine {
            Engine::Quantized(model) if self.device.is_cpu() => {
                let prefill = if model.prefill_attends_in_bf16() {
                    "a prefill's in bf16 on the AMX tiles (16 queries at a time against the keys up to them, the causal mask a window)"
                } else {
                    "blocked (flash-style): online softmax, the causal mask never built"
                };
                let decode = match (model.prefill_attends_in_bf16(), model.decodes_from_f16()) {
                    (_, true) => "; decode steps blocked over an f16 copy of the cache",
                    (true, false) => "; decode steps blocked in f32",
                    (false, false) => "",
                };
                format!("{prefill}{decode}")
            }
            Engine::Quantized(_) => {
                "candle operations over a device KV cache (scores and causal mask materialized)"
                    .into()
            }
            _ => "candle-transformers' (scores and causal mask materialized)".into(),
        }
    }

    /// Bytes the KV cache holds for `batch` sequences of `tokens` positions
    /// (for T5, the input's positions in the cross-attention's and the
    /// output's in the decoder's).
    pub fn kv_cache_bytes(&self, batch: usize, tokens: usize) -> usize {
        let s = &self.shape;
        // A cache with an f16 copy for the decode steps holds both.
        let per_value = match &self.engine {
            Engine::Quantized(model) if model.decodes_from_f16() => {
                DType::F32.size_in_bytes() + DType::F16.size_in_bytes()
            }
            _ => self.dtype.size_in_bytes(),
        };
        2 * s.layers * batch * s.kv_heads * s.head_dim * tokens * per_value
    }

    /// A forward function with a fresh KV cache: token ids `(batch, n)` at
    /// a position to the logits after the last of them.
    #[allow(clippy::type_complexity)]
    fn session(
        &self,
    ) -> candle_core::Result<Box<dyn FnMut(&Tensor, usize) -> candle_core::Result<Tensor> + '_>>
    {
        Ok(match &self.engine {
            Engine::Dense { model, config } => {
                let mut cache = llama::Cache::new(true, self.dtype, config, &self.device)?;
                Box::new(move |x, pos| model.forward(x, pos, &mut cache))
            }
            Engine::Quantized(model) => {
                let mut cache = qllama::Cache::new(model);
                Box::new(move |x, pos| model.forward(x, pos, &mut cache))
            }
            Engine::Family(model) => {
                let mut model = model
                    .lock()
                    .map_err(|_| candle_core::Error::msg("an earlier generation panicked"))?;
                model.clear();
                Box::new(move |x, pos| model.forward(x, pos))
            }
            Engine::T5(model) => {
                let mut state = None;
                Box::new(move |x, pos| match (&mut state, pos) {
                    (Some(s), p) if p > 0 => model.decode(s, x),
                    _ => {
                        // The prompt: encode it, then the first decoder
                        // step from the start token.
                        let mut s = model.start(&model.encode(x)?)?;
                        let start = Tensor::full(model.start_token(), (x.dim(0)?, 1), x.device())?;
                        let logits = model.decode(&mut s, &start)?;
                        state = Some(s);
                        Ok(logits)
                    }
                })
            }
        })
    }

    /// The logits the last of `generated` (what [`Decoder::generate`] gave
    /// for `prompt`) was chosen from, recomputed in one pass without a KV
    /// cache: the prompt and every generated token but the last prefilled
    /// together, or for T5 the prompt encoded and the start token and those
    /// tokens decoded together. `(1, vocab)`.
    pub fn uncached_last_logits(
        &self,
        prompt: &[u32],
        generated: &[u32],
    ) -> candle_core::Result<Tensor> {
        let before_last = &generated[..generated.len().saturating_sub(1)];
        match &self.engine {
            Engine::T5(model) => {
                let ids = Tensor::new(prompt, &self.device)?.unsqueeze(0)?;
                let mut state = model.start(&model.encode(&ids)?)?;
                let mut tokens = vec![model.start_token()];
                tokens.extend_from_slice(before_last);
                let tokens = Tensor::new(tokens.as_slice(), &self.device)?.unsqueeze(0)?;
                model.decode(&mut state, &tokens)
            }
            _ => {
                let mut whole = prompt.to_vec();
                whole.extend_from_slice(before_last);
                Ok(self.generate(&[whole], 1)?.first_logits)
            }
        }
    }

    /// Prefills `prompts` (all the same length) as one batch, then decodes
    /// `n_gen` tokens greedily for each with a KV cache.
    pub fn generate(&self, prompts: &[Vec<u32>], n_gen: usize) -> candle_core::Result<Generation> {
        let batch = prompts.len();
        let len = prompts.first().map_or(0, Vec::len);
        if batch == 0 || len == 0 || n_gen == 0 || prompts.iter().any(|p| p.len() != len) {
            candle_core::bail!("a batch needs equal, non-empty prompts and at least one token");
        }
        let start = Instant::now();
        let mut forward = self.session()?;
        let flat: Vec<u32> = prompts.iter().flatten().copied().collect();
        let input = Tensor::from_vec(flat, (batch, len), &self.device)?;
        let logits = forward(&input, 0)?;
        let mut next = logits.argmax(D::Minus1)?.to_vec1::<u32>()?;
        let ttft_s = start.elapsed().as_secs_f64();
        let mut tokens: Vec<Vec<u32>> = next.iter().map(|&t| vec![t]).collect();
        let mut last = logits.clone();
        for step in 1..n_gen {
            let input = Tensor::from_vec(next.clone(), (batch, 1), &self.device)?;
            last = forward(&input, len + step - 1)?;
            next = last.argmax(D::Minus1)?.to_vec1::<u32>()?;
            for (row, &t) in tokens.iter_mut().zip(&next) {
                row.push(t);
            }
        }
        Ok(Generation {
            tokens,
            first_logits: logits,
            last_logits: last,
            ttft_s,
            total_s: start.elapsed().as_secs_f64(),
        })
    }
}

/// The engine of a family other than Llama, on the weights `vb` holds.
fn family_engine(config: &DirConfig, vb: VarBuilder) -> candle_core::Result<Engine> {
    let model = match config {
        DirConfig::T5(c) => return Ok(Engine::T5(crate::t5::Model::new(c, vb)?)),
        DirConfig::Mistral(c) => FamilyModel::Mistral(mistral::Model::new(c, vb)?),
        DirConfig::Qwen2(c) => FamilyModel::Qwen2(qwen2::ModelForCausalLM::new(c, vb)?),
        DirConfig::Qwen3(c) => FamilyModel::Qwen3(qwen3::ModelForCausalLM::new(c, vb)?),
        DirConfig::Phi3(c) => FamilyModel::Phi3(phi3::Model::new(c, vb)?),
        DirConfig::Gemma(c) => FamilyModel::Gemma(gemma::Model::new(false, c, vb)?),
        DirConfig::Gemma2(c) => FamilyModel::Gemma2(gemma2::Model::new(false, c, vb)?),
        DirConfig::Gpt2(c) => FamilyModel::Gpt2(crate::gpt2::Model::new(c, vb)?),
        DirConfig::Llama(_) => candle_core::bail!("a Llama model takes the Llama path"),
    };
    Ok(Engine::Family(Mutex::new(model)))
}

/// `batch` prompts of `len` token ids drawn from the seed, avoiding the
/// first three ids (special tokens in the in-process tokenizer).
pub fn random_prompts(seed: u64, batch: usize, len: usize, vocab: usize) -> Vec<Vec<u32>> {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7072_6f6d_7074);
    (0..batch)
        .map(|_| {
            (0..len)
                .map(|_| 3 + (rng.next_u64() % (vocab as u64 - 3)) as u32)
                .collect()
        })
        .collect()
}
