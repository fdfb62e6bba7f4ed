//! Many tests at once: the Benjamini-Hochberg false discovery rate.

/// Benjamini-Hochberg adjusted p-values (q-values), in the input's order;
/// NaN inputs (no test) stay NaN and do not count.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_finite()).collect();
    let m = idx.len() as f64;
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut q = vec![f64::NAN; p.len()];
    let mut running = 1.0f64;
    for (rank, &i) in idx.iter().enumerate().rev() {
        running = running.min(p[i] * m / (rank + 1) as f64);
        q[i] = running.min(1.0);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bh_adjusts_like_the_textbook() {
        // p = 0.01, 0.04, 0.03, 0.005 -> q = 0.02, 0.04, 0.04, 0.02
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005, f64::NAN]);
        let want = [0.02, 0.04, 0.04, 0.02];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
        assert!(q[4].is_nan());
    }
}
