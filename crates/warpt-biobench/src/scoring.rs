//! Substitution matrices and gap penalties: residues encoded as small
//! indices, scores looked up by index pair.
//!
//! Gap penalties follow parasail's convention (the peer this suite is
//! measured against): a gap of length `L` costs `open + (L − 1) · extend`.

/// A substitution matrix over an alphabet of up to 32 residues.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Its name, as `matrix=` takes it.
    pub name: &'static str,
    /// The residues in index order; the last is what unknown letters map to.
    letters: &'static [u8],
    /// `letters.len()²` scores, row-major.
    scores: Vec<i8>,
    /// Letter (upper or lower case) to index.
    index: [u8; 256],
}

/// Gap penalties, both positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gaps {
    /// The cost of a gap's first position.
    pub open: i32,
    /// The cost of each further position.
    pub extend: i32,
}

const BLOSUM62_LETTERS: &[u8] = b"ARNDCQEGHILKMFPSTWYVBZX*";

/// NCBI's BLOSUM62 (half-bit units), rows and columns in
/// [`BLOSUM62_LETTERS`] order.
#[rustfmt::skip]
const BLOSUM62: [[i8; 24]; 24] = [
    [ 4,-1,-2,-2, 0,-1,-1, 0,-2,-1,-1,-1,-1,-2,-1, 1, 0,-3,-2, 0,-2,-1, 0,-4],
    [-1, 5, 0,-2,-3, 1, 0,-2, 0,-3,-2, 2,-1,-3,-2,-1,-1,-3,-2,-3,-1, 0,-1,-4],
    [-2, 0, 6, 1,-3, 0, 0, 0, 1,-3,-3, 0,-2,-3,-2, 1, 0,-4,-2,-3, 3, 0,-1,-4],
    [-2,-2, 1, 6,-3, 0, 2,-1,-1,-3,-4,-1,-3,-3,-1, 0,-1,-4,-3,-3, 4, 1,-1,-4],
    [ 0,-3,-3,-3, 9,-3,-4,-3,-3,-1,-1,-3,-1,-2,-3,-1,-1,-2,-2,-1,-3,-3,-2,-4],
    [-1, 1, 0, 0,-3, 5, 2,-2, 0,-3,-2, 1, 0,-3,-1, 0,-1,-2,-1,-2, 0, 3,-1,-4],
    [-1, 0, 0, 2,-4, 2, 5,-2, 0,-3,-3, 1,-2,-3,-1, 0,-1,-3,-2,-2, 1, 4,-1,-4],
    [ 0,-2, 0,-1,-3,-2,-2, 6,-2,-4,-4,-2,-3,-3,-2, 0,-2,-2,-3,-3,-1,-2,-1,-4],
    [-2, 0, 1,-1,-3, 0, 0,-2, 8,-3,-3,-1,-2,-1,-2,-1,-2,-2, 2,-3, 0, 0,-1,-4],
    [-1,-3,-3,-3,-1,-3,-3,-4,-3, 4, 2,-3, 1, 0,-3,-2,-1,-3,-1, 3,-3,-3,-1,-4],
    [-1,-2,-3,-4,-1,-2,-3,-4,-3, 2, 4,-2, 2, 0,-3,-2,-1,-2,-1, 1,-4,-3,-1,-4],
    [-1, 2, 0,-1,-3, 1, 1,-2,-1,-3,-2, 5,-1,-3,-1, 0,-1,-3,-2,-2, 0, 1,-1,-4],
    [-1,-1,-2,-3,-1, 0,-2,-3,-2, 1, 2,-1, 5, 0,-2,-1,-1,-1,-1, 1,-3,-1,-1,-4],
    [-2,-3,-3,-3,-2,-3,-3,-3,-1, 0, 0,-3, 0, 6,-4,-2,-2, 1, 3,-1,-3,-3,-1,-4],
    [-1,-2,-2,-1,-3,-1,-1,-2,-2,-3,-3,-1,-2,-4, 7,-1,-1,-4,-3,-2,-2,-1,-2,-4],
    [ 1,-1, 1, 0,-1, 0, 0, 0,-1,-2,-2, 0,-1,-2,-1, 4, 1,-3,-2,-2, 0, 0, 0,-4],
    [ 0,-1, 0,-1,-1,-1,-1,-2,-2,-1,-1,-1,-1,-2,-1, 1, 5,-2,-2, 0,-1,-1, 0,-4],
    [-3,-3,-4,-4,-2,-2,-3,-2,-2,-3,-2,-3,-1, 1,-4,-3,-2,11, 2,-3,-4,-3,-2,-4],
    [-2,-2,-2,-3,-2,-1,-2,-3, 2,-1,-1,-2,-1, 3,-3,-2,-2, 2, 7,-1,-3,-2,-1,-4],
    [ 0,-3,-3,-3,-1,-2,-2,-3,-3, 3, 1,-2, 1,-1,-2,-2, 0,-3,-1, 4,-3,-2,-1,-4],
    [-2,-1, 3, 4,-3, 0, 1,-1, 0,-3,-4, 0,-3,-3,-2, 0,-1,-4,-3,-3, 4, 1,-1,-4],
    [-1, 0, 0, 1,-3, 3, 4,-2, 0,-3,-3, 1,-1,-3,-1, 0,-1,-3,-2,-2, 1, 4,-1,-4],
    [ 0,-1,-1,-1,-2,-1,-1,-1,-1,-1,-1,-1,-1,-1,-2, 0, 0,-2,-1,-1,-1,-1,-1,-4],
    [-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4,-4, 1],
];

impl Matrix {
    /// The matrix called `name`: `blosum62` (protein) or `dnafull`
    /// (EMBOSS's EDNAFULL on A, C, G, T: +5 / −4, N −2 against anything).
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "blosum62" => Some(Self::blosum62()),
            "dnafull" => Some(Self::dnafull()),
            _ => None,
        }
    }

    /// The names [`Self::by_name`] knows.
    pub const NAMES: &'static [&'static str] = &["blosum62", "dnafull"];

    /// BLOSUM62; a byte outside its alphabet maps to `*`, the last row.
    pub fn blosum62() -> Self {
        let scores = BLOSUM62.iter().flatten().copied().collect();
        Self::new("blosum62", BLOSUM62_LETTERS, scores)
    }

    /// EDNAFULL restricted to A, C, G, T and N.
    pub fn dnafull() -> Self {
        let letters: &'static [u8] = b"ACGTN";
        let scores = (0..25)
            .map(|i| match (i / 5, i % 5) {
                (4, _) | (_, 4) => -2,
                (a, b) if a == b => 5,
                _ => -4,
            })
            .collect();
        Self::new("dnafull", letters, scores)
    }

    fn new(name: &'static str, letters: &'static [u8], scores: Vec<i8>) -> Self {
        let mut index = [(letters.len() - 1) as u8; 256];
        for (i, &l) in letters.iter().enumerate() {
            index[l as usize] = i as u8;
            index[l.to_ascii_lowercase() as usize] = i as u8;
        }
        Matrix {
            name,
            letters,
            scores,
            index,
        }
    }

    /// Residues in the alphabet.
    pub fn size(&self) -> usize {
        self.letters.len()
    }

    /// The residues, in index order.
    pub fn letters(&self) -> &'static [u8] {
        self.letters
    }

    /// The score of residue indices `a` against `b`.
    pub fn score(&self, a: u8, b: u8) -> i32 {
        self.scores[a as usize * self.letters.len() + b as usize] as i32
    }

    /// The lowest and highest scores.
    pub fn range(&self) -> (i32, i32) {
        let min = self.scores.iter().copied().min().unwrap_or(0);
        let max = self.scores.iter().copied().max().unwrap_or(0);
        (min as i32, max as i32)
    }

    /// A sequence of letters as residue indices.
    pub fn encode(&self, seq: &[u8]) -> Vec<u8> {
        seq.iter().map(|&c| self.index[c as usize]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blosum62_is_symmetric_with_ncbis_diagonal() {
        let m = Matrix::blosum62();
        for a in 0..24u8 {
            for b in 0..24u8 {
                assert_eq!(m.score(a, b), m.score(b, a), "{a} {b}");
            }
        }
        let diagonal: Vec<i32> = (0..20u8).map(|a| m.score(a, a)).collect();
        assert_eq!(
            diagonal,
            [4, 5, 6, 6, 9, 5, 5, 6, 8, 4, 4, 5, 5, 6, 7, 4, 5, 11, 7, 4]
        );
        assert_eq!(m.range(), (-4, 11));
        let e = m.encode(b"Wa?");
        assert_eq!((m.score(e[0], e[0]), e[1], e[2]), (11, 0, 23));
    }

    #[test]
    fn dnafull_scores_matches_mismatches_and_n() {
        let m = Matrix::dnafull();
        let e = m.encode(b"ACgtNx");
        assert_eq!(m.score(e[0], e[0]), 5);
        assert_eq!(m.score(e[0], e[1]), -4);
        assert_eq!(m.score(e[2], e[2]), 5);
        assert_eq!(m.score(e[4], e[0]), -2);
        assert_eq!(e[5], 4);
    }
}
