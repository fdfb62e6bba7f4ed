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
    weight_files(Path::new(dir)).map_err(|e| format!("parameter 'model_dir': {e}"))?;
    check_weights(&parsed.0, &weight_shapes(Path::new(dir))?)
        .map_err(|why| format!("parameter 'model_dir': {}: {why}", path.display()))?;
    Ok(parsed)
}

/// The largest safetensors header read (its JSON names and shapes every
/// tensor; a real one is kilobytes to a few megabytes).
const MAX_HEADER: u64 = 100 << 20;

/// Every tensor's shape in `dir`'s weight files, from their headers alone
/// (a little-endian u64 length, then that much JSON), each checked: the
/// header no larger than [`MAX_HEADER`] and inside the file, every
/// tensor's data offsets inside the file.
fn weight_shapes(dir: &Path) -> Result<HashMap<String, Vec<usize>>, String> {
    use std::io::Read;
    let mut shapes = HashMap::new();
    for file in weight_files(dir).map_err(|e| format!("parameter 'model_dir': {e}"))? {
        let shown = file.display().to_string();
        let bad = |why: String| format!("parameter 'model_dir': {shown}: {why}");
        let mut f = std::fs::File::open(&file).map_err(|e| bad(e.to_string()))?;
        let len = f.metadata().map_err(|e| bad(e.to_string()))?.len();
        let mut head = [0u8; 8];
        f.read_exact(&mut head)
            .map_err(|e| bad(format!("not a safetensors file ({e})")))?;
        let n = u64::from_le_bytes(head);
        if n > MAX_HEADER || n > len.saturating_sub(8) {
            return Err(bad(format!(
                "its header claims {n} bytes (the file has {len}, at most {MAX_HEADER} are read)"
            )));
        }
        let mut text = vec![0u8; n as usize];
        f.read_exact(&mut text).map_err(|e| bad(e.to_string()))?;
        let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&text)
            .map_err(|e| bad(format!("its header is not JSON ({e})")))?;
        let data = len - 8 - n;
        for (name, t) in header.into_iter().filter(|(k, _)| k != "__metadata__") {
            let dims: Option<Vec<usize>> = t["shape"].as_array().map(|a| {
                a.iter()
                    .filter_map(|d| d.as_u64().map(|d| d as usize))
                    .collect()
            });
            let offsets: Option<Vec<u64>> = t["data_offsets"]
                .as_array()
                .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect());
            match (dims, offsets.as_deref()) {
                (Some(dims), Some(&[start, end])) if start <= end && end <= data => {
                    if dims
                        .iter()
                        .try_fold(1usize, |n, &d| n.checked_mul(d))
                        .is_none()
                    {
                        return Err(bad(format!("tensor {name}: dimensions {dims:?} overflow")));
                    }
                    shapes.insert(name, dims);
                }
                _ => {
                    return Err(bad(format!(
                        "tensor {name}: its shape or data offsets are missing or outside the file"
                    )));
                }
            }
        }
    }
    Ok(shapes)
}

/// The configuration's sizes held to what the weights hold: no more
/// layers than numbered blocks, a vocabulary some tensor has a dimension
/// of, a context no longer than [`crate::model::MAX_CONTEXT`] (the rotary
/// tables and masks are sized from it before any weight is read).
fn check_weights(shape: &Shape, tensors: &HashMap<String, Vec<usize>>) -> Result<(), String> {
    let held: BTreeSet<usize> = tensors
        .keys()
        .flat_map(|name| {
            let parts: Vec<&str> = name.split('.').collect();
            parts
                .windows(2)
                .filter(|w| matches!(w[0], "layers" | "h" | "block"))
                .filter_map(|w| w[1].parse().ok())
                .collect::<Vec<usize>>()
        })
        .collect();
    if shape.layers > held.len() {
        return Err(format!(
            "the configuration has {} layers but the weights hold {}",
            shape.layers,
            held.len()
        ));
    }
    if !tensors.values().any(|dims| dims.contains(&shape.vocab)) {
        return Err(format!(
            "vocab_size {} is no dimension of any tensor in the weights",
            shape.vocab
        ));
    }
    if shape.context == 0 || shape.context > crate::model::MAX_CONTEXT {
        return Err(format!(
            "the context of {} positions is outside 1 to {}",
            shape.context,
            crate::model::MAX_CONTEXT
        ));
    }
    Ok(())
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
        // Shards sit beside the index: a name with a directory in it
        // (`../../etc/...`) would read a file the caller chose anywhere.
        if let Some(f) = files
            .iter()
            .find(|f| f.is_empty() || f.contains(['/', '\\']) || *f == ".." || *f == ".")
        {
            return Err(format!(
                "{}: the shard '{f}' is not a file name beside the index",
                index.display()
            ));
        }
        return Ok(files.into_iter().map(|f| dir.join(f)).collect());
    }
    let single = dir.join("model.safetensors");
    if single.is_file() {
        Ok(vec![single])
    } else {
        Err(format!(
            "{} has neither model.safetensors nor model.safetensors.index.json",
            dir.display()
        ))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tiny_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), &crate::model::TEST_SHAPE, 1).unwrap();
        dir
    }

    fn with_config(dir: &Path, key: &str, value: serde_json::Value) {
        let path = dir.join("config.json");
        let mut c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        c[key] = value;
        std::fs::write(path, c.to_string()).unwrap();
    }

    #[test]
    fn hostile_directories_are_refused_by_name() {
        let honest = tiny_dir();
        let d = honest.path().to_str().unwrap();
        assert_eq!(check_dir(d).unwrap().0.layers, 2);
        for (key, value, says) in [
            (
                "num_hidden_layers",
                serde_json::json!(1_000_000),
                "weights hold 2",
            ),
            (
                "max_position_embeddings",
                serde_json::json!(1u64 << 30),
                "context of",
            ),
            ("vocab_size", serde_json::json!(65), "vocab_size 65"),
        ] {
            let dir = tiny_dir();
            with_config(dir.path(), key, value);
            let e = check_dir(dir.path().to_str().unwrap()).unwrap_err();
            assert!(e.contains(says), "{key}: {e}");
        }
        // A header that claims more than the file holds.
        let dir = tiny_dir();
        let file = dir.path().join("model.safetensors");
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&file, bytes).unwrap();
        let e = check_dir(dir.path().to_str().unwrap()).unwrap_err();
        assert!(e.contains("its header claims"), "{e}");
        // An index naming a shard outside the directory.
        let dir = tiny_dir();
        std::fs::write(
            dir.path().join("model.safetensors.index.json"),
            r#"{"weight_map": {"x": "../../etc/passwd"}}"#,
        )
        .unwrap();
        let e = check_dir(dir.path().to_str().unwrap()).unwrap_err();
        assert!(e.contains("is not a file name beside the index"), "{e}");
    }
}
