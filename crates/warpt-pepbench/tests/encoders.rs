//! Encoder families read from Hugging Face directories, against PyTorch
//! `transformers` on checkpoints it wrote with `save_pretrained`: a tiny
//! random BERT, RoBERTa and XLM-RoBERTa embedding a padded batch as
//! sentence-transformers does (both of warpt's engines: the packed f32
//! kernel, BERT on candle's operations in bf16 and f16), a ViT (its
//! features and a classifier's logits) and a Whisper (the log-mel front
//! end, then logits after a prompt); `embed`, `vision_infer` and
//! `speech_infer` then run each directory end to end. Runs where scripts/test made the
//! transformers venv (`WARPT_TEST_TRANSFORMERS_PYTHON`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::time::Duration;

use candle_core::{DType, Device};
use warpt_harness::InProcess;
use warpt_model::{ParamValue, RunStatus};
use warpt_pepbench::PEPBENCH;
use warpt_pepbench::embed::Encoder;

#[test]
fn each_encoder_family_equals_pytorch_transformers_on_its_own_checkpoint() {
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    // Ids from 3 up: none is a pad id (0 for BERT, 1 for RoBERTa).
    let batch: Vec<Vec<u32>> = vec![
        vec![5, 17, 200, 3, 99, 42, 7, 128, 64, 11, 250, 31],
        vec![8, 300, 77, 4000, 6],
        vec![19, 23],
    ];
    let families = ["bert", "roberta", "xlm-roberta"];
    let tmp = tempfile::tempdir().unwrap();
    let json = peer(
        &python,
        "hf_embed.py",
        &[
            families.join(","),
            tmp.path().display().to_string(),
            serde_json::to_string(&batch).unwrap(),
        ],
    );
    // embed needs a tokenizer beside the weights: warpt's own, whose ids
    // fit the 8192-token vocabulary.
    let (tokenizer, _) = warpt_pepbench::tokenize::load_or_train("", 5).unwrap();
    for family in families {
        let dir = tmp.path().join(family);
        tokenizer.save(dir.join("tokenizer.json"), false).unwrap();
        let want: Vec<Vec<f32>> = serde_json::from_value(json[family].clone()).unwrap();
        for (dtype, bound) in [(DType::F32, 1e-5), (DType::BF16, 5e-2), (DType::F16, 1e-2)] {
            let minilm = warpt_models::bert::minilm_config();
            let encoder =
                Encoder::load(dir.to_str().unwrap(), &minilm, 0, dtype, &Device::Cpu).unwrap();
            assert_eq!(encoder.family.model_type(), family);
            let got = encoder.embed(&batch).unwrap();
            assert_eq!(got.len(), want.len(), "{family} {dtype:?}");
            assert!(
                got.iter().flatten().all(|x| x.is_finite()),
                "{family} {dtype:?}: {:?}",
                &got[0][..4]
            );
            let worst = got
                .iter()
                .flatten()
                .zip(want.iter().flatten())
                .map(|(g, w)| (g - w).abs())
                .fold(0f32, f32::max);
            eprintln!(
                "{family} {dtype:?} ({}): embeddings within {worst:.1e} of transformers' (bound {bound:.0e})",
                encoder.engine_name()
            );
            assert!(worst < bound, "{family} {dtype:?}: {worst:e}");
        }
        // The whole benchmark on the directory.
        let r = run_embed(&dir);
        assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
        assert!(r.validation.as_ref().unwrap().passed);
        assert_eq!(r.details["family"], ParamValue::Str(family.into()));
    }
}

/// Runs the transformers peer `script` (in tests/peer) with `args`; its
/// JSON answer.
fn peer(python: &str, script: &str, args: &[String]) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peer")
        .join(script);
    let out = std::process::Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The largest difference of `got` from `want`, relative to the largest
/// magnitude in `want`.
fn relative_off(got: &[Vec<f32>], want: &[Vec<f32>]) -> f32 {
    let scale = want.iter().flatten().fold(0f32, |m, x| m.max(x.abs()));
    got.iter()
        .flatten()
        .zip(want.iter().flatten())
        .map(|(g, w)| (g - w).abs())
        .fold(0f32, f32::max)
        / scale
}

fn run_embed(dir: &Path) -> warpt_model::BenchmarkRunResult {
    run_dir("embed", dir, &["batch=2", "seq_len=16"])
}

fn run_dir(benchmark: &str, dir: &Path, params: &[&str]) -> warpt_model::BenchmarkRunResult {
    let mut params: Vec<String> = params.iter().map(|p| p.to_string()).collect();
    params.push(format!("model_dir={}", dir.display()));
    let mut suite = InProcess::new(PEPBENCH, Duration::from_millis(200));
    suite.options.seed = 5;
    suite.run(benchmark, &params).expect("valid selection")
}

#[test]
fn a_vit_equals_pytorch_transformers_on_its_own_checkpoint() {
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let json = peer(&python, "hf_vision.py", &[tmp.path().display().to_string()]);
    let pixels: Vec<f32> = serde_json::from_value(json["pixels"].clone()).unwrap();
    for name in ["vit", "vit-classifier"] {
        let dir = tmp.path().join(name);
        let want: Vec<Vec<f32>> = serde_json::from_value(json[name].clone()).unwrap();
        let config = warpt_models::vision::check_dir(dir.to_str().unwrap()).unwrap();
        for (dtype, bound) in [(DType::F32, 1e-5), (DType::BF16, 5e-2), (DType::F16, 1e-2)] {
            let tensors =
                candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)
                    .unwrap();
            let model =
                warpt_models::vision::Vit::load(tensors, config.clone(), dtype, &Device::Cpu)
                    .unwrap();
            assert_eq!(model.classifies(), name == "vit-classifier");
            let images = candle_core::Tensor::from_slice(&pixels, (3, 3, 32, 32), &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let got = model.forward(&images).unwrap().to_vec2::<f32>().unwrap();
            let worst = relative_off(&got, &want);
            assert!(
                got.iter().flatten().all(|x| x.is_finite()),
                "{name} {dtype:?}"
            );
            eprintln!(
                "{name} {dtype:?}: outputs within {worst:.1e} of transformers' largest (bound {bound:.0e})"
            );
            assert!(worst < bound, "{name} {dtype:?}: {worst:e}");
        }
        let r = run_dir("vision_infer", &dir, &["batch=2"]);
        assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
        assert!(r.validation.as_ref().unwrap().passed);
        assert_eq!(r.details["family"], ParamValue::Str("vit".into()));
    }
    // CLIP: image and text features (normalised) and the logits per image,
    // with each rule of where a text's features are read.
    let texts: Vec<Vec<u32>> = serde_json::from_value(json["texts"].clone()).unwrap();
    let ids = candle_core::Tensor::new(texts.clone(), &Device::Cpu).unwrap();
    for name in ["clip", "clip-eos2"] {
        let dir = tmp.path().join(name);
        let config = warpt_models::clip::check_dir(dir.to_str().unwrap()).unwrap();
        let want =
            |key: &str| -> Vec<Vec<f32>> { serde_json::from_value(json[key].clone()).unwrap() };
        for (dtype, bound) in [(DType::F32, 1e-5), (DType::BF16, 5e-2), (DType::F16, 1e-2)] {
            let tensors =
                candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)
                    .unwrap();
            let model =
                warpt_models::clip::Clip::load(tensors, config.clone(), dtype, &Device::Cpu)
                    .unwrap();
            let images = candle_core::Tensor::from_slice(&pixels, (3, 3, 32, 32), &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let image = model.image_features(&images).unwrap();
            let text = model.text_features(&ids).unwrap();
            let logits = model.logits_per_image(&image, &text).unwrap();
            let mut worst = 0f32;
            for (got, key) in [
                (&image, name.to_string()),
                (&text, format!("{name}:text")),
                (&logits, format!("{name}:logits")),
            ] {
                let got = got.to_vec2::<f32>().unwrap();
                let want = want(&key);
                assert_eq!(got.len(), want.len(), "{key}");
                worst = worst.max(relative_off(&got, &want));
            }
            eprintln!(
                "{name} {dtype:?}: features and logits within {worst:.1e} of transformers' largest (bound {bound:.0e})"
            );
            assert!(worst < bound, "{name} {dtype:?}: {worst:e}");
        }
        let r = run_dir("vision_infer", &dir, &["batch=2", "texts=3"]);
        assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
        assert!(r.validation.as_ref().unwrap().passed);
        assert_eq!(r.details["family"], ParamValue::Str("clip".into()));
    }
}

#[test]
fn a_whisper_equals_pytorch_transformers_on_its_own_checkpoint() {
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    use warpt_models::whisper;
    let tmp = tempfile::tempdir().unwrap();
    let audio = whisper::synthetic_audio(4.0, 9);
    let raw: Vec<u8> = audio.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(tmp.path().join("audio.f32"), raw).unwrap();
    let dir = tmp.path().join("whisper");
    let tokens: Vec<u32> = whisper::PROMPT
        .iter()
        .copied()
        .chain([400, 1200, 77])
        .collect();
    let mut args = vec![
        dir.display().to_string(),
        tmp.path().join("audio.f32").display().to_string(),
    ];
    args.extend(tokens.iter().map(u32::to_string));
    let json = peer(&python, "hf_speech.py", &args);
    let want_mel: Vec<f32> = serde_json::from_value(json["mel"].clone()).unwrap();
    let want_logits: Vec<f32> = serde_json::from_value(json["logits"].clone()).unwrap();
    let mut model = whisper::Speech::from_dir(dir.to_str().unwrap(), &Device::Cpu).unwrap();
    // The front end: warpt's mel of the same samples against the feature
    // extractor's (both clipped 8 below their maximum, scaled by 1/4).
    let mel = whisper::log_mel(model.config(), &audio, &whisper::mel_filters(80));
    assert_eq!(mel.len(), want_mel.len());
    let mel_off = mel
        .iter()
        .zip(&want_mel)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    eprintln!("whisper: log-mel within {mel_off:.1e} of transformers' feature extractor");
    assert!(mel_off < 1e-3, "{mel_off:e}");
    // The model, on transformers' own features.
    let features = model.encode(&want_mel).unwrap();
    let got = model
        .logits(&tokens, &features, true)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let scale = want_logits.iter().fold(0f32, |m, x| m.max(x.abs()));
    let off = got
        .iter()
        .zip(&want_logits)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max)
        / scale;
    // candle's Whisper uses GELU's tanh approximation (in both
    // convolutions and every MLP) where transformers uses the exact erf
    // form: up to 5e-4 apart per activation, 1.3e-4 of the largest logit
    // here. The bound says so rather than hiding it.
    eprintln!("whisper: logits within {off:.1e} of transformers' largest");
    assert!(off < 1e-3, "{off:e}");
    let r = run_dir("speech_infer", &dir, &["audio_seconds=2", "gen_tokens=3"]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert!(r.validation.as_ref().unwrap().passed);
    assert_eq!(r.details["family"], ParamValue::Str("whisper".into()));
}
