//! Accuracy of an optimized variant against its baseline: both write the
//! numbers their last call returned (a JSON array, see the adapter's
//! `output` request), and the variant's must be within the tolerances.

use std::path::Path;

use crate::config::Tolerances;

/// The differences between two outputs, and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Accuracy {
    /// Root-mean-square difference.
    pub rmse: f64,
    /// Largest absolute difference.
    pub max_error: f64,
    /// ‖optimized − baseline‖₂ / ‖baseline‖₂ (0 when both are zero).
    pub relative_error: f64,
    /// Within every tolerance.
    pub passed: bool,
    /// What was compared with what, for people.
    pub verdict: String,
}

/// The differences between `optimized` and `baseline`, judged by `tol`.
/// A non-finite value on either side counts as an infinite error unless
/// both sides have the same one.
pub fn compare(baseline: &[Option<f64>], optimized: &[Option<f64>], tol: &Tolerances) -> Accuracy {
    if baseline.len() != optimized.len() {
        return Accuracy {
            rmse: f64::INFINITY,
            max_error: f64::INFINITY,
            relative_error: f64::INFINITY,
            passed: false,
            verdict: format!(
                "returned {} numbers where the baseline returned {}",
                optimized.len(),
                baseline.len()
            ),
        };
    }
    let (mut sq, mut max, mut norm) = (0.0f64, 0.0f64, 0.0f64);
    for (b, o) in baseline.iter().zip(optimized) {
        let d = match (b, o) {
            (Some(b), Some(o)) => {
                norm += b * b;
                (o - b).abs()
            }
            (None, None) => 0.0,
            _ => f64::INFINITY,
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
        ("max_error", max, tol.max_error),
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
        max_error: max,
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
        assert!((b.max_error - 0.5).abs() < 1e-12);
        assert!((b.rmse - (0.125f64).sqrt()).abs() < 1e-12);
        assert!((b.relative_error - 0.1).abs() < 1e-12, "{b:?}");
        assert!(b.verdict.contains("relative_error"), "{}", b.verdict);
        let loose = Tolerances {
            max_error: Some(1.0),
            ..Tolerances::default()
        };
        assert!(compare(&v(&[3.0, 4.0]), &v(&[3.0, 4.5]), &loose).passed);
    }

    #[test]
    fn lengths_and_non_finite_values_must_agree() {
        assert!(!compare(&v(&[1.0]), &v(&[1.0, 2.0]), &Tolerances::DEFAULT).passed);
        assert!(!compare(&v(&[1.0]), &[None], &Tolerances::DEFAULT).passed);
        assert!(compare(&[None], &[None], &Tolerances::DEFAULT).passed);
    }
}
