//! The reference's minimizer index: every (w, k)-minimizer of every
//! contig, sorted by hash, so a read's minimizers find their places on
//! the reference by binary search; minimizers that occur too often
//! (tandem repeats) are dropped, as minimap2's `-f` does.

use rayon::prelude::*;

use crate::dataset::Genome;
use crate::minimizer::{self, Minimizer};

/// One occurrence of a minimizer on the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// Global position of the k-mer's start.
    pub pos: u32,
    /// Its canonical spelling is on the reverse strand.
    pub reverse: bool,
}

/// Minimizers of a reference, searchable by hash.
pub struct Index {
    /// k-mer length.
    pub k: usize,
    /// Window: one minimizer per `w` consecutive k-mers.
    pub w: usize,
    hashes: Vec<u64>,
    hits: Vec<Hit>,
    /// Minimizers occurring more often than this were dropped.
    pub max_occurrences: usize,
}

impl Index {
    /// Indexes every contig of `genome` (no minimizer spans two). The
    /// most repeated minimizers are dropped: those occurring more than
    /// `max(20, the 99.98th percentile of occurrence counts)` times.
    pub fn build(genome: &Genome, k: usize, w: usize) -> Self {
        let mut all: Vec<(u64, Hit)> = (0..genome.contigs.len())
            .into_par_iter()
            .flat_map_iter(|i| {
                let start = genome.contigs[i].1;
                let mut m: Vec<Minimizer> = Vec::new();
                minimizer::sketch(&genome.seq[start..genome.contig_end(i)], k, w, &mut m);
                m.into_iter().map(move |m| {
                    (
                        m.hash,
                        Hit {
                            pos: start as u32 + m.pos,
                            reverse: m.reverse,
                        },
                    )
                })
            })
            .collect();
        all.par_sort_unstable_by_key(|&(h, hit)| (h, hit.pos));
        let mut occurrences: Vec<usize> = all
            .chunk_by(|a, b| a.0 == b.0)
            .map(|run| run.len())
            .collect();
        occurrences.sort_unstable();
        let percentile = occurrences
            .get(occurrences.len() * 9998 / 10000)
            .copied()
            .unwrap_or(1);
        let max_occurrences = percentile.max(20);
        let mut hashes = Vec::with_capacity(all.len());
        let mut hits = Vec::with_capacity(all.len());
        for run in all.chunk_by(|a, b| a.0 == b.0) {
            if run.len() <= max_occurrences {
                hashes.extend(run.iter().map(|r| r.0));
                hits.extend(run.iter().map(|r| r.1));
            }
        }
        Index {
            k,
            w,
            hashes,
            hits,
            max_occurrences,
        }
    }

    /// Where minimizer `hash` occurs on the reference (empty if nowhere or
    /// too often).
    pub fn lookup(&self, hash: u64) -> &[Hit] {
        let from = self.hashes.partition_point(|&h| h < hash);
        let to = from + self.hashes[from..].partition_point(|&h| h == hash);
        &self.hits[from..to]
    }

    /// Minimizers kept.
    pub fn len(&self) -> usize {
        self.hits.len()
    }

    /// Nothing indexed (a reference shorter than a window).
    pub fn is_empty(&self) -> bool {
        self.hits.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_minimizer_of_a_substring_at_its_place() {
        let a = crate::genome::reference(3, 20_000);
        let b = crate::genome::reference(4, 5_000);
        let mut seq = a.clone();
        seq.extend_from_slice(&b);
        let genome = Genome {
            seq,
            contigs: vec![("a".into(), 0), ("b".into(), a.len())],
        };
        let index = Index::build(&genome, 15, 10);
        assert!(!index.is_empty());
        // A stretch of contig b: its minimizers point back to it.
        let piece = &b[1000..1300];
        let mut m = Vec::new();
        minimizer::sketch(piece, 15, 10, &mut m);
        let mut found = 0;
        for x in &m {
            let hits = index.lookup(x.hash);
            if hits.iter().any(|h| {
                h.pos as usize == a.len() + 1000 + x.pos as usize && h.reverse == x.reverse
            }) {
                found += 1;
            }
        }
        // All but those in over-repeated k-mers.
        assert!(found * 10 >= m.len() * 9, "{found} of {}", m.len());
    }
}
