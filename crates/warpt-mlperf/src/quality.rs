//! Accuracy in an AccuracyOnly run, computed as MLPerf's accuracy scripts
//! compute it, and MLPerf's quality target: the run's figure must reach 99%
//! of the reference figure (the FP32 model's, which the user supplies:
//! 76.46% top-1 for ResNet-50 v1.5, an F1 of 90.874 for BERT-large on
//! SQuAD v1.1).
//!
//! - top-1 (`accuracy-imagenet.py`): the share of labelled images whose
//!   predicted class is the label, from `val_map.txt` (`NAME CLASS` lines);
//! - F1 (`accuracy-squad.py`, SQuAD v1.1's `evaluate`): per question the
//!   best token-overlap F1 of the predicted answer against any of its
//!   answers, after SQuAD's normalisation; the mean over questions.

use std::collections::BTreeMap;
use std::path::Path;

/// MLPerf's quality target: this share of the reference figure.
pub const TARGET_SHARE: f64 = 0.99;

/// Labels by image file name, from a `val_map.txt` (one `NAME CLASS` per
/// line; blank lines skipped). A bad line is an error naming it.
pub fn read_labels(path: &Path) -> Result<BTreeMap<String, i32>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(name), Some(class), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!(
                "{} line {}: expected 'NAME CLASS', found '{line}'",
                path.display(),
                i + 1
            ));
        };
        let class: i32 = class.parse().map_err(|_| {
            format!(
                "{} line {}: class '{class}' is not an integer",
                path.display(),
                i + 1
            )
        })?;
        out.insert(name.to_string(), class);
    }
    if out.is_empty() {
        return Err(format!("{}: no labels", path.display()));
    }
    Ok(out)
}

/// An accuracy figure and what it counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Accuracy {
    /// Percent (top-1) or F1 x 100.
    pub value: f64,
    /// Samples scored.
    pub scored: usize,
}

/// Top-1 accuracy, percent, of `answers` (library index, predicted class)
/// against the `labels` of the library's image `names`. Images without a
/// label are not scored; none scored is an error.
pub fn top1(
    names: &[String],
    labels: &BTreeMap<String, i32>,
    answers: &[(usize, i32)],
) -> Result<Accuracy, String> {
    let mut scored = 0;
    let mut right = 0;
    for &(index, class) in answers {
        let Some(label) = names.get(index).and_then(|n| labels.get(n)) else {
            continue;
        };
        scored += 1;
        right += usize::from(*label == class);
    }
    if scored == 0 {
        return Err("no answered image has a label (names in the labels file must be the dataset's file names)".into());
    }
    Ok(Accuracy {
        value: right as f64 * 100.0 / scored as f64,
        scored,
    })
}

/// SQuAD's normalisation: lower case, punctuation and the articles a, an,
/// the removed, whitespace collapsed; the words.
pub fn normalize(text: &str) -> Vec<String> {
    let lower: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    lower
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .map(str::to_string)
        .collect()
}

/// Token-overlap F1 of `prediction` against one answer (SQuAD's
/// `f1_score`), in [0, 1].
pub fn f1(prediction: &str, answer: &str) -> f64 {
    let (p, a) = (normalize(prediction), normalize(answer));
    if p.is_empty() || a.is_empty() {
        return f64::from(u8::from(p == a));
    }
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for w in &a {
        *counts.entry(w).or_default() += 1;
    }
    let mut common = 0;
    for w in &p {
        if let Some(c) = counts.get_mut(w.as_str())
            && *c > 0
        {
            *c -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / p.len() as f64;
    let recall = common as f64 / a.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// SQuAD F1 x 100 over `(prediction, answers)` pairs: each question's best
/// F1 against any of its answers, averaged.
pub fn squad_f1(predictions: &[(String, Vec<String>)]) -> Result<Accuracy, String> {
    if predictions.is_empty() {
        return Err("no question was answered".into());
    }
    let total: f64 = predictions
        .iter()
        .map(|(p, answers)| answers.iter().map(|a| f1(p, a)).fold(0.0, f64::max))
        .sum();
    Ok(Accuracy {
        value: total * 100.0 / predictions.len() as f64,
        scored: predictions.len(),
    })
}

/// MLPerf's verdict on `value` against the user's `reference` figure (the
/// same unit): reached when at least [`TARGET_SHARE`] of it.
pub fn verdict(what: &str, value: f64, reference: f64) -> Result<String, String> {
    let target = reference * TARGET_SHARE;
    let text = format!(
        "{what} {value:.3} against the quality target {target:.3} (99% of the reference {reference:.3})"
    );
    if value >= target {
        Ok(format!("{text}: reached"))
    } else {
        Err(format!("{text}: missed"))
    }
}

/// What the parameters ask of accuracy: whether this is an accuracy run
/// (`accuracy`) and the reference figure (`reference_accuracy`, 0 none).
pub fn requested(params: &warpt_model::Params) -> (bool, f64) {
    let accuracy = params
        .get("accuracy")
        .and_then(warpt_model::ParamValue::as_bool)
        .unwrap_or(false);
    let reference = params
        .get("reference_accuracy")
        .and_then(warpt_model::ParamValue::as_f64)
        .unwrap_or(0.0);
    (accuracy, reference)
}

/// A validation `message` with an accuracy run's figure appended (`value`,
/// named `what`): the quality target's verdict when `reference` is set
/// (above 0), else the figure alone; the message as it was without one.
pub fn with_accuracy(
    message: String,
    what: &str,
    value: Option<f64>,
    reference: f64,
) -> Result<String, String> {
    match value {
        Some(v) if reference > 0.0 => {
            verdict(what, v, reference).map(|t| format!("{message}; {t}"))
        }
        Some(v) => Ok(format!(
            "{message}; {what} {v:.3} (no reference_accuracy, no quality target)"
        )),
        None => Ok(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top1_counts_labelled_images_only() {
        let names: Vec<String> = ["a.png", "b.png", "c.png", "d.png"]
            .map(String::from)
            .to_vec();
        let labels: BTreeMap<String, i32> = [("a.png", 1), ("b.png", 2), ("c.png", 3)]
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect();
        // a right, b wrong, c right, d unlabelled.
        let acc = top1(&names, &labels, &[(0, 1), (1, 7), (2, 3), (3, 4)]).unwrap();
        assert_eq!(acc.scored, 3);
        assert!((acc.value - 200.0 / 3.0).abs() < 1e-12);
        assert!(top1(&names, &labels, &[(3, 4)]).is_err());
    }

    #[test]
    fn labels_files_are_read_and_bad_lines_named() {
        let dir = std::env::temp_dir().join(format!("warpt-labels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("val_map.txt");
        std::fs::write(&good, "ILSVRC2012_val_00000001.JPEG 65\n\nb.png 970\n").unwrap();
        let l = read_labels(&good).unwrap();
        assert_eq!(l["ILSVRC2012_val_00000001.JPEG"], 65);
        assert_eq!(l["b.png"], 970);
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, "a.png 1\nb.png cat\n").unwrap();
        let e = read_labels(&bad).unwrap_err();
        assert!(e.contains("line 2") && e.contains("'cat'"), "{e}");
        std::fs::write(&bad, "a.png\n").unwrap();
        assert!(read_labels(&bad).unwrap_err().contains("NAME CLASS"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn f1_follows_squads_evaluate() {
        // SQuAD's normalisation drops case, punctuation and articles.
        assert_eq!(f1("The Eiffel Tower.", "eiffel tower"), 1.0);
        // 2 words in common of 3 predicted and 2 answered: P 2/3, R 1.
        assert!((f1("in Paris France", "Paris, France") - 0.8).abs() < 1e-12);
        assert_eq!(f1("London", "Paris"), 0.0);
        assert_eq!(f1("", ""), 1.0);
        // The best answer counts; the mean over questions.
        let q = vec![
            ("Paris".to_string(), vec!["London".into(), "paris".into()]),
            ("Rome".to_string(), vec!["Milan".into()]),
        ];
        let acc = squad_f1(&q).unwrap();
        assert_eq!((acc.value, acc.scored), (50.0, 2));
    }

    #[test]
    fn the_quality_target_is_99_percent_of_the_reference() {
        assert!(verdict("top-1 %", 75.7, 76.46).is_ok());
        let e = verdict("top-1 %", 75.6, 76.46).unwrap_err();
        assert!(e.contains("75.695") && e.ends_with("missed"), "{e}");
    }
}
