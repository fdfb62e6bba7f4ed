//! Decoder families read from Hugging Face directories: a Mistral and a
//! Qwen2 directory holding a Llama's weights (no sliding window, zero
//! biases: the same function) give the Llama's logits and tokens, and a
//! `model_type` llm_infer does not run is refused saying which do.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use candle_core::{Device, Tensor};
use warpt_models::family::Family;
use warpt_models::hf::config_json;
use warpt_models::llm::{Decoder, Precision, random_prompts};
use warpt_models::model::Preset;

fn write_config(dir: &Path, config: serde_json::Value) {
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
}

/// The largest logit difference relative to the largest reference logit.
fn off(got: &Tensor, want: &Tensor) -> f32 {
    let (g, w) = (
        got.to_vec2::<f32>().unwrap(),
        want.to_vec2::<f32>().unwrap(),
    );
    let scale = w[0].iter().fold(0f32, |m, x| m.max(x.abs()));
    let worst = g[0]
        .iter()
        .zip(&w[0])
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    worst / scale
}

#[test]
fn mistral_and_qwen2_directories_equal_the_llama_on_its_weights() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Preset::Tiny.shape();
    let llama = tmp.path().join("llama");
    warpt_models::hf::save(&llama, &shape, 7).unwrap();
    let weights = llama.join("model.safetensors");

    let mistral = tmp.path().join("mistral");
    std::fs::create_dir(&mistral).unwrap();
    std::fs::copy(&weights, mistral.join("model.safetensors")).unwrap();
    let mut config = config_json(&shape, "mistral");
    config["sliding_window"] = serde_json::Value::Null;
    write_config(&mistral, config);

    let qwen2 = tmp.path().join("qwen2");
    std::fs::create_dir(&qwen2).unwrap();
    let mut tensors = candle_core::safetensors::load(&weights, &Device::Cpu).unwrap();
    let kv = shape.kv_heads * shape.head_dim;
    for i in 0..shape.layers {
        for (proj, n) in [("q", shape.hidden), ("k", kv), ("v", kv)] {
            let bias = Tensor::zeros(n, candle_core::DType::F32, &Device::Cpu).unwrap();
            tensors.insert(format!("model.layers.{i}.self_attn.{proj}_proj.bias"), bias);
        }
    }
    candle_core::safetensors::save(&tensors, qwen2.join("model.safetensors")).unwrap();
    let mut config = config_json(&shape, "qwen2");
    config["sliding_window"] = shape.context.into();
    config["max_window_layers"] = shape.layers.into();
    config["use_sliding_window"] = false.into();
    write_config(&qwen2, config);

    let prompts = random_prompts(3, 2, 12, shape.vocab);
    let load = |dir: &Path| Decoder::from_dir(dir.to_str().unwrap(), Precision::F32, &Device::Cpu);
    let want = load(&llama).unwrap().generate(&prompts, 6).unwrap();
    for (dir, family) in [(&mistral, Family::Mistral), (&qwen2, Family::Qwen2)] {
        let decoder = load(dir).unwrap();
        assert_eq!(decoder.family, family);
        assert_eq!(decoder.shape.describe(), shape.describe());
        let got = decoder.generate(&prompts, 6).unwrap();
        let first = off(&got.first_logits, &want.first_logits);
        let last = off(&got.last_logits, &want.last_logits);
        assert!(
            first < 1e-4 && last < 1e-4,
            "{family:?}: {first:e} {last:e}"
        );
        assert_eq!(got.tokens, want.tokens, "{family:?}");
        // A second generation starts from a fresh cache.
        assert_eq!(decoder.generate(&prompts, 6).unwrap().tokens, want.tokens);
        // The GGUF engine's formats are Llama's alone.
        let q8 = Decoder::from_dir(dir.to_str().unwrap(), Precision::Q8_0, &Device::Cpu);
        let err = q8.err().unwrap();
        assert!(err.contains("runs in f32, bf16 or f16"), "{err}");
    }
}

#[test]
fn a_family_llm_infer_does_not_run_is_refused_naming_those_it_does() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Preset::Tiny.shape();
    warpt_models::hf::save(tmp.path(), &shape, 7).unwrap();
    let dir = tmp.path().to_str().unwrap();
    for (model_type, want) in [
        (
            "whisper",
            "'whisper' is a speech model (pepbench/speech_infer runs it)",
        ),
        ("rwkv", "'rwkv' is not a family warpt knows"),
    ] {
        write_config(tmp.path(), config_json(&shape, model_type));
        let err = warpt_models::hf::check_dir(dir).err().unwrap();
        assert!(err.starts_with("parameter 'model_dir'"), "{err}");
        assert!(err.contains(want), "{err}");
        assert!(
            err.ends_with(
                "llm_infer runs llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gpt2, t5"
            ),
            "{err}"
        );
    }
    // A known family without the fields it needs.
    let mut config = config_json(&shape, "qwen2");
    config.as_object_mut().unwrap().remove("num_hidden_layers");
    write_config(tmp.path(), config);
    let err = warpt_models::hf::check_dir(dir).err().unwrap();
    assert!(err.contains("is not a qwen2 config"), "{err}");
}

/// PyTorch `transformers` writes a tiny random model of each family with
/// `save_pretrained` (the quirks each exercises are listed in
/// `peer/hf_logits.py`) and prints its logits; warpt reads the directory
/// and must give the same logits after every prompt length it runs, in f32
/// within 1e-4 of the largest and in bf16 and f16 within those precisions'
/// tolerances. Runs where scripts/test made the transformers venv
/// (`WARPT_TEST_TRANSFORMERS_PYTHON`).
#[test]
fn each_family_equals_pytorch_transformers_on_its_own_checkpoint() {
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peer/hf_logits.py");
    let prompt: Vec<u32> = vec![5, 17, 200, 3, 99, 42, 7, 128, 64, 11, 250, 31];
    let decoders = [
        "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gpt2",
    ];
    let t5s = ["t5", "t5-gated"];
    let families: Vec<&str> = decoders.iter().chain(&t5s).copied().collect();
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&python)
        .arg(&script)
        .arg(families.join(","))
        .arg(tmp.path())
        .args(prompt.iter().map(u32::to_string))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for dir in t5s {
        let want: Vec<Vec<f32>> = serde_json::from_value(json[dir].clone()).unwrap();
        let drift = |p: &str| json[format!("{dir}:{p}")].as_f64().unwrap() as f32;
        let drifts = [drift("bf16"), drift("f16")];
        t5_equals_transformers(&tmp.path().join(dir), &prompt, &want, drifts);
    }
    for family in decoders {
        let dir = tmp.path().join(family);
        let want: Vec<Vec<f32>> = serde_json::from_value(json[family].clone()).unwrap();
        for precision in [Precision::F32, Precision::Bf16, Precision::F16] {
            let decoder =
                Decoder::from_dir(dir.to_str().unwrap(), precision, &Device::Cpu).unwrap();
            assert_eq!(decoder.family.model_type(), family);
            // A window of 8 positions is as far as warpt runs a model with one.
            let context = if matches!(family, "mistral" | "gemma2") {
                8
            } else {
                128
            };
            assert_eq!(decoder.shape.context, context, "{family}");
            let mut worst = 0f32;
            for len in 1..=prompt.len().min(context) {
                let got = decoder.generate(&[prompt[..len].to_vec()], 1).unwrap();
                let row = &want[len - 1];
                let want = Tensor::from_slice(row, (1, row.len()), &Device::Cpu).unwrap();
                worst = worst.max(off(&got.first_logits, &want));
            }
            let tol = match precision {
                Precision::F32 => 1e-4,
                p => p.logit_tolerance() as f32,
            };
            eprintln!(
                "{family} {}: logits within {worst:.1e} of transformers' largest (bound {tol:.0e})",
                precision.name()
            );
            assert!(worst < tol, "{family} {}: {worst:e}", precision.name());
        }
    }
}

/// The T5 directory `dir` in each precision against transformers' logits
/// `want` (row i: after the start token and `prompt[..i]`, the prompt being
/// the encoder's input): decoded one token at a time through the caches,
/// all at once without them (validation's path), and the first step as
/// `llm_infer` generates it. In bf16 and f16 the bound is the precision's
/// tolerance or twice PyTorch's own drift in it (`drifts`), whichever is
/// larger: T5's unscaled attention scores amplify half-precision rounding.
fn t5_equals_transformers(dir: &Path, prompt: &[u32], want: &[Vec<f32>], drifts: [f32; 2]) {
    use warpt_models::hf::{DirConfig, check_dir, load_weights};
    let name = dir.to_str().unwrap();
    let cpu = Device::Cpu;
    let row = |i: usize| Tensor::from_slice(&want[i], (1, want[i].len()), &cpu).unwrap();
    for precision in [Precision::F32, Precision::Bf16, Precision::F16] {
        let (_, DirConfig::T5(config)) = check_dir(name).unwrap() else {
            panic!("{name} is not read as T5");
        };
        let vb = candle_nn::VarBuilder::from_tensors(
            load_weights(name, &cpu).unwrap(),
            precision.dtype(),
            &cpu,
        );
        let model = warpt_models::t5::Model::new(&config, vb).unwrap();
        let ids = Tensor::new(prompt, &cpu).unwrap().unsqueeze(0).unwrap();
        let mut state = model.start(&model.encode(&ids).unwrap()).unwrap();
        let mut worst = 0f32;
        for i in 0..prompt.len() {
            let token = if i == 0 {
                model.start_token()
            } else {
                prompt[i - 1]
            };
            let step = Tensor::new(&[[token]], &cpu).unwrap();
            let got = model.decode(&mut state, &step).unwrap();
            worst = worst.max(off(&got, &row(i)));
        }
        let decoder = Decoder::from_dir(name, precision, &cpu).unwrap();
        assert_eq!(decoder.family, Family::T5);
        let at_once = decoder.uncached_last_logits(prompt, prompt).unwrap();
        worst = worst.max(off(&at_once, &row(prompt.len() - 1)));
        let first = decoder.generate(&[prompt.to_vec()], 3).unwrap();
        worst = worst.max(off(&first.first_logits, &row(0)));
        let tol = match precision {
            Precision::F32 => 1e-4,
            Precision::Bf16 => (Precision::Bf16.logit_tolerance() as f32).max(2.0 * drifts[0]),
            p => (p.logit_tolerance() as f32).max(2.0 * drifts[1]),
        };
        eprintln!(
            "{name} {}: logits within {worst:.1e} of transformers' largest (bound {tol:.0e})",
            precision.name()
        );
        assert!(worst < tol, "{name} {}: {worst:e}", precision.name());
    }
}

#[test]
fn a_missing_tensor_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Preset::Tiny.shape();
    warpt_models::hf::save(tmp.path(), &shape, 7).unwrap();
    let weights = tmp.path().join("model.safetensors");
    let mut tensors = candle_core::safetensors::load(&weights, &Device::Cpu).unwrap();
    tensors.remove("model.layers.1.mlp.up_proj.weight");
    candle_core::safetensors::save(&tensors, &weights).unwrap();
    for model_type in ["llama", "mistral", "qwen3", "phi3", "gemma"] {
        let mut config = config_json(&shape, model_type);
        config["head_dim"] = shape.head_dim.into();
        config["attention_bias"] = false.into();
        write_config(tmp.path(), config);
        let err = Decoder::from_dir(tmp.path().to_str().unwrap(), Precision::F32, &Device::Cpu)
            .err()
            .unwrap();
        // The first tensor the family's loader misses: Qwen3 has q/k norms,
        // Phi-3 fuses the projections; the rest miss the one removed.
        let want = match model_type {
            "qwen3" => "tensor model.layers.0.self_attn.q_norm.weight",
            "phi3" => "tensor model.layers.0.self_attn.qkv_proj.weight",
            _ => "tensor model.layers.1.mlp.up_proj.weight",
        };
        assert!(err.contains(want), "{model_type}: {err}");
    }
}
