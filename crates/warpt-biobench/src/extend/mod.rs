//! Pair-guided path extension (the idea of SPAdes' exSPAnder and ABySS's
//! pair step, cut down): the cleaned graph's unitigs are joined into longer
//! contigs by walking out from each single-copy unitig, longest first,
//! while the way on is clear:
//!
//! 1. one successor (unless the walk is leaving a repeat and pairs from a
//!    single-copy unitig just behind deny it: its own way was lost);
//! 2. the successor read pairs vouch for — one mate on a single-copy
//!    unitig behind on the walk, the other on the successor, facing each
//!    other at the library's insert size — the others (nearly) none;
//! 3. across a tangle (a tandem repeat whose copies differ, a complex
//!    bubble): the way through the graph to the nearest single-copy unitig
//!    pairs vouch for at that distance;
//! 4. round a tandem repeat's cycle as often as its coverage counts copies,
//!    then out;
//! 5. a bubble between single-copy flanks (a heterozygous site): the
//!    better-covered branch.
//!
//! Repeat copies shorter than the insert, or differing often enough, are
//! crossed that way. A walk that reaches a single-copy unitig another walk
//! holds at its end joins it. Every k-mer of a walk is a graph k-mer, so
//! contigs hold no gap letters and every base is the reads'.

mod choose;

use std::collections::{HashMap, VecDeque};

use crate::debruijn::{Graph, ONE_COPY, Oriented, Unitig, median_coverage};
use crate::threading::{Insert, Threads};

/// Single-copy unitigs are at least this many times k long.
const MIN_UNIQUE: usize = 2;
/// Times one walk may pass one repeat unitig (a collapsed tandem repeat).
const MAX_VISITS: usize = 30;

/// A unitig read along its spelling or against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node {
    id: u32,
    along: bool,
}

impl Node {
    fn flip(self) -> Self {
        Node {
            id: self.id,
            along: !self.along,
        }
    }
}

/// What the extension did, for the result's details.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extension {
    /// Pairs with both mates threaded onto unitigs.
    pub pairs_placed: usize,
    /// The measured median insert; 0 when pairs were not used.
    pub insert_median: usize,
    /// Branches a walk took because pairs vouched for one.
    pub by_pairs: usize,
    /// Tandem repeats a walk went round and out of.
    pub by_loop: usize,
    /// Bubbles a walk crossed on the better-covered branch.
    pub by_bubble: usize,
    /// Tangles a walk crossed to the single-copy unitig pairs vouch for.
    pub bridges: usize,
    /// Walks joined where one reached the other's end.
    pub merges: usize,
}

/// A walk: unitigs in order, each's first base's coordinate on the walk
/// (neighbours overlap by k - 1).
#[derive(Debug, Clone, Default)]
struct Walk {
    nodes: Vec<Node>,
    starts: Vec<i64>,
    len: i64,
}

/// The unitig graph and the reads threaded on it.
struct Extender<'a> {
    unitigs: &'a [Unitig],
    k: i64,
    /// Successors of each unitig read along (`[0]`) and against (`[1]`).
    next: Vec<[Vec<Node>; 2]>,
    unique: Vec<bool>,
    /// The coverage of one copy.
    median: f64,
    threads: &'a Threads,
    insert: Option<Insert>,
    /// The walk holding each single-copy unitig.
    owner: Vec<Option<usize>>,
    walks: Vec<Option<Walk>>,
    done: Extension,
}

/// Joins `unitigs` (of `graph`, cleaned) into contigs along the walks
/// `threads` (the reads on them) make clear; unitigs no walk used are
/// kept as they are. Returns the sequences, in no order.
pub fn extend(graph: &Graph, unitigs: &[Unitig], threads: &Threads) -> (Vec<Vec<u8>>, Extension) {
    let mut ex = Extender::new(graph, unitigs, threads);
    let mut seeds: Vec<u32> = (0..unitigs.len() as u32)
        .filter(|&u| ex.unique[u as usize])
        .collect();
    seeds.sort_by_key(|&u| (std::cmp::Reverse(unitigs[u as usize].seq.len()), u));
    for seed in seeds {
        if ex.owner[seed as usize].is_none() {
            ex.grow(seed);
        }
    }
    let mut used = vec![false; unitigs.len()];
    let mut out = Vec::new();
    for walk in std::mem::take(&mut ex.walks).into_iter().flatten() {
        // A walk's repeat ends were not resolved: they stay separate.
        let single = |n: &Node| ex.unique[n.id as usize];
        let from = walk.nodes.iter().position(single).unwrap_or(0);
        let to = walk
            .nodes
            .iter()
            .rposition(single)
            .map_or(walk.nodes.len(), |i| i + 1);
        let nodes = &walk.nodes[from..to.max(from + 1)];
        for n in nodes {
            used[n.id as usize] = true;
        }
        out.push(ex.spell(nodes));
    }
    for (u, unitig) in unitigs.iter().enumerate() {
        if !used[u] {
            out.push(unitig.seq.clone());
        }
    }
    (out, ex.done)
}

impl<'a> Extender<'a> {
    fn new(graph: &Graph, unitigs: &'a [Unitig], threads: &'a Threads) -> Self {
        // Entering unitig u along reads its first k-mer; against, its last
        // k-mer's reverse complement.
        let mut enter: HashMap<u64, Node> = HashMap::with_capacity(2 * unitigs.len());
        for (id, u) in unitigs.iter().enumerate() {
            let id = id as u32;
            enter.insert(u.first.fwd, Node { id, along: true });
            enter.insert(u.last.rev, Node { id, along: false });
        }
        let after = |o: Oriented| -> Vec<Node> {
            graph
                .next(o)
                .filter_map(|n| enter.get(&n.fwd).copied())
                .collect()
        };
        let next = unitigs
            .iter()
            .map(|u| [after(u.last), after(u.first.flip())])
            .collect();
        let median = median_coverage(unitigs, graph.k());
        let one_copy = ONE_COPY * median;
        // A short unitig's coverage says little: a few reads more or less.
        let unique = unitigs
            .iter()
            .map(|u| u.coverage < one_copy && u.seq.len() >= MIN_UNIQUE * graph.k())
            .collect();
        Extender {
            unitigs,
            k: graph.k() as i64,
            next,
            unique,
            median,
            threads,
            insert: threads.insert,
            owner: vec![None; unitigs.len()],
            walks: Vec::new(),
            done: Extension {
                pairs_placed: threads.pairs_placed(),
                insert_median: threads.insert.map_or(0, |i| i.median as usize),
                ..Extension::default()
            },
        }
    }

    fn len(&self, id: u32) -> i64 {
        self.unitigs[id as usize].seq.len() as i64
    }

    fn successors(&self, n: Node) -> &[Node] {
        &self.next[n.id as usize][usize::from(!n.along)]
    }

    fn push(&self, walk: &mut Walk, n: Node) {
        let start = if walk.nodes.is_empty() {
            0
        } else {
            walk.len - (self.k - 1)
        };
        walk.nodes.push(n);
        walk.starts.push(start);
        walk.len = start + self.len(n.id);
    }

    fn flipped(&self, walk: &Walk) -> Walk {
        let mut out = Walk::default();
        for n in walk.nodes.iter().rev() {
            self.push(&mut out, n.flip());
        }
        out
    }

    /// Walks out from `seed` both ways; the new walk holds every single-copy
    /// unitig it passes.
    fn grow(&mut self, seed: u32) {
        let id = self.walks.len();
        let mut walk = Walk::default();
        self.push(
            &mut walk,
            Node {
                id: seed,
                along: true,
            },
        );
        self.owner[seed as usize] = Some(id);
        self.walks.push(None);
        self.extend_right(id, &mut walk);
        let mut walk = self.flipped(&walk);
        self.extend_right(id, &mut walk);
        self.walks[id] = Some(walk);
    }

    /// Extends walk `id` at its right end while the way is clear (the
    /// module's rules), taking the single-copy unitigs it passes.
    fn extend_right(&mut self, id: usize, walk: &mut Walk) {
        let mut planned: VecDeque<Node> = VecDeque::new();
        loop {
            let last = walk.nodes[walk.nodes.len() - 1];
            let next = if let Some(n) = planned.pop_front() {
                n
            } else {
                match self.successors(last).to_vec().as_slice() {
                    [] => return,
                    [only] if self.refuted(walk, *only) => return,
                    [only] => *only,
                    many => match self.choose(walk, many) {
                        Some(path) => {
                            planned.extend(path);
                            continue;
                        }
                        None => return,
                    },
                }
            };
            if self.unique[next.id as usize] {
                match self.owner[next.id as usize] {
                    None => self.owner[next.id as usize] = Some(id),
                    // Round to itself: a circular chromosome or a repeat.
                    Some(o) if o == id => return,
                    Some(o) => {
                        if !self.merge(id, walk, o, next) {
                            return;
                        }
                        planned.clear();
                        continue;
                    }
                }
            } else if walk.nodes.iter().filter(|n| n.id == next.id).count() >= MAX_VISITS {
                return;
            }
            self.push(walk, next);
        }
    }

    /// Appends walk `other` from `at` on to `walk` when `at` is the first
    /// single-copy unitig of `other` read that way.
    fn merge(&mut self, id: usize, walk: &mut Walk, other: usize, at: Node) -> bool {
        let Some(theirs) = self.walks[other].as_ref() else {
            // The other walk is still being grown: it is this one's seed.
            return false;
        };
        let Some(j) = theirs.nodes.iter().position(|n| n.id == at.id) else {
            return false;
        };
        let theirs = if theirs.nodes[j] == at {
            theirs.clone()
        } else {
            self.flipped(theirs)
        };
        let Some(j) = theirs.nodes.iter().position(|n| *n == at) else {
            return false;
        };
        if theirs.nodes[..j].iter().any(|n| self.unique[n.id as usize]) {
            return false;
        }
        for &n in &theirs.nodes[j..] {
            if self.unique[n.id as usize] {
                self.owner[n.id as usize] = Some(id);
            }
            self.push(walk, n);
        }
        self.walks[other] = None;
        true
    }

    fn spell(&self, nodes: &[Node]) -> Vec<u8> {
        let mut seq = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let u = &self.unitigs[n.id as usize].seq;
            let oriented = if n.along {
                u.clone()
            } else {
                crate::genome::revcomp(u)
            };
            let skip = if i == 0 { 0 } else { self.k as usize - 1 };
            seq.extend_from_slice(&oriented[skip..]);
        }
        seq
    }
}

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use crate::assembly::assemble;
    use crate::genome::revcomp;
    use crate::seqgen::{Alphabet, sequence};

    /// Error-free pairs of `read`-base mates from fragments of `insert`
    /// bases every `step` bases, the first mate on alternating strands.
    fn pairs(
        genome: &[u8],
        read: usize,
        insert: usize,
        step: usize,
    ) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let (mut first, mut second) = (Vec::new(), Vec::new());
        for (i, start) in (0..genome.len() - insert).step_by(step).enumerate() {
            let fwd = genome[start..start + read].to_vec();
            let rev = revcomp(&genome[start + insert - read..start + insert]);
            if i % 2 == 0 {
                first.push(fwd);
                second.push(rev);
            } else {
                first.push(rev);
                second.push(fwd);
            }
        }
        (first, second)
    }

    /// A, R, B, R, C, R, D: unique stretches between three copies of one
    /// repeat (with two, a single-copy stretch could only go on one way).
    fn genome(repeat: usize) -> (Vec<u8>, [Vec<u8>; 4]) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let [a, b, c, d] = [0; 4].map(|_| sequence(&mut rng, Alphabet::Dna, 2000));
        let r = sequence(&mut rng, Alphabet::Dna, repeat);
        let genome = [&a, &r, &b, &r, &c, &r, &d]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        (genome, [a, b, c, d])
    }

    fn contigs(genome: &[u8], paired: bool) -> Vec<Vec<u8>> {
        let (first, second) = pairs(genome, 100, 500, 4);
        let f: Vec<&[u8]> = first.iter().map(|r| r.as_slice()).collect();
        let s: Vec<&[u8]> = second.iter().map(|r| r.as_slice()).collect();
        let none: Vec<&[u8]> = Vec::new();
        let reads: Vec<&[u8]> = f.iter().chain(&s).copied().collect();
        let (contigs, _) = if paired {
            assemble(&f, &s, 31, 2, 1, 100_000)
        } else {
            assemble(&reads, &none, 31, 2, 1, 100_000)
        };
        contigs
    }

    /// Whether some contig, on either strand, holds `x` followed by `y`.
    fn joined(contigs: &[Vec<u8>], x: &[u8], y: &[u8]) -> bool {
        let mut both = x[x.len() - 50..].to_vec();
        both.extend_from_slice(&y[..50]);
        let (fwd, rev) = (
            String::from_utf8_lossy(&both).to_string(),
            String::from_utf8_lossy(&revcomp(&both)).to_string(),
        );
        contigs.iter().any(|c| {
            let c = String::from_utf8_lossy(c);
            c.contains(&fwd) || c.contains(&rev)
        })
    }

    #[test]
    fn pairs_carry_a_walk_across_a_repeat_shorter_than_the_insert() {
        let (genome, [a, b, c, d]) = genome(250);
        let paired = contigs(&genome, true);
        // One contig, the whole genome but for the few bases at its ends
        // no read starts from.
        let longest = paired.iter().max_by_key(|c| c.len()).unwrap();
        assert!(longest.len() + 20 >= genome.len(), "{}", longest.len());
        let text = String::from_utf8_lossy(&genome).to_string();
        let rc = String::from_utf8_lossy(&revcomp(&genome)).to_string();
        let longest = String::from_utf8_lossy(longest);
        assert!(text.contains(&*longest) || rc.contains(&*longest));
        // The same reads without their pairs stop at the repeat.
        let single = contigs(&genome, false);
        assert!(single.iter().map(Vec::len).max().unwrap() < 2500);
        for (x, y) in [(&a, &b), (&b, &c), (&c, &d)] {
            assert!(!joined(&single, x, y));
        }
    }

    #[test]
    fn a_repeat_longer_than_the_insert_is_not_guessed_across() {
        let (genome, [a, b, c, d]) = genome(800);
        let paired = contigs(&genome, true);
        // Neither the true joins nor the false ones: pairs cannot tell
        // which copy leads where.
        for x in [&a, &b, &c] {
            for y in [&b, &c, &d] {
                assert!(!joined(&paired, x, y));
            }
        }
        // Each unique stretch is still whole, with the repeat's start or
        // end on it as far as the graph allows.
        for s in [&a, &b, &c, &d] {
            let mid = String::from_utf8_lossy(&s[100..1900]).to_string();
            let rc = String::from_utf8_lossy(&revcomp(&s[100..1900])).to_string();
            assert!(paired.iter().any(|c| {
                let c = String::from_utf8_lossy(c);
                c.contains(&mid) || c.contains(&rc)
            }));
        }
    }
}
