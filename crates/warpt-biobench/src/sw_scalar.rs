//! Smith-Waterman with affine gaps (Gotoh), one cell at a time in `i32`:
//! the reference every vectorised score is checked against.

use crate::scoring::{Gaps, Matrix};

/// The best local alignment score of `query` against `target` (both
/// encoded by `matrix`), gaps costing `open + (L − 1) · extend`.
pub fn score(query: &[u8], target: &[u8], matrix: &Matrix, gaps: Gaps) -> i32 {
    // h[i]: best score of an alignment ending at query i and the previous
    // target position; e[i]: the same, ending in a gap in the query
    // direction (a target residue against nothing).
    let n = query.len();
    let mut h = vec![0i32; n + 1];
    let mut e = vec![i32::MIN / 2; n + 1];
    let mut best = 0;
    for &t in target {
        let mut diag = 0; // h[i - 1] of the previous column
        let mut f = i32::MIN / 2;
        let mut up = 0; // h[i - 1] of this column
        for i in 1..=n {
            e[i] = (e[i] - gaps.extend).max(h[i] - gaps.open);
            f = (f - gaps.extend).max(up - gaps.open);
            let cell = (diag + matrix.score(query[i - 1], t))
                .max(e[i])
                .max(f)
                .max(0);
            diag = h[i];
            h[i] = cell;
            up = cell;
            best = best.max(cell);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dna(q: &str, t: &str) -> i32 {
        let m = Matrix::dnafull();
        score(
            &m.encode(q.as_bytes()),
            &m.encode(t.as_bytes()),
            &m,
            Gaps {
                open: 10,
                extend: 1,
            },
        )
    }

    #[test]
    fn scores_by_hand() {
        assert_eq!(dna("ACGT", "ACGT"), 20);
        assert_eq!(dna("ACGT", "TTTT"), 5);
        assert_eq!(dna("", "ACGT"), 0);
        // A mismatch in the middle: 4 + 4 matches, one mismatch.
        assert_eq!(dna("AAAACAAAA", "AAAAGAAAA"), 40 - 4);
        // A 2-base deletion in 20 + 20 matched bases: 200 − (10 + 1).
        let left = "ACGTACGTACGTACGTACGT";
        let right = "TGCATGCATGCATGCATGCA";
        assert_eq!(
            dna(&format!("{left}{right}"), &format!("{left}GG{right}")),
            200 - 11
        );
    }
}
