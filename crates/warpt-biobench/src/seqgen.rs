//! Seeded sequences: proteins drawn from amino-acid background
//! frequencies, DNA at a given GC content, and targets that hold mutated
//! copies of a query (homologs), so alignment scores range from chance to
//! long gapped matches, as in a database search.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Robinson & Robinson (1991) amino-acid frequencies, in `ARNDCQEGHILKMFPSTWYV` order.
const AMINO: &[u8; 20] = b"ARNDCQEGHILKMFPSTWYV";
const AMINO_FREQ: [f64; 20] = [
    0.0780, 0.0512, 0.0448, 0.0536, 0.0192, 0.0426, 0.0629, 0.0738, 0.0219, 0.0514, 0.0902, 0.0574,
    0.0224, 0.0385, 0.0520, 0.0712, 0.0584, 0.0132, 0.0321, 0.0644,
];

/// The kind of residues generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    /// The 20 amino acids at their background frequencies.
    Protein,
    /// A, C, G, T at 41% GC (the human genome's average).
    Dna,
}

impl Alphabet {
    /// The alphabet called `name` (`protein` or `dna`).
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "protein" => Some(Alphabet::Protein),
            "dna" => Some(Alphabet::Dna),
            _ => None,
        }
    }

    /// The substitution matrix used when none is named.
    pub fn default_matrix(self) -> &'static str {
        match self {
            Alphabet::Protein => "blosum62",
            Alphabet::Dna => "dnafull",
        }
    }
}

/// A uniform draw in `[0, 1)`.
pub fn unit(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// One residue of `alphabet`, as a letter.
pub fn residue(rng: &mut Xoshiro256PlusPlus, alphabet: Alphabet) -> u8 {
    let u = unit(rng);
    match alphabet {
        Alphabet::Protein => {
            let mut acc = 0.0;
            for (&a, &f) in AMINO.iter().zip(&AMINO_FREQ) {
                acc += f;
                if u < acc {
                    return a;
                }
            }
            b'V'
        }
        Alphabet::Dna => {
            let gc = 0.41;
            match u {
                u if u < gc / 2.0 => b'G',
                u if u < gc => b'C',
                u if u < gc + (1.0 - gc) / 2.0 => b'A',
                _ => b'T',
            }
        }
    }
}

/// A sequence of `len` residues.
pub fn sequence(rng: &mut Xoshiro256PlusPlus, alphabet: Alphabet, len: usize) -> Vec<u8> {
    (0..len).map(|_| residue(rng, alphabet)).collect()
}

/// `source` evolved: each residue substituted with probability `sub`, and
/// a short insertion or deletion (1 to 5 residues) started with
/// probability `indel` at each position.
pub fn mutate(
    rng: &mut Xoshiro256PlusPlus,
    alphabet: Alphabet,
    source: &[u8],
    sub: f64,
    indel: f64,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(source.len() + 16);
    let mut i = 0;
    while i < source.len() {
        if unit(rng) < indel {
            let len = 1 + (rng.next_u64() % 5) as usize;
            if rng.next_u64() & 1 == 0 {
                out.extend((0..len).map(|_| residue(rng, alphabet)));
            } else {
                i += len;
                continue;
            }
        }
        out.push(if unit(rng) < sub {
            residue(rng, alphabet)
        } else {
            source[i]
        });
        i += 1;
    }
    out
}

/// Queries and targets for a database search: `queries` sequences of
/// lengths around `query_len` and `targets` around `target_len` (each
/// uniform in ±50%); a share `homologs` of the targets holds a mutated
/// copy of part of a query between random flanks.
pub struct SearchSet {
    /// The queries, as letters.
    pub queries: Vec<Vec<u8>>,
    /// The targets, as letters.
    pub targets: Vec<Vec<u8>>,
}

impl SearchSet {
    /// The set for `seed` (see the type's doc).
    pub fn generate(
        seed: u64,
        alphabet: Alphabet,
        (queries, query_len): (usize, usize),
        (targets, target_len): (usize, usize),
        homologs: f64,
    ) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let around = |rng: &mut Xoshiro256PlusPlus, mean: usize| {
            ((mean as f64 * (0.5 + unit(rng))).round() as usize).max(1)
        };
        let queries: Vec<Vec<u8>> = (0..queries)
            .map(|_| {
                let len = around(&mut rng, query_len);
                sequence(&mut rng, alphabet, len)
            })
            .collect();
        let targets = (0..targets)
            .map(|_| {
                let len = around(&mut rng, target_len);
                if queries.is_empty() || unit(&mut rng) >= homologs {
                    return sequence(&mut rng, alphabet, len);
                }
                let q = &queries[(rng.next_u64() % queries.len() as u64) as usize];
                let from = (rng.next_u64() % q.len() as u64) as usize / 2;
                let to = (from + len.min(q.len() - from)).max(from + 1);
                let core = mutate(&mut rng, alphabet, &q[from..to], 0.3, 0.02);
                let flank = len.saturating_sub(core.len()) / 2;
                let mut t = sequence(&mut rng, alphabet, flank);
                t.extend(core);
                t.extend(sequence(&mut rng, alphabet, flank));
                t
            })
            .collect();
        SearchSet { queries, targets }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_sum_to_one_and_draws_follow_them() {
        assert!((AMINO_FREQ.iter().sum::<f64>() - 1.0).abs() < 1e-3);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let s = sequence(&mut rng, Alphabet::Protein, 200_000);
        let leu = s.iter().filter(|&&c| c == b'L').count() as f64 / s.len() as f64;
        assert!((leu - 0.0902).abs() < 0.003, "L at {leu}");
        let d = sequence(&mut rng, Alphabet::Dna, 200_000);
        let gc = d.iter().filter(|&&c| c == b'G' || c == b'C').count() as f64 / d.len() as f64;
        assert!((gc - 0.41).abs() < 0.005, "GC {gc}");
    }

    #[test]
    fn a_set_is_reproducible_and_holds_homologs() {
        let a = SearchSet::generate(5, Alphabet::Protein, (3, 100), (50, 120), 0.5);
        let b = SearchSet::generate(5, Alphabet::Protein, (3, 100), (50, 120), 0.5);
        assert_eq!(
            (a.queries.clone(), a.targets.clone()),
            (b.queries, b.targets)
        );
        assert_eq!((a.queries.len(), a.targets.len()), (3, 50));
        for q in &a.queries {
            assert!((50..=150).contains(&q.len()));
        }
        // Homologs align far better than chance: the median of each
        // target's best score against the queries, all homologs or none.
        let m = crate::scoring::Matrix::blosum62();
        let gaps = crate::scoring::Gaps {
            open: 10,
            extend: 1,
        };
        let median_best = |share: f64| {
            let set = SearchSet::generate(9, Alphabet::Protein, (3, 100), (40, 120), share);
            let mut best: Vec<i32> = set
                .targets
                .iter()
                .map(|t| {
                    set.queries
                        .iter()
                        .map(|q| crate::sw_scalar::score(&m.encode(q), &m.encode(t), &m, gaps))
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            best.sort_unstable();
            best[best.len() / 2]
        };
        let (homologs, chance) = (median_best(1.0), median_best(0.0));
        assert!(homologs > 2 * chance, "{homologs} vs {chance}");
    }
}
