//! Reads threaded onto the unitigs of an assembly graph: each solid k-mer
//! lies in exactly one unitig, so a read's k-mers say, without alignment,
//! which unitigs it touches, where its 5' base falls on each and which way
//! it reads. Pairs whose mates both fall on one unitig give the library's
//! insert size, which the path extension ([`crate::extend`]) needs to
//! judge the pairs that cross unitigs.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use rayon::prelude::*;

use crate::debruijn::{KmerHasher, Unitig};
use crate::kmer::for_each_kmer;

/// Unitigs one read is placed on at most (a read spans a few short ones).
const MAX_HITS: usize = 16;
/// Pairs within one unitig needed before the insert size is trusted.
const MIN_INSERTS: usize = 50;
/// The insert window: the median plus or minus this many robust standard
/// deviations.
const INSERT_SDS: f64 = 4.0;

/// Where a read lies on one unitig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The unitig's index.
    pub unitig: u32,
    /// The unitig coordinate of the read's first (5') base; outside the
    /// unitig when the read starts on another one.
    pub pos5: i64,
    /// The read runs along the unitig's spelling (else against it).
    pub along: bool,
    /// The read's k-mers found on the unitig where this placement puts
    /// them.
    pub kmers: u32,
    /// The read's k-mers this placement puts within the unitig.
    pub expected: u32,
}

impl Hit {
    /// Whether the read matches the unitig where it is placed (a third
    /// of its k-mers there found: sequencing errors cost up to k each),
    /// rather than sharing a few k-mers with it at one end.
    pub fn solid(&self) -> bool {
        3 * self.kmers >= self.expected
    }
}

/// The library's fragment lengths, as measured on pairs within one unitig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insert {
    /// Median fragment length, 5' base to 5' base.
    pub median: i64,
    /// Shortest fragment length taken for a pair.
    pub lo: i64,
    /// Longest fragment length taken for a pair.
    pub hi: i64,
}

/// Every mate's hits: mate `2 * i + side` of pair `i`.
pub struct Threads {
    hits: Vec<Hit>,
    start: Vec<u32>,
    /// The mates touching each unitig.
    on: Vec<Vec<u32>>,
    /// The insert size, when enough pairs measured it.
    pub insert: Option<Insert>,
}

/// The canonical k-mers of the unitigs: where each lies and whether the
/// unitig spells it canonically.
type Index = HashMap<u64, (u32, u32, bool), BuildHasherDefault<KmerHasher>>;

fn index(unitigs: &[Unitig], k: usize) -> Index {
    let total = unitigs.iter().map(|u| u.seq.len() + 1 - k).sum();
    let mut index = Index::with_capacity_and_hasher(total, Default::default());
    for (id, u) in unitigs.iter().enumerate() {
        for_each_kmer::<u64>(&u.seq, k, |at, fwd, rev| {
            index.insert(fwd.min(rev), (id as u32, at as u32, fwd <= rev));
        });
    }
    index
}

/// The unitigs `read` touches, the first k-mer on each placing it.
fn place(index: &Index, lengths: &[u32], read: &[u8], k: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for_each_kmer::<u64>(read, k, |at, fwd, rev| {
        let Some(&(unitig, off, canonical_fwd)) = index.get(&fwd.min(rev)) else {
            return;
        };
        let along = (fwd <= rev) == canonical_fwd;
        let (off, at, k) = (off as i64, at as i64, k as i64);
        let pos5 = if along { off - at } else { off + at + k - 1 };
        if let Some(h) = hits.iter_mut().find(|h| h.unitig == unitig) {
            // The same placement, give or take an indel.
            if h.along == along && (h.pos5 - pos5).abs() <= 2 {
                h.kmers += 1;
            }
            return;
        }
        if hits.len() >= MAX_HITS {
            return;
        }
        let (len, reach) = (lengths[unitig as usize] as i64, read.len() as i64);
        let (from, to) = if along {
            (pos5, pos5 + reach)
        } else {
            (pos5 + 1 - reach, pos5 + 1)
        };
        let within = to.min(len) - from.max(0);
        hits.push(Hit {
            unitig,
            pos5,
            along,
            kmers: 1,
            expected: (within - k + 1).max(1) as u32,
        });
    });
    hits
}

impl Threads {
    /// Threads `pairs` (first and second mates, the same length; empty for
    /// single-end reads) onto `unitigs`, on the current rayon pool.
    pub fn new(unitigs: &[Unitig], k: usize, first: &[&[u8]], second: &[&[u8]]) -> Self {
        let index = index(unitigs, k);
        let lengths: Vec<u32> = unitigs.iter().map(|u| u.seq.len() as u32).collect();
        let pairs = if second.len() == first.len() {
            first.len()
        } else {
            0
        };
        let placed: Vec<Vec<Hit>> = (0..2 * pairs)
            .into_par_iter()
            .map(|m| {
                let read = if m % 2 == 0 {
                    first[m / 2]
                } else {
                    second[m / 2]
                };
                place(&index, &lengths, read, k)
            })
            .collect();
        let mut threads = Threads {
            hits: Vec::with_capacity(placed.iter().map(Vec::len).sum()),
            start: Vec::with_capacity(placed.len() + 1),
            on: vec![Vec::new(); unitigs.len()],
            insert: None,
        };
        threads.start.push(0);
        for (m, hits) in placed.into_iter().enumerate() {
            for h in &hits {
                threads.on[h.unitig as usize].push(m as u32);
            }
            threads.hits.extend(hits);
            threads.start.push(threads.hits.len() as u32);
        }
        threads.insert = threads.measure_insert();
        threads
    }

    /// Mate `m`'s hits.
    pub fn hits(&self, m: u32) -> &[Hit] {
        let m = m as usize;
        &self.hits[self.start[m] as usize..self.start[m + 1] as usize]
    }

    /// The mates touching unitig `u`.
    pub fn on(&self, u: u32) -> &[u32] {
        &self.on[u as usize]
    }

    /// Pairs with both mates on some unitig (not necessarily the same).
    pub fn pairs_placed(&self) -> usize {
        (0..self.start.len().saturating_sub(1) / 2)
            .filter(|&i| {
                !self.hits(2 * i as u32).is_empty() && !self.hits(2 * i as u32 + 1).is_empty()
            })
            .count()
    }

    /// The fragment lengths of pairs facing each other on one unitig:
    /// median and a window of [`INSERT_SDS`] robust deviations around it.
    fn measure_insert(&self) -> Option<Insert> {
        let mut lengths: Vec<i64> = Vec::new();
        for i in 0..(self.start.len() - 1) / 2 {
            let (a, b) = (self.hits(2 * i as u32), self.hits(2 * i as u32 + 1));
            for ha in a {
                if let Some(hb) = b
                    .iter()
                    .find(|h| h.unitig == ha.unitig && h.along != ha.along)
                {
                    let (f, r) = if ha.along { (ha, hb) } else { (hb, ha) };
                    let length = r.pos5 - f.pos5 + 1;
                    if length > 0 {
                        lengths.push(length);
                    }
                    break;
                }
            }
        }
        if lengths.len() < MIN_INSERTS {
            return None;
        }
        lengths.sort_unstable();
        let median = lengths[lengths.len() / 2];
        let mut deviations: Vec<i64> = lengths.iter().map(|l| (l - median).abs()).collect();
        deviations.sort_unstable();
        let sd = (1.4826 * deviations[deviations.len() / 2] as f64).max(1.0);
        let spread = (INSERT_SDS * sd).ceil() as i64;
        Some(Insert {
            median,
            lo: (median - spread).max(1),
            hi: median + spread,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debruijn::Graph;
    use crate::genome::revcomp;
    use crate::kmer::Counts;

    #[test]
    fn mates_land_where_they_were_drawn_and_give_the_insert() {
        let genome = crate::genome::reference(23, 4000);
        let (read, frag) = (100, 300);
        let (mut first, mut second) = (Vec::new(), Vec::new());
        for start in (0..genome.len() - frag).step_by(3) {
            first.push(genome[start..start + read].to_vec());
            second.push(revcomp(&genome[start + frag - read..start + frag]));
        }
        let all: Vec<&[u8]> = first.iter().chain(&second).map(|r| r.as_slice()).collect();
        let counts = Counts::<u64>::count(&all, 31, 20_000);
        let graph = Graph::new(&counts, 2);
        let unitigs = graph.unitigs();
        let f: Vec<&[u8]> = first.iter().map(|r| r.as_slice()).collect();
        let s: Vec<&[u8]> = second.iter().map(|r| r.as_slice()).collect();
        let threads = Threads::new(&unitigs, 31, &f, &s);
        let insert = threads.insert.expect("enough pairs within a unitig");
        assert_eq!(insert.median, frag as i64, "{insert:?}");
        // Every first mate's hit spells the read on its unitig.
        for (i, r) in first.iter().enumerate() {
            for h in threads.hits(2 * i as u32) {
                let u = &unitigs[h.unitig as usize].seq;
                let (len, p) = (u.len() as i64, h.pos5);
                if h.along && p >= 0 && p + read as i64 <= len {
                    assert_eq!(&u[p as usize..p as usize + read], r.as_slice());
                } else if !h.along && p < len && p + 1 >= read as i64 {
                    let on = &u[(p + 1) as usize - read..=p as usize];
                    assert_eq!(revcomp(on), *r);
                }
            }
        }
        assert_eq!(threads.pairs_placed(), first.len());
    }
}
