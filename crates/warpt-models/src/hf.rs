//! Hugging Face model directories for the LLM benchmarks: config.json
//! (its `model_type` names the family), model.safetensors or shards listed
//! in model.safetensors.index.json. Read for `model_dir`, and written from
//! the seeded weights so a peer (PyTorch + transformers) can run the very
//! same model.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use candle_core::{Device, Tensor};
use candle_transformers::models::{gemma, gemma2, llama, mistral, phi3, qwen2, qwen3};

use crate::family::Family;
use crate::gpt2;
use crate::model::{self, Shape};
use crate::t5;

/// A model directory's architecture, as its config.json describes it.
#[derive(Debug, Clone)]
pub enum DirConfig {
    /// `model_type` llama.
    Llama(llama::Config),
    /// `model_type` mistral.
    Mistral(mistral::Config),
    /// `model_type` qwen2.
    Qwen2(qwen2::Config),
    /// `model_type` qwen3.
    Qwen3(qwen3::Config),
    /// `model_type` phi3.
    Phi3(phi3::Config),
    /// `model_type` gemma.
    Gemma(gemma::Config),
    /// `model_type` gemma2.
    Gemma2(gemma2::Config),
    /// `model_type` gpt2.
    Gpt2(gpt2::Config),
    /// `model_type` t5 (an encoder-decoder).
    T5(t5::Config),
}

impl DirConfig {
    /// Its family.
    pub fn family(&self) -> Family {
        match self {
            DirConfig::Llama(_) => Family::Llama,
            DirConfig::Mistral(_) => Family::Mistral,
            DirConfig::Qwen2(_) => Family::Qwen2,
            DirConfig::Qwen3(_) => Family::Qwen3,
            DirConfig::Phi3(_) => Family::Phi3,
            DirConfig::Gemma(_) => Family::Gemma,
            DirConfig::Gemma2(_) => Family::Gemma2,
            DirConfig::Gpt2(_) => Family::Gpt2,
            DirConfig::T5(_) => Family::T5,
        }
    }
}

/// The parsed config.json of the model directory `dir` and its path (for
/// messages); an error names the `model_dir` parameter.
pub fn read_config(dir: &str) -> Result<(serde_json::Value, std::path::PathBuf), String> {
    let path = Path::new(dir).join("config.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("parameter 'model_dir': reading {}: {e}", path.display()))?;
    let raw = serde_json::from_str(&text)
        .map_err(|e| format!("parameter 'model_dir': {} is not JSON: {e}", path.display()))?;
    Ok((raw, path))
}

/// The single-file weights (`model.safetensors`) of a model directory,
/// or an error naming the `model_dir` parameter.
pub fn single_weights(dir: &str) -> Result<std::path::PathBuf, String> {
    let path = Path::new(dir).join("model.safetensors");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "parameter 'model_dir': {dir} has no model.safetensors"
        ))
    }
}

/// The configuration `raw` of the directory `dir` (read from `path` by
/// [`read_config`]) as a `model_type` model's that `benchmark` runs, with
/// its `model.safetensors` beside it; errors name the `model_dir` parameter.
pub fn single_file_config<T: serde::de::DeserializeOwned>(
    dir: &str,
    raw: serde_json::Value,
    path: &Path,
    model_type: &str,
    benchmark: &str,
) -> Result<T, String> {
    let says = raw["model_type"].as_str().unwrap_or("");
    if says != model_type {
        return Err(format!(
            "parameter 'model_dir': {} says model_type '{says}'; {benchmark} runs {model_type}",
            path.display()
        ));
    }
    single_weights(dir)?;
    serde_json::from_value(raw).map_err(|e| {
        format!(
            "parameter 'model_dir': {} is not a {model_type} config: {e}",
            path.display()
        )
    })
}

/// The configuration in `dir`, checked: a readable config.json whose
/// `model_type` is a family `llm_infer` runs (else an error saying which
/// do), with the fields that family needs, and weights beside it.
pub fn check_dir(dir: &str) -> Result<(Shape, DirConfig), String> {
    let (raw, path) = read_config(dir)?;
    let model_type = raw["model_type"].as_str().unwrap_or("").to_string();
    if let Some(why) = Family::llm_refusal(&model_type) {
        return Err(format!("parameter 'model_dir': {}: {why}", path.display()));
    }
    let parsed = parse_config(raw)
        .map_err(|why| format!("parameter 'model_dir': {}{why}", path.display()))?;
    if weight_files(Path::new(dir)).is_err() {
        return Err(format!(
            "parameter 'model_dir': {dir} has neither model.safetensors nor model.safetensors.index.json"
        ));
    }
    Ok(parsed)
}

/// A generating family's config.json (`raw`) as the shape and the
/// configuration warpt builds it from; an error (to follow the file's
/// name) says what is missing or not supported.
pub fn parse_config(mut raw: serde_json::Value) -> Result<(Shape, DirConfig), String> {
    let model_type = raw["model_type"].as_str().unwrap_or("").to_string();
    let model_type = model_type.as_str();
    if let Some(why) = Family::llm_refusal(model_type) {
        return Err(format!(": {why}"));
    }
    let family = Family::from_model_type(model_type).unwrap_or(Family::Llama);
    normalize(&mut raw, family).map_err(|why| format!(": {why}"))?;
    let bad = |e: serde_json::Error| format!(" is not a {model_type} config: {e}");
    let mut config = match family {
        Family::Mistral => DirConfig::Mistral(serde_json::from_value(raw).map_err(bad)?),
        Family::Qwen2 => DirConfig::Qwen2(serde_json::from_value(raw).map_err(bad)?),
        Family::Qwen3 => DirConfig::Qwen3(serde_json::from_value(raw).map_err(bad)?),
        Family::Phi3 => DirConfig::Phi3(serde_json::from_value(raw).map_err(bad)?),
        Family::Gemma => DirConfig::Gemma(serde_json::from_value(raw).map_err(bad)?),
        Family::Gemma2 => DirConfig::Gemma2(serde_json::from_value(raw).map_err(bad)?),
        Family::Gpt2 => {
            let c: gpt2::Config = serde_json::from_value(raw).map_err(bad)?;
            if let Some(why) = c.unsupported() {
                return Err(format!(": {why}"));
            }
            DirConfig::Gpt2(c)
        }
        Family::T5 => {
            let c: t5::Config = serde_json::from_value(raw).map_err(bad)?;
            if let Some(why) = c.unsupported() {
                return Err(format!(": {why}"));
            }
            DirConfig::T5(c)
        }
        _ => {
            let cfg: llama::LlamaConfig = serde_json::from_value(raw).map_err(bad)?;
            DirConfig::Llama(cfg.into_config(false))
        }
    };
    // The configs name the shape's fields alike; the head dimension is
    // `hidden / heads` unless the family sets it apart.
    macro_rules! shape_of {
        ($c:expr, $head_dim:expr) => {
            Shape {
                vocab: $c.vocab_size,
                hidden: $c.hidden_size,
                intermediate: $c.intermediate_size,
                layers: $c.num_hidden_layers,
                heads: $c.num_attention_heads,
                kv_heads: $c.num_key_value_heads,
                head_dim: $head_dim,
                context: $c.max_position_embeddings,
            }
        };
        ($c:expr) => {
            shape_of!($c, $c.hidden_size / $c.num_attention_heads.max(1))
        };
    }
    let mut shape = match &config {
        DirConfig::Llama(c) => shape_of!(c),
        DirConfig::Mistral(c) => shape_of!(
            c,
            c.head_dim
                .unwrap_or(c.hidden_size / c.num_attention_heads.max(1))
        ),
        DirConfig::Qwen2(c) => shape_of!(c),
        DirConfig::Qwen3(c) => shape_of!(c, c.head_dim),
        DirConfig::Phi3(c) => shape_of!(c),
        DirConfig::Gemma(c) => shape_of!(c, c.head_dim),
        DirConfig::Gemma2(c) => shape_of!(c, c.head_dim),
        DirConfig::Gpt2(c) => Shape {
            vocab: c.vocab_size,
            hidden: c.n_embd,
            intermediate: c.inner(),
            layers: c.n_layer,
            heads: c.n_head,
            kv_heads: c.n_head,
            head_dim: c.n_embd / c.n_head,
            context: c.n_positions,
        },
        // Generation runs the decoder; its cache holds keys and values of
        // every head, over the input (cross-attention) and the output.
        DirConfig::T5(c) => Shape {
            vocab: c.vocab_size,
            hidden: c.d_model,
            intermediate: c.d_ff,
            layers: c.decoder_layers(),
            heads: c.num_heads,
            kv_heads: c.num_heads,
            head_dim: c.d_kv,
            context: c.context(),
        },
    };
    if shape.heads == 0 || shape.kv_heads == 0 || !shape.heads.is_multiple_of(shape.kv_heads) {
        return Err(format!(
            ": {} attention heads are not a multiple of {} key/value heads",
            shape.heads, shape.kv_heads
        ));
    }
    // A sliding window of `w` lets a position see the `w` positions up to
    // itself (transformers); candle's mistral and qwen2 let it see one more
    // when prefilling and every earlier one when decoding, and candle's
    // gemma2 slides every layer where transformers slides every other one.
    // Within `w` positions no window binds, so warpt runs such a model up
    // to `w` positions (its context here) with candle's window out of the
    // way.
    match &mut config {
        DirConfig::Mistral(c) => {
            if let Some(w) = c.sliding_window.take() {
                shape.context = shape.context.min(w);
            }
        }
        DirConfig::Qwen2(c) => {
            if c.use_sliding_window {
                shape.context = shape.context.min(c.sliding_window);
            }
            c.sliding_window = c.max_position_embeddings;
        }
        DirConfig::Qwen3(c) => {
            if c.use_sliding_window
                && let Some(w) = c.sliding_window
            {
                shape.context = shape.context.min(w);
            }
            c.use_sliding_window = false;
            c.sliding_window = None;
        }
        DirConfig::Gemma2(c) => {
            if let Some(w) = c.sliding_window.take() {
                shape.context = shape.context.min(w);
            }
        }
        DirConfig::Llama(_)
        | DirConfig::Phi3(_)
        | DirConfig::Gemma(_)
        | DirConfig::Gpt2(_)
        | DirConfig::T5(_) => {}
    }
    Ok((shape, config))
}

/// Brings `raw` (a config.json of `family`) to the fields candle's configs
/// read, or says why its model would not compute what transformers
/// computes:
/// - transformers 5 writes `rope_parameters: {rope_theta, rope_type}`
///   where 4.x wrote `rope_theta` (and `rope_scaling`) at the top: a
///   missing `rope_theta` is taken from there (a Llama 3 checkpoint would
///   otherwise run on candle's default 10000);
/// - a scaled RoPE (`rope_scaling`: YaRN, longrope, ...) is refused for
///   every family but Llama: candle's other decoders ignore or implement
///   it unchecked against transformers;
/// - Qwen2 and Qwen3 slide their attention window only where
///   `use_sliding_window` is true, and then from layer `max_window_layers`
///   on, while candle's Qwen2 slides every layer's (and its Qwen3 none): a
///   window no layer uses becomes the context length; one only some layers
///   use is refused;
/// - `tie_word_embeddings` is left out of a config when it equals
///   transformers' default, which is the family's: put back (T5 reads its
///   absence apart from `false`: it scales the output then).
fn normalize(raw: &mut serde_json::Value, family: Family) -> Result<(), String> {
    let Some(obj) = raw.as_object_mut() else {
        return Err("is not a JSON object".into());
    };
    if family != Family::Llama
        && let Some(scaling) = obj.get("rope_scaling").filter(|v| !v.is_null())
    {
        let kind = scaling
            .get("rope_type")
            .or_else(|| scaling.get("type"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("unknown");
        if kind != "default" {
            return Err(format!(
                "rope_scaling '{kind}' is not supported for {} yet",
                family.model_type()
            ));
        }
        obj.remove("rope_scaling");
    }
    if !obj.contains_key("rope_theta")
        && let Some(params) = obj.get("rope_parameters").cloned()
    {
        let kind = params["rope_type"].as_str().unwrap_or("default");
        if kind != "default" {
            if family != Family::Llama {
                return Err(format!(
                    "rope_type '{kind}' is not supported for {} yet",
                    family.model_type()
                ));
            }
            obj.entry("rope_scaling").or_insert(params.clone());
        }
        if let Some(theta) = params.get("rope_theta") {
            obj.insert("rope_theta".into(), theta.clone());
        }
    }
    if matches!(family, Family::Qwen2 | Family::Qwen3) {
        let int = |k: &str| obj.get(k).and_then(serde_json::Value::as_u64);
        let layers = int("num_hidden_layers").unwrap_or(0);
        let from = int("max_window_layers").unwrap_or(0);
        let slides = obj.get("use_sliding_window") == Some(&serde_json::Value::Bool(true));
        if !slides || from >= layers {
            let context = obj
                .get("max_position_embeddings")
                .cloned()
                .unwrap_or_default();
            obj.insert("sliding_window".into(), context);
            obj.insert("use_sliding_window".into(), false.into());
        } else if from > 0 {
            return Err(format!(
                "a sliding window from layer {from} of {layers} on is not supported yet (candle's {} slides every layer or none)",
                family.model_type()
            ));
        }
        obj.entry("max_window_layers").or_insert(0.into());
    }
    if family == Family::T5 {
        return Ok(());
    }
    let tied = matches!(family, Family::Gemma | Family::Gemma2);
    obj.entry("tie_word_embeddings").or_insert(tied.into());
    Ok(())
}

/// The safetensors files holding the weights: the shards an index names,
/// or model.safetensors.
fn weight_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        let text = std::fs::read_to_string(&index)
            .map_err(|e| format!("reading {}: {e}", index.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not JSON: {e}", index.display()))?;
        let files: BTreeSet<String> = v["weight_map"]
            .as_object()
            .ok_or_else(|| format!("{} has no weight_map", index.display()))?
            .values()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        return Ok(files.into_iter().map(|f| dir.join(f)).collect());
    }
    let single = dir.join("model.safetensors");
    if single.is_file() {
        Ok(vec![single])
    } else {
        Err(format!("{} has no weights", dir.display()))
    }
}

/// Every tensor in `dir`'s weight files, on `device`.
pub fn load_weights(dir: &str, device: &Device) -> Result<HashMap<String, Tensor>, String> {
    let mut all = HashMap::new();
    for file in weight_files(Path::new(dir))? {
        let part = candle_core::safetensors::load(&file, device)
            .map_err(|e| format!("loading {}: {e}", file.display()))?;
        all.extend(part);
    }
    Ok(all)
}

/// The config.json of a Llama-shaped `model_type` model of `shape`, as
/// [`save`] writes it (warpt's RMS epsilon and rope theta, f32).
pub fn config_json(shape: &Shape, model_type: &str) -> serde_json::Value {
    serde_json::json!({
        "model_type": model_type,
        "hidden_size": shape.hidden,
        "intermediate_size": shape.intermediate,
        "vocab_size": shape.vocab,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "max_position_embeddings": shape.context,
        "rms_norm_eps": model::RMS_EPS,
        "rope_theta": model::ROPE_THETA,
        "hidden_act": "silu",
        "tie_word_embeddings": false,
        "torch_dtype": "float32",
    })
}

/// Writes the seeded model of `shape` as a Hugging Face directory
/// (config.json and model.safetensors, f32).
pub fn save(dir: &Path, shape: &Shape, seed: u64) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut config = config_json(shape, "llama");
    config["architectures"] = serde_json::json!(["LlamaForCausalLM"]);
    let text = serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("config.json"), text)
        .map_err(|e| format!("writing config.json: {e}"))?;
    let tensors = model::generate(shape, seed, &Device::Cpu).map_err(|e| e.to_string())?;
    candle_core::safetensors::save(&tensors, dir.join("model.safetensors"))
        .map_err(|e| format!("writing model.safetensors: {e}"))
}
