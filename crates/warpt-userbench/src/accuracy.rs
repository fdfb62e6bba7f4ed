//! Accuracy of an answer against the one it must match: an optimized
//! variant's against its baseline's, or a kernel's against its bench.yaml
//! `reference` (a callable's answer or a file of expected numbers). Each
//! side is the numbers a last call returned (a JSON array, see the
//! adapter's `output` request), and the answer must be within the
//! tolerances.

use std::path::Path;

use crate::config::Tolerances;

/// The differences between two outputs, and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Accuracy {
    /// Root-mean-square difference.
    pub rmse: f64,
    /// Largest absolute difference.
    pub max_abs_error: f64,
    /// Largest |optimized − baseline| / |baseline| over the numbers whose
    /// baseline is not zero (0 when every baseline number is zero).
    pub max_rel_error: f64,
    /// ‖optimized − baseline‖₂ / ‖baseline‖₂ (0 when both are zero).
    pub relative_error: f64,
    /// Within every tolerance.
    pub passed: bool,
    /// What was compared with what, for people.
    pub verdict: String,
}

/// The differences between `optimized` and `baseline`, judged by `tol`.
/// A non-finite value on either side counts as an infinite error unless
/// both sides have the same one. `baseline` is whatever the answer must
/// match (a baseline's output or a reference); the verdict calls it that.
pub fn compare(baseline: &[Option<f64>], optimized: &[Option<f64>], tol: &Tolerances) -> Accuracy {
    if baseline.len() != optimized.len() {
        return Accuracy {
            rmse: f64::INFINITY,
            max_abs_error: f64::INFINITY,
            max_rel_error: f64::INFINITY,
            relative_error: f64::INFINITY,
            passed: false,
            verdict: format!(
                "returned {} numbers where {} are expected",
                optimized.len(),
                baseline.len()
            ),
        };
    }
    let (mut sq, mut max, mut max_rel, mut norm) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (b, o) in baseline.iter().zip(optimized) {
        let d = match (b, o) {
            (Some(b), Some(o)) => {
                norm += b * b;
                let d = (o - b).abs();
                if *b != 0.0 {
                    max_rel = max_rel.max(d / b.abs());
                }
                d
            }
            (None, None) => 0.0,
            _ => {
                max_rel = f64::INFINITY;
                f64::INFINITY
            }
        };
        sq += d * d;
        max = max.max(d);
    }
    let n = baseline.len().max(1) as f64;
    let rmse = (sq / n).sqrt();
    let relative_error = if sq == 0.0 { 0.0 } else { (sq / norm).sqrt() };
    let checks = [
        ("rmse", rmse, tol.rmse),
        ("relative_error", relative_error, tol.relative_error),
        ("max_abs_error", max, tol.max_abs_error),
        ("max_rel_error", max_rel, tol.max_rel_error),
    ];
    let failed: Vec<String> = checks
        .iter()
        .filter_map(|(name, v, limit)| {
            limit
                // NaN is never within a tolerance.
                .filter(|l| v.partial_cmp(l) != Some(std::cmp::Ordering::Less) && v != l)
                .map(|l| format!("{name} {v:.3e} > {l:.1e}"))
        })
        .collect();
    let verdict = if failed.is_empty() {
        let within: Vec<String> = checks
            .iter()
            .filter_map(|(name, v, limit)| limit.map(|l| format!("{name} {v:.3e} <= {l:.1e}")))
            .collect();
        format!("{} numbers match: {}", baseline.len(), within.join(", "))
    } else {
        failed.join(", ")
    };
    Accuracy {
        rmse,
        max_abs_error: max,
        max_rel_error: max_rel,
        relative_error,
        passed: failed.is_empty(),
        verdict,
    }
}

fn read(path: &Path, side: &str) -> Result<Vec<Option<f64>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|_| format!("the {side} returned no numbers from benchmark_fn()"))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The expected numbers in `path` (a bench.yaml `reference` file): a JSON
/// array of numbers (nested arrays are flattened in order; `null` stands
/// for a non-finite number).
pub fn read_expected(path: &Path) -> Result<Vec<Option<f64>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("the reference file {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the reference file {}: {e}", path.display()))?;
    let mut out = Vec::new();
    flatten(&value, &mut out).map_err(|what| {
        format!(
            "the reference file {}: holds {what}, not only numbers in arrays",
            path.display()
        )
    })?;
    Ok(out)
}

fn flatten(v: &serde_json::Value, out: &mut Vec<Option<f64>>) -> Result<(), String> {
    match v {
        serde_json::Value::Number(n) => out.push(n.as_f64()),
        serde_json::Value::Null => out.push(None),
        serde_json::Value::Array(items) => {
            for item in items {
                flatten(item, out)?;
            }
        }
        other => return Err(format!("{other}")),
    }
    Ok(())
}

/// Compares a kernel's output (`answer`, as written by the adapter) with
/// the expected numbers of its reference.
pub fn against_reference(
    expected: &[Option<f64>],
    answer: &Path,
    tol: &Tolerances,
) -> Result<Accuracy, String> {
    let o = read(answer, "kernel")?;
    Ok(compare(expected, &o, tol))
}

/// Compares the outputs the two sides wrote; `Err` says why they could
/// not be compared (a side returned nothing).
pub fn compare_files(
    baseline: &Path,
    optimized: &Path,
    tol: &Tolerances,
) -> Result<Accuracy, String> {
    let b = read(baseline, "baseline")?;
    let o = read(optimized, "optimized variant")?;
    Ok(compare(&b, &o, tol))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &[f64]) -> Vec<Option<f64>> {
        x.iter().copied().map(Some).collect()
    }

    #[test]
    fn equal_outputs_pass_and_wrong_ones_fail() {
        let a = compare(&v(&[1.0, 2.0]), &v(&[1.0, 2.0]), &Tolerances::DEFAULT);
        assert!(
            a.passed && a.rmse == 0.0 && a.relative_error == 0.0,
            "{a:?}"
        );
        let b = compare(&v(&[3.0, 4.0]), &v(&[3.0, 4.5]), &Tolerances::DEFAULT);
        assert!(!b.passed, "{b:?}");
        assert!((b.max_abs_error - 0.5).abs() < 1e-12);
        assert!((b.max_rel_error - 0.125).abs() < 1e-12, "{b:?}");
        assert!((b.rmse - (0.125f64).sqrt()).abs() < 1e-12);
        assert!((b.relative_error - 0.1).abs() < 1e-12, "{b:?}");
        assert!(b.verdict.contains("relative_error"), "{}", b.verdict);
        let loose = Tolerances {
            max_abs_error: Some(1.0),
            ..Tolerances::default()
        };
        assert!(compare(&v(&[3.0, 4.0]), &v(&[3.0, 4.5]), &loose).passed);
    }

    #[test]
    fn a_max_relative_error_tolerance_judges_each_number_alone() {
        // 1000.0 vs 1000.5 is tiny relatively; 0.001 vs 0.002 is double.
        let (b, o) = (v(&[1000.0, 0.001, 0.0]), v(&[1000.5, 0.002, 0.0]));
        let tol = Tolerances {
            max_rel_error: Some(0.5),
            ..Tolerances::default()
        };
        let a = compare(&b, &o, &tol);
        assert!((a.max_rel_error - 1.0).abs() < 1e-9, "{a:?}");
        assert!(!a.passed && a.verdict.contains("max_rel_error"), "{a:?}");
        let within = Tolerances {
            max_rel_error: Some(1.5),
            ..Tolerances::default()
        };
        assert!(compare(&b, &o, &within).passed);
    }

    #[test]
    fn reference_files_are_flat_or_nested_arrays_of_numbers() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("expected.json");
        std::fs::write(&p, "[[1, 2.5], [null, 4]]").unwrap();
        assert_eq!(
            read_expected(&p).unwrap(),
            vec![Some(1.0), Some(2.5), None, Some(4.0)]
        );
        std::fs::write(&p, "{\"a\": 1}").unwrap();
        let e = read_expected(&p).unwrap_err();
        assert!(e.contains("not only numbers"), "{e}");
        let e = read_expected(&t.path().join("missing.json")).unwrap_err();
        assert!(e.contains("missing.json"), "{e}");
    }

    #[test]
    fn lengths_and_non_finite_values_must_agree() {
        assert!(!compare(&v(&[1.0]), &v(&[1.0, 2.0]), &Tolerances::DEFAULT).passed);
        assert!(!compare(&v(&[1.0]), &[None], &Tolerances::DEFAULT).passed);
        assert!(compare(&[None], &[None], &Tolerances::DEFAULT).passed);
    }
}
