//! The SIMD Smith-Waterman kernels (striped, one pair at a time; across
//! targets, a whole search) against the scalar reference, on every ISA
//! this CPU has, at every width.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_biobench::scoring::{Gaps, Matrix};
use warpt_biobench::sw_inter::Searcher;
use warpt_biobench::sw_scalar;
use warpt_biobench::sw_striped::{Aligner, Isa, Width};

fn isas() -> Vec<Isa> {
    [Isa::Avx512Bw, Isa::Avx2, Isa::Scalar]
        .into_iter()
        .filter(|i| i.available())
        .collect()
}

/// The gap penalties every kernel is checked with: the default, cheap
/// gaps, free gaps, and opening cheaper than extending.
const GAPS: [Gaps; 4] = [
    Gaps {
        open: 10,
        extend: 1,
    },
    Gaps { open: 3, extend: 2 },
    Gaps { open: 0, extend: 0 },
    Gaps { open: 1, extend: 3 },
];

/// A random sequence over the matrix's first `letters` residues, with a
/// planted copy of `motif` (mutated at every 7th position) when given.
fn random(rng: &mut Xoshiro256PlusPlus, len: usize, letters: u64, motif: Option<&[u8]>) -> Vec<u8> {
    let mut s: Vec<u8> = (0..len).map(|_| (rng.next_u64() % letters) as u8).collect();
    if let Some(m) = motif
        && len > m.len()
    {
        let at = (rng.next_u64() as usize) % (len - m.len());
        for (i, &r) in m.iter().enumerate() {
            s[at + i] = if i % 7 == 3 {
                (r + 1) % letters as u8
            } else {
                r
            };
        }
    }
    s
}

#[test]
fn every_score_equals_the_scalar_reference() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    for (matrix, letters) in [(Matrix::blosum62(), 24), (Matrix::dnafull(), 5)] {
        for gaps in GAPS {
            for case in 0..60 {
                let qlen = 1 + (rng.next_u64() % 300) as usize;
                let tlen = 1 + (rng.next_u64() % 400) as usize;
                let query = random(&mut rng, qlen, letters, None);
                // Half the targets hold a mutated piece of the query, so
                // scores range from noise to long gapped alignments.
                let piece = (case % 2 == 0).then(|| query[..qlen / 2].to_vec());
                let target = random(&mut rng, tlen, letters, piece.as_deref());
                let want = sw_scalar::score(&query, &target, &matrix, gaps);
                for isa in isas() {
                    let got = Aligner::new(isa, &query, &matrix, gaps).score(&target).0;
                    assert_eq!(
                        got,
                        want,
                        "{} {} {gaps:?} case {case}",
                        isa.name(),
                        matrix.name
                    );
                }
            }
        }
    }
}

#[test]
fn saturation_moves_to_wider_lanes_with_the_same_score() {
    let matrix = Matrix::dnafull();
    let gaps = GAPS[0];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let query = random(&mut rng, 1000, 4, None);
    // 1000 matching bases score 5000: past 8 bits, inside 16.
    let (score, width) = Aligner::new(Isa::detect(), &query, &matrix, gaps).score(&query);
    assert_eq!(score, 5000);
    if Isa::detect() != Isa::Scalar {
        assert_eq!(width, Width::I16);
    }
    // 7000 bases score 35000: past 16 bits, so the scalar reference.
    let long = random(&mut rng, 7000, 4, None);
    let (score, width) = Aligner::new(Isa::detect(), &long, &matrix, gaps).score(&long);
    assert_eq!((score, width), (35000, Width::I32));
    // A short match stays in 8 bits.
    let (score, width) =
        Aligner::new(Isa::detect(), &query[..20], &matrix, gaps).score(&query[..20]);
    assert_eq!(score, 100);
    if Isa::detect() != Isa::Scalar {
        assert_eq!(width, Width::U8);
    }
}

#[test]
fn empty_sequences_score_zero() {
    let matrix = Matrix::blosum62();
    let gaps = GAPS[0];
    for isa in isas() {
        assert_eq!(Aligner::new(isa, &[], &matrix, gaps).score(&[1, 2]).0, 0);
        assert_eq!(Aligner::new(isa, &[1, 2], &matrix, gaps).score(&[]).0, 0);
    }
}

#[test]
fn a_search_across_targets_equals_the_scalar_reference_for_every_pair() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(23);
    for (matrix, letters) in [(Matrix::blosum62(), 24), (Matrix::dnafull(), 5)] {
        for gaps in GAPS {
            let qlen = 1 + (rng.next_u64() % 250) as usize;
            let query = random(&mut rng, qlen, letters, None);
            // More targets than one group holds on any ISA, of very different
            // lengths (so groups pad), half holding a piece of the query, one
            // empty, and some long homologs that need 16 bits.
            let mut targets: Vec<Vec<u8>> = (0..150)
                .map(|k| {
                    let len = 1 + (rng.next_u64() % 400) as usize;
                    let qhalf = query.len().div_ceil(2);
                    let piece = (k % 2 == 0).then_some(&query[..qhalf]);
                    random(&mut rng, len, letters, piece)
                })
                .collect();
            targets.push(Vec::new());
            targets.push(query.repeat(3));
            let want: Vec<i32> = targets
                .iter()
                .map(|t| sw_scalar::score(&query, t, &matrix, gaps))
                .collect();
            for isa in isas() {
                let searcher = Searcher::new(isa, &matrix, gaps);
                let packed = searcher.pack(&targets);
                let got = searcher.search(&query, &targets, &packed);
                for (k, (&w, &(g, _))) in want.iter().zip(&got).enumerate() {
                    assert_eq!(g, w, "{} {} {gaps:?} target {k}", isa.name(), matrix.name);
                }
            }
        }
    }
}

#[test]
fn a_search_moves_saturated_pairs_to_wider_lanes_with_the_same_score() {
    let (matrix, gaps) = (Matrix::dnafull(), GAPS[0]);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(29);
    let query = random(&mut rng, 7000, 4, None);
    // Self-matches of 20, 1000 and 7000 bases score 100 (8 bits), 5000
    // (16 bits) and 35000 (past 16 bits: the scalar reference).
    let targets = vec![query[..20].to_vec(), query[..1000].to_vec(), query.clone()];
    let searcher = Searcher::new(Isa::detect(), &matrix, gaps);
    let got = searcher.search(&query, &targets, &searcher.pack(&targets));
    let scores: Vec<i32> = got.iter().map(|s| s.0).collect();
    assert_eq!(scores, [100, 5000, 35000]);
    if Isa::detect() == Isa::Scalar {
        eprintln!("not run here: no AVX2 or AVX-512BW, every width is the scalar reference");
    } else {
        let widths: Vec<Width> = got.iter().map(|s| s.1).collect();
        assert_eq!(widths, [Width::U8, Width::I16, Width::I32]);
    }
}

#[test]
fn a_search_with_an_empty_query_scores_zero() {
    let matrix = Matrix::blosum62();
    let targets = vec![vec![1, 2, 3], Vec::new()];
    for isa in isas() {
        let searcher = Searcher::new(isa, &matrix, GAPS[0]);
        let got = searcher.search(&[], &targets, &searcher.pack(&targets));
        assert_eq!(got.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 0]);
    }
}
