//! MLPerf's accuracy mode scored, on small synthetic labelled sets: ResNet-50's
//! top-1 against a val_map.txt, BERT's SQuAD F1, and the quality target (99%
//! of the reference figure) passing and failing the run.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;

use std::path::Path;

use common::{first_result, metric};
use serde_json::Value;

/// Runs one mlperf benchmark's accuracy run: exit status, result, stderr.
fn accuracy(bench: &str, params: &[String]) -> (Option<i32>, Value, String) {
    let _turn = common::one_at_a_time();
    let mut all = vec!["accuracy=true".to_string()];
    all.extend_from_slice(params);
    first_result(
        &[
            "--suite",
            "mlperf",
            "--benchmark",
            bench,
            "--duration",
            "0.5",
            "--burnin-seconds",
            "0",
        ],
        &all,
    )
}

/// Four small PPM images, each a different pattern.
fn images(dir: &Path) {
    for i in 0..4u8 {
        let (w, h) = (36, 36);
        let mut ppm = format!("P6\n{w} {h}\n255\n").into_bytes();
        ppm.extend((0..w * h * 3).map(|p| ((p * (i as usize + 3)) % 251) as u8));
        std::fs::write(dir.join(format!("img{i}.ppm")), ppm).unwrap();
    }
}

/// (library index, class) of each response in `mlperf_log_accuracy.json`.
fn classes(log_dir: &Path) -> Vec<(usize, i32)> {
    let log: Value = serde_json::from_str(
        &std::fs::read_to_string(log_dir.join("mlperf_log_accuracy.json")).unwrap(),
    )
    .unwrap();
    log.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let hex = r["data"].as_str().unwrap();
            let bytes: Vec<u8> = (0..4)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            (
                r["qsl_idx"].as_u64().unwrap() as usize,
                i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            )
        })
        .collect()
}

#[test]
fn resnet50_top1_is_scored_against_labels_and_held_to_the_quality_target() {
    let t = tempfile::tempdir().unwrap();
    let (data, logs) = (t.path().join("images"), t.path().join("logs"));
    std::fs::create_dir_all(&data).unwrap();
    images(&data);
    let common = |extra: &[&str]| {
        let mut p = vec![
            "image_size=32".to_string(),
            "batch=2".to_string(),
            format!("dataset={}", data.display()),
            format!("log_dir={}", logs.display()),
        ];
        p.extend(extra.iter().map(|s| s.to_string()));
        p
    };
    // Unlabelled: the answers are logged, nothing is scored.
    let (code, r, err) = accuracy("resnet50_infer", &common(&[]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["name"] != "top1_accuracy")
    );
    let answered = classes(&logs);
    assert_eq!(answered.len(), 4);
    // Labels agreeing with three of the four answers (images sorted by
    // name: img0..img3), the fourth one class off: top-1 75%.
    let mut lines = String::new();
    for (index, class) in &answered {
        let label = if *index == 3 {
            (class + 1) % 1000
        } else {
            *class
        };
        lines.push_str(&format!("img{index}.ppm {label}\n"));
    }
    std::fs::write(data.join("val_map.txt"), lines).unwrap();
    let (code, r, err) = accuracy("resnet50_infer", &common(&["reference_accuracy=75.5"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(metric(&r, "top1_accuracy"), 75.0);
    assert_eq!(r["details"]["accuracy_scored"], 4);
    let v = r["validation"]["message"].as_str().unwrap();
    assert!(
        v.contains("quality target 74.745") && v.ends_with("reached"),
        "{v}"
    );
    // A reference the run cannot reach 99% of fails it.
    let (code, r, _) = accuracy("resnet50_infer", &common(&["reference_accuracy=76.46"]));
    assert_eq!(code, Some(1));
    assert_eq!(r["validation"]["passed"], false);
    let v = r["validation"]["message"].as_str().unwrap();
    assert!(v.contains("top-1 % 75.000") && v.ends_with("missed"), "{v}");
    // A labels file with a bad line is named.
    let bad = t.path().join("bad.txt");
    std::fs::write(&bad, "img0.ppm cat\n").unwrap();
    let (_, r, err) = accuracy(
        "resnet50_infer",
        &common(&[&format!("labels={}", bad.display())]),
    );
    let why = format!("{r} {err}");
    assert!(why.contains("bad.txt line 1"), "{why}");
    // Labels or a reference outside an accuracy run are refused up front.
    let out = common::warpt()
        .args("benchmark run --suite mlperf --benchmark resnet50_infer --no-store".split(' '))
        .args(["--param", "reference_accuracy=76.46"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("accuracy=true"));
}

#[test]
fn bert_f1_is_scored_on_a_squad_file_and_held_to_the_quality_target() {
    let t = tempfile::tempdir().unwrap();
    // One-word contexts: whatever the seeded model's logits, the only span
    // is the word, so the F1 is known: right, wrong, right after SQuAD's
    // normalisation (case, punctuation): 2 of 3.
    let squad = serde_json::json!({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": "Paris", "qas": [{"id": "1", "question": "What is the capital of France?",
            "answers": [{"text": "Paris", "answer_start": 0}]}]},
        {"context": "Rome", "qas": [{"id": "2", "question": "Where is the Duomo of Milan?",
            "answers": [{"text": "Milan", "answer_start": 0}]}]},
        {"context": "Lyon", "qas": [{"id": "3", "question": "Which city?",
            "answers": [{"text": "lyon.", "answer_start": 0}, {"text": "Marseille", "answer_start": 0}]}]}
    ]}]});
    let file = t.path().join("dev-v1.1.json");
    std::fs::write(&file, squad.to_string()).unwrap();
    let params = |reference: &str| {
        vec![
            "seq=32".to_string(),
            "batch=2".to_string(),
            format!("dataset={}", file.display()),
            format!("log_dir={}", t.path().join("logs").display()),
            format!("reference_accuracy={reference}"),
        ]
    };
    let (code, r, err) = accuracy("bert_infer", &params("67"));
    assert_eq!(code, Some(0), "{err}");
    let f1 = metric(&r, "f1");
    assert!((f1 - 200.0 / 3.0).abs() < 1e-9, "{f1}");
    assert_eq!(r["details"]["accuracy_scored"], 3);
    assert!(
        r["details"]["sut"]
            .as_str()
            .unwrap()
            .contains("3 SQuAD questions"),
        "{r}"
    );
    let (code, r, _) = accuracy("bert_infer", &params("70"));
    assert_eq!(code, Some(1));
    let v = r["validation"]["message"].as_str().unwrap();
    assert!(
        v.contains("quality target 69.300") && v.ends_with("missed"),
        "{v}"
    );
    // Not SQuAD: named.
    std::fs::write(&file, "{}").unwrap();
    let (code, r, err) = accuracy("bert_infer", &params("70"));
    assert_ne!(code, Some(0));
    assert!(format!("{r} {err}").contains("no 'data' list"), "{r} {err}");
}
