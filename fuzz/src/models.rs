//! Model files: GGUF, Hugging Face directories (config.json and
//! safetensors weights), tokenizer.json. A file that passes the checks is
//! loaded on the CPU and, for a decoder, generates two tokens: a header
//! that lies about its tensors must fail there with an error, not panic.

use candle_core::{DType, Device};
use warpt_models::family::Family;
use warpt_models::llm::{Decoder, Precision};
use warpt_models::{clip, gguf, hf, vision, whisper};

use crate::scratch;

/// A GGUF file, as `llm_infer --param model_file=` reads it: the header
/// checked at plan time, then the model loaded and run.
pub fn gguf_file(data: &[u8]) {
    let path = scratch::file("model.gguf", data);
    let path = path.to_str().expect("the scratch path is UTF-8");
    if gguf::check_file(path).is_err() {
        return;
    }
    if let Ok((model, _)) = Decoder::from_gguf(path, &Device::Cpu) {
        let _ = model.generate(&[vec![0]], 2);
    }
}

/// A model directory: config.json (before the first NUL byte) and
/// model.safetensors (after it), as `model_dir=` reads them, for whichever
/// family the config names: the config checked, the weights loaded, a
/// decoder run for two tokens.
pub fn model_dir(data: &[u8]) {
    let (config, weights) = crate::split_nul(data);
    scratch::remove("model/model.safetensors.index.json");
    scratch::file("model/config.json", config);
    let path = scratch::file("model/model.safetensors", weights);
    let dir = path
        .parent()
        .and_then(|d| d.to_str())
        .expect("the scratch path is UTF-8");
    let model_type = serde_json::from_slice::<serde_json::Value>(config)
        .ok()
        .and_then(|v| v["model_type"].as_str().map(str::to_string))
        .unwrap_or_default();
    let cpu = Device::Cpu;
    let tensors = || candle_core::safetensors::load(&path, &cpu).ok();
    match model_type.as_str() {
        "vit" => {
            if let (Ok(c), Some(t)) = (vision::check_dir(dir), tensors()) {
                let _ = vision::Vit::load(t, c, DType::F32, &cpu);
            }
        }
        "clip" => {
            if let (Ok(c), Some(t)) = (clip::check_dir(dir), tensors()) {
                let _ = clip::Clip::load(t, c, DType::F32, &cpu);
            }
        }
        "whisper" => {
            let _ = whisper::Speech::from_dir(dir, &cpu);
        }
        other if Family::llm_refusal(other).is_none() => {
            if let Ok(model) = Decoder::from_dir(dir, Precision::F32, &cpu) {
                let _ = model.generate(&[vec![0]], 2);
            }
        }
        _ => {
            let _ = hf::check_dir(dir);
        }
    }
}

/// A decoder family's config.json on its own, through the checks and the
/// per-family normalisation every `model_dir` config goes through.
pub fn hf_config(data: &[u8]) {
    let Ok(raw) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok((shape, _)) = hf::parse_config(raw) {
        // What the parse promises the model builders: sizes that multiply.
        assert!(
            shape.heads > 0 && shape.kv_heads > 0 && shape.head_dim > 0,
            "{shape:?}"
        );
        assert!(shape.heads.is_multiple_of(shape.kv_heads), "{shape:?}");
    }
}

/// A tokenizer.json (`tokenizer=`, or beside an embedding model), loaded
/// and used on a line of text.
pub fn tokenizer_json(data: &[u8]) {
    crate::let_caught_panics_unwind();
    let path = scratch::file("tokenizer.json", data);
    if let Ok(t) = warpt_pepbench::tokenize::load_file(&path) {
        let _ = t.encode("Benchmarks measure; people decide.", true);
    }
}
