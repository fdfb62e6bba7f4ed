//! De Bruijn graph assembly: the solid canonical k-mers of the reads
//! (seen at least `min_count` times; rarer ones are sequencing errors)
//! are the nodes, k-1 overlaps the edges. Maximal non-branching paths
//! become unitigs; short dead-end unitigs (tips, from errors that
//! survived the filter) and the weaker branch of a two-path bubble (a
//! heterozygous site or an error) are removed, and the unitigs rebuilt.
//! The graph is never stored: neighbours are looked up in the count table.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::kmer::{CODE, Counts, fmix};

/// Unitigs covered below this multiple of the median coverage hold one
/// copy of their sequence (a bubble's branches together too).
pub const ONE_COPY: f64 = 1.5;

/// A hasher for k-mers that are already well-mixed by [`fmix`].
#[derive(Default)]
pub struct KmerHasher(u64);

impl Hasher for KmerHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = fmix(self.0 ^ b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = fmix(x);
    }
}

type KmerSet = HashSet<u64, BuildHasherDefault<KmerHasher>>;

/// A k-mer read in one direction: its 2-bit word and its reverse
/// complement's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Oriented {
    pub(crate) fwd: u64,
    pub(crate) rev: u64,
}

impl Oriented {
    fn canonical(self) -> u64 {
        self.fwd.min(self.rev)
    }
    pub(crate) fn flip(self) -> Self {
        Oriented {
            fwd: self.rev,
            rev: self.fwd,
        }
    }
}

/// A maximal non-branching path.
#[derive(Debug, Clone)]
pub struct Unitig {
    /// Its bases.
    pub seq: Vec<u8>,
    /// Mean count of its k-mers.
    pub coverage: f64,
    /// Its first k-mer, as it is read in `seq`.
    pub(crate) first: Oriented,
    /// Its last k-mer, as it is read in `seq`.
    pub(crate) last: Oriented,
}

/// The graph of one assembly.
pub struct Graph<'c> {
    counts: &'c Counts<u64>,
    k: usize,
    min_count: u32,
    removed: KmerSet,
}

/// What the clean-up removed, for the details.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cleaning {
    /// Tip unitigs removed.
    pub tips: usize,
    /// Bubble branches removed.
    pub bubbles: usize,
}

impl<'c> Graph<'c> {
    /// The graph of the k-mers in `counts` seen at least `min_count`
    /// times (k odd, so no k-mer is its own reverse complement).
    pub fn new(counts: &'c Counts<u64>, min_count: u32) -> Self {
        Graph {
            counts,
            k: counts.k,
            min_count,
            removed: KmerSet::default(),
        }
    }

    fn alive(&self, canonical: u64) -> bool {
        self.counts.get(canonical) >= self.min_count && !self.removed.contains(&canonical)
    }

    /// k.
    pub fn k(&self) -> usize {
        self.k
    }

    fn mask(&self) -> u64 {
        if self.k == 32 {
            u64::MAX
        } else {
            (1u64 << (2 * self.k)) - 1
        }
    }

    /// The live k-mers that follow `o`.
    pub(crate) fn next(&self, o: Oriented) -> impl Iterator<Item = Oriented> + '_ {
        let mask = self.mask();
        let shift = 2 * (self.k as u32 - 1);
        (0..4u64)
            .map(move |c| Oriented {
                fwd: ((o.fwd << 2) | c) & mask,
                rev: (o.rev >> 2) | ((3 - c) << shift),
            })
            .filter(|n| self.alive(n.canonical()))
    }

    fn out_degree(&self, o: Oriented) -> usize {
        self.next(o).count()
    }

    fn in_degree(&self, o: Oriented) -> usize {
        self.out_degree(o.flip())
    }

    /// Every unitig of the live graph, each once (in one of its two
    /// orientations).
    pub fn unitigs(&self) -> Vec<Unitig> {
        let mut seen = KmerSet::default();
        let mut out = Vec::new();
        let mut nodes: Vec<u64> = self
            .counts
            .iter()
            .filter(|&(w, c)| c >= self.min_count && !self.removed.contains(&w))
            .map(|(w, _)| w)
            .collect();
        // Table order depends on the thread schedule; the assembly must not.
        nodes.sort_unstable();
        for w in nodes {
            if seen.contains(&w) {
                continue;
            }
            seen.insert(w);
            let start = Oriented {
                fwd: w,
                rev: self.revcomp(w),
            };
            let right = self.walk(start, &mut seen);
            let left = self.walk(start.flip(), &mut seen);
            let mut path: Vec<Oriented> = left.into_iter().rev().map(Oriented::flip).collect();
            path.push(start);
            path.extend(right);
            out.push(self.spell(&path));
        }
        out
    }

    /// Extends from `from` while the path does not branch.
    fn walk(&self, from: Oriented, seen: &mut KmerSet) -> Vec<Oriented> {
        let mut path = Vec::new();
        let mut cur = from;
        loop {
            let mut next = self.next(cur);
            let (Some(n), None) = (next.next(), next.next()) else {
                break;
            };
            if self.in_degree(n) != 1 || seen.contains(&n.canonical()) {
                break;
            }
            seen.insert(n.canonical());
            path.push(n);
            cur = n;
        }
        path
    }

    fn spell(&self, path: &[Oriented]) -> Unitig {
        let k = self.k;
        let mut seq = decode(path[0].fwd, k);
        for o in &path[1..] {
            seq.push(b"ACGT"[(o.fwd & 3) as usize]);
        }
        let total: u64 = path
            .iter()
            .map(|o| self.counts.get(o.canonical()) as u64)
            .sum();
        Unitig {
            seq,
            coverage: total as f64 / path.len() as f64,
            first: path[0],
            last: path[path.len() - 1],
        }
    }

    fn revcomp(&self, w: u64) -> u64 {
        let mut r = 0u64;
        let mut x = w;
        for _ in 0..self.k {
            r = (r << 2) | (3 - (x & 3));
            x >>= 2;
        }
        r
    }

    fn remove(&mut self, u: &Unitig) {
        let k = self.k;
        let mut w = 0u64;
        let mask = self.mask();
        for (i, &c) in u.seq.iter().enumerate() {
            w = ((w << 2) | (CODE[c as usize] & 3) as u64) & mask;
            if i + 1 >= k {
                let canonical = w.min(self.revcomp(w));
                self.removed.insert(canonical);
            }
        }
    }

    /// Removes tips (dead-end unitigs shorter than 2k attached to a
    /// branch) and bubbles (two unitigs between the same two k-mers,
    /// lengths within 10 bases: the lower-coverage one goes), for up to
    /// `rounds` rounds or until nothing changes.
    pub fn clean(&mut self, rounds: usize) -> Cleaning {
        let mut done = Cleaning::default();
        for _ in 0..rounds {
            let unitigs = self.unitigs();
            let mut changed = false;
            for u in &unitigs {
                let (ins, outs) = (self.in_degree(u.first), self.out_degree(u.last));
                let dead_end = ins == 0 || outs == 0;
                let attached = ins + outs > 0;
                if dead_end && attached && u.seq.len() < 2 * self.k {
                    self.remove(u);
                    done.tips += 1;
                    changed = true;
                }
            }
            // Bubbles: unitigs with one k-mer before and one after, keyed
            // by those two (in one orientation for both spellings).
            // The coverage of the unitigs each end k-mer closes.
            let mut ends: HashMap<u64, f64> = HashMap::with_capacity(2 * unitigs.len());
            for u in &unitigs {
                ends.insert(u.first.canonical(), u.coverage);
                ends.insert(u.last.canonical(), u.coverage);
            }
            let mut groups: HashMap<(u64, u64), (Vec<&Unitig>, f64)> = HashMap::new();
            for u in &unitigs {
                let mut before = self.next(u.first.flip());
                let mut after = self.next(u.last);
                let (Some(b), None, Some(a), None) =
                    (before.next(), before.next(), after.next(), after.next())
                else {
                    continue;
                };
                let b = b.flip();
                let key = (b.fwd, a.fwd).min((a.rev, b.rev));
                let flank = |o: Oriented| ends.get(&o.canonical()).copied().unwrap_or(f64::MAX);
                groups
                    .entry(key)
                    .or_insert_with(|| (Vec::new(), flank(b).max(flank(a))))
                    .0
                    .push(u);
            }
            let one_copy = ONE_COPY * median_coverage(&unitigs, self.k);
            for (members, flank) in groups.values() {
                // Branches between single-copy flanks: a heterozygous site
                // or an error. Between a repeat's flanks they can be its
                // copies' differences, all real.
                if members.len() < 2 || *flank >= one_copy {
                    continue;
                }
                let best = members
                    .iter()
                    .max_by(|x, y| x.coverage.total_cmp(&y.coverage))
                    .map(|u| (u.seq.len(), u.first));
                for u in members {
                    if let Some((len, first)) = best
                        && u.first != first
                        && u.seq.len().abs_diff(len) <= 10
                    {
                        self.remove(u);
                        done.bubbles += 1;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        done
    }
}

fn decode(w: u64, k: usize) -> Vec<u8> {
    (0..k)
        .rev()
        .map(|i| b"ACGT"[((w >> (2 * i)) & 3) as usize])
        .collect()
}

/// The coverage half of the unitigs' k-mers lie below: that of sequence
/// present once in the genome (heterozygous sites at half of it, repeats
/// at a multiple).
pub fn median_coverage(unitigs: &[Unitig], k: usize) -> f64 {
    let mut by: Vec<(f64, usize)> = unitigs
        .iter()
        .map(|u| (u.coverage, u.seq.len() + 1 - k))
        .collect();
    by.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = by.iter().map(|b| b.1).sum::<usize>() / 2;
    let mut acc = 0;
    for (c, n) in by {
        acc += n;
        if acc > half {
            return c;
        }
    }
    0.0
}

/// N50: the length of the contig at which the contigs, longest first,
/// reach half the total length.
pub fn n50(lengths: &[usize]) -> usize {
    let mut sorted = lengths.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let total: usize = sorted.iter().sum();
    let mut acc = 0;
    for l in sorted {
        acc += l;
        if 2 * acc >= total {
            return l;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;

    use super::*;
    use crate::genome::revcomp;

    #[test]
    fn error_free_reads_of_a_unique_sequence_assemble_into_it() {
        let genome = crate::genome::reference(21, 3000);
        // Genome k-mers are unique here only outside its repeats, so
        // take a stretch checked to have no repeated 31-mer.
        let mut reads: Vec<Vec<u8>> = Vec::new();
        for start in (0..genome.len() - 100).step_by(7) {
            let r = genome[start..start + 100].to_vec();
            reads.push(if start % 2 == 0 { r } else { revcomp(&r) });
        }
        let refs: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
        let counts = Counts::<u64>::count(&refs, 31, 10_000);
        let mut graph = Graph::new(&counts, 2);
        graph.clean(3);
        let unitigs = graph.unitigs();
        let longest = unitigs.iter().max_by_key(|u| u.seq.len()).unwrap();
        // Every unitig is a piece of the genome, one strand or the other.
        let text = String::from_utf8(genome.clone()).unwrap();
        let rc = String::from_utf8(revcomp(&genome)).unwrap();
        for u in &unitigs {
            let s = String::from_utf8(u.seq.clone()).unwrap();
            assert!(text.contains(&s) || rc.contains(&s), "{s}");
        }
        assert!(longest.seq.len() > 500, "{}", longest.seq.len());
        assert_eq!(n50(&[10, 5, 3, 2]), 10);
        assert_eq!(n50(&[4, 4, 4, 4]), 4);
        assert_eq!(n50(&[]), 0);
    }

    #[test]
    fn a_bubble_and_a_tip_are_removed() {
        let genome = crate::genome::reference(22, 2000);
        let mut alt = genome.clone();
        alt[1000] = if alt[1000] == b'A' { b'C' } else { b'A' };
        let mut reads: Vec<Vec<u8>> = Vec::new();
        for start in (0..genome.len() - 100).step_by(5) {
            reads.push(genome[start..start + 100].to_vec());
            // The minor allele at a third of the coverage.
            if start % 15 == 0 {
                reads.push(alt[start..start + 100].to_vec());
            }
        }
        // An error read twice: a tip off the main path.
        let mut err = genome[500..600].to_vec();
        err[95] = if err[95] == b'G' { b'T' } else { b'G' };
        reads.push(err.clone());
        reads.push(err);
        let refs: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
        let counts = Counts::<u64>::count(&refs, 31, 10_000);
        let mut graph = Graph::new(&counts, 2);
        let before = graph.unitigs().len();
        let cleaned = graph.clean(4);
        assert!(cleaned.bubbles >= 1 && cleaned.tips >= 1, "{cleaned:?}");
        let after = graph.unitigs();
        assert!(after.len() < before, "{} -> {}", before, after.len());
    }

    #[test]
    fn a_repeats_copies_differing_by_a_base_both_stay() {
        // A, R, B, R', C: R' is R with one base changed, so the graph has
        // a bubble between the copies' shared (twice-covered) stretches.
        // It is two copies' difference, not an error: both branches stay.
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let piece = |rng: &mut _, n| crate::seqgen::sequence(rng, crate::seqgen::Alphabet::Dna, n);
        let (a, r, b, c) = (
            piece(&mut rng, 600),
            piece(&mut rng, 300),
            piece(&mut rng, 600),
            piece(&mut rng, 600),
        );
        let mut r2 = r.clone();
        r2[150] = if r2[150] == b'A' { b'C' } else { b'A' };
        let genome: Vec<u8> = [&a, &r, &b, &r2, &c]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        let reads: Vec<Vec<u8>> = (0..genome.len() - 100)
            .step_by(3)
            .map(|s| genome[s..s + 100].to_vec())
            .collect();
        let refs: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
        let counts = Counts::<u64>::count(&refs, 31, 10_000);
        let mut graph = Graph::new(&counts, 2);
        graph.clean(4);
        let text: Vec<String> = graph
            .unitigs()
            .iter()
            .flat_map(|u| [u.seq.clone(), revcomp(&u.seq)])
            .map(|s| String::from_utf8(s).unwrap())
            .collect();
        for copy in [&r, &r2] {
            let around = String::from_utf8(copy[140..161].to_vec()).unwrap();
            assert!(text.iter().any(|t| t.contains(&around)), "{around} lost");
        }
    }
}
