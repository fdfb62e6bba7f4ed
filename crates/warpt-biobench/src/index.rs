//! The reference's minimizer index: every (w, k)-minimizer of every
//! contig, sorted by hash and bucketed by the hash's top bits, so a read's
//! minimizer finds its places on the reference in one small bucket;
//! minimizers that occur too often (tandem repeats) are dropped, as
//! minimap2's `-f` does.

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
    /// Where each bucket (the hashes sharing their top `64 - shift` bits)
    /// starts in `hashes`, and one past the last bucket's end. About one
    /// minimizer a bucket: a lookup is two or three cache misses where a
    /// binary search over the whole table was a chain of about twenty
    /// (a third of `read_map`'s time on a 1 Mb reference). The hashes are
    /// [`crate::kmer::fmix`] of the k-mers, so their top bits are uniform.
    buckets: Vec<usize>,
    shift: u32,
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
        let (buckets, shift) = buckets(&hashes);
        Index {
            k,
            w,
            hashes,
            hits,
            buckets,
            shift,
            max_occurrences,
        }
    }

    /// Where minimizer `hash` occurs on the reference (empty if nowhere or
    /// too often).
    pub fn lookup(&self, hash: u64) -> &[Hit] {
        let b = (hash >> self.shift) as usize;
        let (start, end) = (self.buckets[b], self.buckets[b + 1]);
        let bucket = &self.hashes[start..end];
        let from = bucket.partition_point(|&h| h < hash);
        let to = from + bucket[from..].partition_point(|&h| h == hash);
        &self.hits[start + from..start + to]
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

/// The bucket starts of sorted `hashes` (see [`Index`]'s `buckets`) and
/// the shift that takes a hash to its bucket: about as many buckets as
/// hashes, at least two, at most 2^24 (a larger index scans a few more
/// entries a bucket rather than holding a table as large as itself).
fn buckets(hashes: &[u64]) -> (Vec<usize>, u32) {
    let bits = hashes.len().max(2).next_power_of_two().ilog2().min(24);
    let shift = 64 - bits;
    let count = 1usize << bits;
    let mut starts = Vec::with_capacity(count + 1);
    for (i, &h) in hashes.iter().enumerate() {
        // Every bucket up to this hash's own starts here (empty ones too).
        while starts.len() <= (h >> shift) as usize {
            starts.push(i);
        }
    }
    starts.resize(count + 1, hashes.len());
    (starts, shift)
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

    #[test]
    fn a_lookup_finds_exactly_the_hits_a_search_of_the_whole_table_finds() {
        let genome = Genome {
            seq: crate::genome::reference(5, 30_000),
            contigs: vec![("a".into(), 0)],
        };
        let index = Index::build(&genome, 15, 5);
        let whole = |hash: u64| {
            let from = index.hashes.partition_point(|&h| h < hash);
            let to = from + index.hashes[from..].partition_point(|&h| h == hash);
            &index.hits[from..to]
        };
        let mut probes: Vec<u64> = index.hashes.clone();
        // Hashes that are not there: beside each present one, and the ends.
        probes.extend(
            index
                .hashes
                .iter()
                .flat_map(|&h| [h.wrapping_add(1), h.wrapping_sub(1)]),
        );
        probes.extend([0, u64::MAX, 1 << 63]);
        let mut repeated = 0;
        for hash in probes {
            assert_eq!(index.lookup(hash), whole(hash), "hash {hash:#x}");
            repeated += usize::from(index.lookup(hash).len() > 1);
        }
        // The runs of one hash (a minimizer at several places) are found whole.
        assert!(repeated > 0);
        // Empty and one-entry tables.
        for n in [0, 1] {
            let (starts, shift) = buckets(&index.hashes[..n]);
            assert_eq!(starts.len(), (1 << (64 - shift)) + 1);
            assert!(starts.iter().all(|&s| s <= n));
        }
    }
}
