//! Contigs held against the reference, QUAST's way cut down to k-mers:
//! each contig's k-mers that occur once in the reference anchor it there;
//! anchors in a row on one strand and diagonal form an aligned block,
//! which counts when it spans QUAST's shortest alignment (65 bases): a
//! shorter one is a repeat copy's few differing bases, which QUAST reads
//! as mismatches in the alignment around them, not as a place the contig
//! jumps to.
//! Genome fraction is the share of reference bases inside some block;
//! a misassembly is a break between consecutive blocks of one contig
//! that jumps more than 1 kb, flips strand or changes contig (QUAST's
//! "extensive misassembly").

use std::collections::HashMap;

use crate::dataset::Genome;
use crate::kmer::for_each_kmer;

/// k-mer length of the anchors.
pub const ANCHOR_K: usize = 31;
/// A jump between blocks larger than this is a misassembly.
pub const RELOCATION: i64 = 1000;
/// Anchors a block needs to count (fewer: chance or a repeat's edge).
const MIN_ANCHORS: usize = 5;
/// Reference bases a block must span to count: QUAST's default
/// `--min-alignment`.
pub const MIN_SPAN: usize = 65;
/// Diagonal drift allowed within a block (the donor's indels).
const DRIFT: i64 = 50;

/// The figures of an assessment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Assessment {
    /// Reference bases covered by aligned blocks, % of the reference.
    pub genome_fraction_pct: f64,
    /// Breaks within contigs (relocations, inversions, translocations).
    pub misassemblies: usize,
    /// Contigs with no aligned block.
    pub unaligned: usize,
}

/// Each k-mer of `seq` as (position, canonical word, on the forward
/// strand).
fn kmers(seq: &[u8], mut f: impl FnMut(usize, u64, bool)) {
    for_each_kmer::<u64>(seq, ANCHOR_K, |at, fwd, rev| {
        if fwd != rev {
            f(at, fwd.min(rev), fwd <= rev);
        }
    });
}

/// Assesses `contigs` against `genome`.
pub fn assess(genome: &Genome, contigs: &[Vec<u8>]) -> Assessment {
    // Reference k-mer → (position, forward), or None when repeated.
    let mut anchors: HashMap<u64, Option<(u32, bool)>> = HashMap::new();
    kmers(&genome.seq, |pos, w, fwd| {
        anchors
            .entry(w)
            .and_modify(|e| *e = None)
            .or_insert(Some((pos as u32, fwd)));
    });
    let mut covered = vec![false; genome.seq.len()];
    let (mut misassemblies, mut unaligned) = (0, 0);
    for contig in contigs {
        // Blocks: (same strand, diagonal, first ref pos, last ref pos, anchors).
        let mut blocks: Vec<(bool, i64, usize, usize, usize)> = Vec::new();
        kmers(contig, |pos, w, fwd| {
            let Some(Some((rpos, rfwd))) = anchors.get(&w) else {
                return;
            };
            let same = fwd == *rfwd;
            let diagonal = if same {
                *rpos as i64 - pos as i64
            } else {
                *rpos as i64 + pos as i64
            };
            let r = *rpos as usize;
            match blocks.last_mut() {
                Some(b) if b.0 == same && (b.1 - diagonal).abs() <= DRIFT => {
                    b.1 = diagonal;
                    b.2 = b.2.min(r);
                    b.3 = b.3.max(r);
                    b.4 += 1;
                }
                _ => blocks.push((same, diagonal, r, r, 1)),
            }
        });
        blocks.retain(|b| b.4 >= MIN_ANCHORS && b.3 + ANCHOR_K - b.2 >= MIN_SPAN);
        if blocks.is_empty() {
            unaligned += 1;
            continue;
        }
        for b in &blocks {
            covered[b.2..(b.3 + ANCHOR_K).min(genome.seq.len())].fill(true);
        }
        for pair in blocks.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let other_contig = genome.locate(a.2).0 != genome.locate(b.2).0;
            if a.0 != b.0 || (a.1 - b.1).abs() > RELOCATION || other_contig {
                misassemblies += 1;
            }
        }
    }
    let hit = covered.iter().filter(|&&c| c).count();
    Assessment {
        genome_fraction_pct: 100.0 * hit as f64 / genome.seq.len().max(1) as f64,
        misassemblies,
        unaligned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genome::revcomp;

    #[test]
    fn counts_coverage_and_joins_that_are_not_in_the_reference() {
        let seq = crate::genome::reference(31, 20_000);
        let genome = Genome::single("r", seq.clone());
        // Two true contigs, one reverse-complemented: 6 kb of 20.
        let a = seq[1000..4000].to_vec();
        let b = revcomp(&seq[10_000..13_000]);
        let fine = assess(&genome, &[a.clone(), b.clone()]);
        assert_eq!(fine.misassemblies, 0);
        assert!((fine.genome_fraction_pct - 30.0).abs() < 1.0, "{fine:?}");
        // A chimera: the first half of a glued to a piece from 8 kb away.
        let mut chimera = seq[1000..2500].to_vec();
        chimera.extend_from_slice(&seq[10_000..11_500]);
        let bad = assess(&genome, &[chimera, b"ACGTTGCA".repeat(10)]);
        assert_eq!(bad.misassemblies, 1, "{bad:?}");
        assert_eq!(bad.unaligned, 1);
        // 61 bases from elsewhere (a repeat copy's variant, spelled where
        // this copy's own was not assembled) are mismatches, not a jump;
        // 70 are a jump there and back.
        for (piece, jumps) in [(61, 0), (70, 2)] {
            let mut patched = seq[1000..4000].to_vec();
            patched.splice(
                2000..2000 + piece,
                seq[15_000..15_000 + piece].iter().copied(),
            );
            assert_eq!(assess(&genome, &[patched]).misassemblies, jumps, "{piece}");
        }
    }
}
