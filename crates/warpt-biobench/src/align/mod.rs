//! Read-to-reference alignment: the whole read against a window of the
//! reference (end-to-end in the read, free ends in the reference), with
//! affine gaps, in a band around the diagonal the seeds found; and the
//! ungapped fast path most reads take. Scores as minimap2's `sr` preset:
//! match 2, mismatch 8, gap of length L costs 12 + 2L, N 1.

/// Score of a matching base.
pub const MATCH: i32 = 2;
/// Penalty of a mismatching base.
pub const MISMATCH: i32 = 8;
/// Penalty of opening a gap (on top of its extensions).
pub const GAP_OPEN: i32 = 12;
/// Penalty of each gapped base.
pub const GAP_EXTEND: i32 = 2;
/// Penalty of a pair involving an N.
pub const AMBIGUOUS: i32 = 1;

/// A CIGAR operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Aligned bases, equal or not (`M`).
    Match,
    /// Bases in the read only (`I`).
    Insertion,
    /// Bases in the reference only (`D`).
    Deletion,
}

impl Op {
    /// The SAM letter.
    pub fn letter(self) -> char {
        match self {
            Op::Match => 'M',
            Op::Insertion => 'I',
            Op::Deletion => 'D',
        }
    }
}

/// An end-to-end alignment of a read to the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alignment {
    /// Where the read's first base aligns, in the window given.
    pub start: usize,
    /// Runs of operations, read order.
    pub cigar: Vec<(u32, Op)>,
    /// Its score.
    pub score: i32,
    /// Edit distance: mismatches plus gapped bases (SAM's NM).
    pub mismatches: u32,
}

impl Alignment {
    /// Reference bases it covers.
    pub fn ref_len(&self) -> usize {
        self.cigar
            .iter()
            .filter(|(_, op)| *op != Op::Insertion)
            .map(|(n, _)| *n as usize)
            .sum()
    }

    /// The SAM CIGAR string.
    pub fn cigar_string(&self) -> String {
        self.cigar
            .iter()
            .map(|(n, op)| format!("{n}{}", op.letter()))
            .collect()
    }
}

#[inline(always)]
fn pair_score(a: u8, b: u8) -> i32 {
    upper_pair_score(a.to_ascii_uppercase(), b.to_ascii_uppercase())
}

/// [`pair_score`] of two bases already upper-cased.
#[inline(always)]
fn upper_pair_score(a: u8, b: u8) -> i32 {
    if a == b'N' || b == b'N' {
        -AMBIGUOUS
    } else if a == b {
        MATCH
    } else {
        -MISMATCH
    }
}

/// The read laid on `reference` at `start` without gaps, if it fits.
pub fn ungapped(read: &[u8], reference: &[u8], start: usize) -> Option<Alignment> {
    let window = reference.get(start..start + read.len())?;
    let (mut score, mut mismatches) = (0, 0);
    for (&a, &b) in read.iter().zip(window) {
        let s = pair_score(a, b);
        score += s;
        mismatches += u32::from(s != MATCH);
    }
    Some(Alignment {
        start,
        cigar: vec![(read.len() as u32, Op::Match)],
        score,
        mismatches,
    })
}

mod banded;

pub use banded::banded;

/// A score no alignment reaches: outside the band, the read or the
/// reference.
const NEG: i32 = i32::MIN / 4;
// Traceback bits of a cell: how H was reached, and whether E and F
// continued a gap.
const FROM_DIAG: u8 = 0;
const FROM_E: u8 = 1;
const FROM_F: u8 = 2;
const E_EXTENDS: u8 = 4;
const F_EXTENDS: u8 = 8;

/// The score of `alignment` recomputed from its CIGAR (for validation).
pub fn rescore(read: &[u8], reference: &[u8], alignment: &Alignment) -> Option<(i32, u32)> {
    let (mut i, mut j) = (0usize, alignment.start);
    let (mut score, mut edits) = (0, 0);
    for &(n, op) in &alignment.cigar {
        let n = n as usize;
        match op {
            Op::Match => {
                for _ in 0..n {
                    let s = pair_score(*read.get(i)?, *reference.get(j)?);
                    score += s;
                    edits += u32::from(s != MATCH);
                    i += 1;
                    j += 1;
                }
            }
            Op::Insertion => {
                score -= GAP_OPEN + GAP_EXTEND * n as i32;
                edits += n as u32;
                i += n;
            }
            Op::Deletion => {
                score -= GAP_OPEN + GAP_EXTEND * n as i32;
                edits += n as u32;
                j += n;
            }
        }
    }
    (i == read.len() && j <= reference.len()).then_some((score, edits))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Full-matrix end-to-end alignment score (free reference ends), the
    /// plain reference for the banded one.
    fn full(read: &[u8], reference: &[u8]) -> i32 {
        matrix(read, reference, |_, _| true)
    }

    /// The full matrix with only the cells `inside(i, j)` allowed (read
    /// prefix i, reference prefix j): the best score in its last row
    /// (j >= 1), NEG if none.
    pub(super) fn matrix(
        read: &[u8],
        reference: &[u8],
        inside: impl Fn(usize, usize) -> bool,
    ) -> i32 {
        let (m, n) = (read.len(), reference.len());
        let mut h = vec![vec![NEG; n + 1]; m + 1];
        let mut e = vec![vec![NEG; n + 1]; m + 1];
        let mut f = vec![vec![NEG; n + 1]; m + 1];
        for (j, cell) in h[0].iter_mut().enumerate() {
            if inside(0, j) {
                *cell = 0;
            }
        }
        for i in 1..=m {
            for j in 0..=n {
                if !inside(i, j) {
                    continue;
                }
                f[i][j] = (h[i - 1][j] - GAP_OPEN - GAP_EXTEND).max(f[i - 1][j] - GAP_EXTEND);
                if j > 0 {
                    e[i][j] = (h[i][j - 1] - GAP_OPEN - GAP_EXTEND).max(e[i][j - 1] - GAP_EXTEND);
                }
                let diag = if j > 0 {
                    h[i - 1][j - 1] + pair_score(read[i - 1], reference[j - 1])
                } else {
                    NEG
                };
                h[i][j] = diag.max(e[i][j]).max(f[i][j]);
            }
        }
        (1..=n)
            .filter(|&j| inside(m, j))
            .map(|j| h[m][j])
            .max()
            .unwrap_or(NEG)
    }

    #[test]
    fn banded_equals_the_full_matrix_and_its_cigar_rescores() {
        let reference = crate::genome::reference(11, 600);
        let cases: Vec<(Vec<u8>, i64)> = vec![
            (reference[100..250].to_vec(), 100),
            // Substitutions.
            (
                {
                    let mut r = reference[200..350].to_vec();
                    r[10] = b'A' + (r[10] == b'A') as u8 * 2;
                    r[90] = b'N';
                    r
                },
                200,
            ),
            // A 3-base deletion and a 2-base insertion.
            (
                {
                    let mut r = reference[300..370].to_vec();
                    r.extend_from_slice(&reference[373..450]);
                    r.splice(120..120, *b"GG");
                    r
                },
                300,
            ),
            // The seed diagonal off by 5.
            (reference[50..200].to_vec(), 55),
        ];
        for (read, diag) in cases {
            let got = banded(&read, &reference, diag, 12).unwrap();
            assert_eq!(
                got.score,
                full(&read, &reference[diag as usize - 20..]),
                "{got:?}"
            );
            let (score, edits) = rescore(&read, &reference, &got).unwrap();
            assert_eq!((score, edits), (got.score, got.mismatches), "{got:?}");
        }
        // At both ends of the reference, where the band hangs over them,
        // soft-masked (lower-case) bases among them, edits anywhere.
        let mut masked = reference.clone();
        masked[..40].make_ascii_lowercase();
        masked[560..].make_ascii_lowercase();
        let mut state = 7u64;
        let mut next = |below: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % below
        };
        for case in 0..60 {
            let len = 60 + next(60);
            let start = match case % 3 {
                0 => next(8),
                1 => masked.len() - len - next(8),
                _ => next(masked.len() - len),
            };
            let mut read = masked[start..start + len].to_vec();
            for _ in 0..next(4) {
                let at = next(read.len());
                match next(3) {
                    0 => read[at] = b"ACGTN"[next(5)],
                    1 => {
                        read.remove(at);
                    }
                    _ => read.insert(at, b"ACGT"[next(4)]),
                }
            }
            let got = banded(&read, &masked, start as i64, 10).unwrap();
            let lo = start.saturating_sub(10);
            let hi = (start + read.len() + 21).min(masked.len());
            assert_eq!(
                got.score,
                full(&read, &masked[lo..hi]),
                "case {case}: {got:?}"
            );
            let (score, edits) = rescore(&read, &masked, &got).unwrap();
            assert_eq!((score, edits), (got.score, got.mismatches), "case {case}");
        }
        let exact = banded(&reference[100..250], &reference, 100, 8).unwrap();
        assert_eq!(exact.cigar_string(), "150M");
        assert_eq!(exact.start, 100);
        assert_eq!(ungapped(&reference[100..250], &reference, 100), Some(exact));
    }
}
