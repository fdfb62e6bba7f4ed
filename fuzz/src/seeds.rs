//! How the binary seeds of the corpus were made, with warpt's own writers:
//! `cargo test -p warpt-fuzz -- --ignored write_seeds` rewrites them.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::{Path, PathBuf};

use candle_core::Device;
use candle_core::quantized::GgmlDType;
use warpt_models::family::Family;
use warpt_models::model::{Preset, Shape, generate};
use warpt_models::{family_presets, gguf, hf};

fn corpus(target: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A Llama small enough for a seed: a few kilobytes of weights.
fn tiny(hidden: usize) -> Shape {
    Shape {
        vocab: 8,
        hidden,
        intermediate: 2 * hidden,
        layers: 1,
        heads: 2,
        kv_heads: 1,
        head_dim: hidden / 2,
        context: 16,
    }
}

fn write_gguf(path: &Path, shape: &Shape, qtype: GgmlDType) {
    let tensors = generate(shape, 1, &Device::Cpu).unwrap();
    gguf::save(path, shape, &tensors, qtype).unwrap();
}

#[test]
#[ignore = "rewrites the committed binary seeds"]
fn write_seeds() {
    let g = corpus("gguf_file");
    write_gguf(&g.join("llama-f32"), &tiny(8), GgmlDType::F32);
    write_gguf(&g.join("llama-q8_0"), &tiny(32), GgmlDType::Q8_0);

    // config.json, a NUL, model.safetensors.
    let tmp = std::env::temp_dir().join(format!("warpt-seeds-{}", std::process::id()));
    hf::save(&tmp, &tiny(8), 1).unwrap();
    let mut dir = std::fs::read(tmp.join("config.json")).unwrap();
    dir.push(0);
    dir.extend(std::fs::read(tmp.join("model.safetensors")).unwrap());
    std::fs::write(corpus("model_dir").join("llama"), dir).unwrap();
    std::fs::remove_dir_all(&tmp).unwrap();

    let c = corpus("hf_config");
    std::fs::write(
        c.join("llama"),
        hf::config_json(&tiny(8), "llama").to_string(),
    )
    .unwrap();
    for family in Family::LLM {
        let raw = family_presets::preset_config(family, Preset::Tiny);
        std::fs::write(c.join(family.model_type()), raw.to_string()).unwrap();
    }
}
