//! Encoder families read from Hugging Face directories: PyTorch
//! `transformers` writes a tiny random BERT, RoBERTa and XLM-RoBERTa with
//! `save_pretrained` and embeds a padded batch as sentence-transformers
//! does; warpt reads each directory and must give the same embeddings on
//! both of its engines (the packed f32 kernel, candle's BERT in bf16 and
//! f16), and `embed` runs each directory end to end. Runs where
//! scripts/test made the transformers venv
//! (`WARPT_TEST_TRANSFORMERS_PYTHON`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::time::Duration;

use candle_core::{DType, Device};
use warpt_harness::{NoProgress, Plan, Registry, RunOptions, Selection, run_plan};
use warpt_model::{ParamValue, RunStatus};
use warpt_pepbench::PepbenchSuite;
use warpt_pepbench::embed::Encoder;

#[test]
fn each_encoder_family_equals_pytorch_transformers_on_its_own_checkpoint() {
    let Ok(python) = std::env::var("WARPT_TEST_TRANSFORMERS_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_TRANSFORMERS_PYTHON is unset (scripts/test sets it)");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peer/hf_embed.py");
    // Ids from 3 up: none is a pad id (0 for BERT, 1 for RoBERTa).
    let batch: Vec<Vec<u32>> = vec![
        vec![5, 17, 200, 3, 99, 42, 7, 128, 64, 11, 250, 31],
        vec![8, 300, 77, 4000, 6],
        vec![19, 23],
    ];
    let families = ["bert", "roberta", "xlm-roberta"];
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&python)
        .arg(&script)
        .arg(families.join(","))
        .arg(tmp.path())
        .arg(serde_json::to_string(&batch).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // embed needs a tokenizer beside the weights: warpt's own, whose ids
    // fit the 8192-token vocabulary.
    let (tokenizer, _) = warpt_pepbench::tokenize::load_or_train("", 5).unwrap();
    for family in families {
        let dir = tmp.path().join(family);
        tokenizer.save(dir.join("tokenizer.json"), false).unwrap();
        let want: Vec<Vec<f32>> = serde_json::from_value(json[family].clone()).unwrap();
        for (dtype, bound) in [(DType::F32, 1e-5), (DType::BF16, 5e-2), (DType::F16, 1e-2)] {
            let encoder = Encoder::load(dir.to_str().unwrap(), 0, dtype, &Device::Cpu).unwrap();
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

fn run_embed(dir: &Path) -> warpt_model::BenchmarkRunResult {
    let mut registry = Registry::new();
    registry.register(Box::new(PepbenchSuite));
    let selection = Selection {
        suite: Some("pepbench".into()),
        benchmarks: vec!["embed".into()],
        params: vec![
            format!("model_dir={}", dir.display()),
            "batch=2".into(),
            "seq_len=16".into(),
        ],
        ..Selection::default()
    };
    let plan = Plan::resolve(&registry, &selection).expect("valid selection");
    let mut options = RunOptions::new("test", "test");
    options.duration = Some(Duration::from_millis(200));
    options.burnin = Duration::ZERO;
    options.seed = 5;
    options.in_process = true;
    run_plan(&registry, &plan, &options, &NoProgress)
        .benchmarks
        .remove(0)
}
