//! Short-read mapping: a read's minimizers looked up in the reference
//! index, the hits grouped by strand and diagonal into candidate places,
//! each candidate aligned (ungapped when that is clearly right, else a
//! banded affine alignment), and mates paired by orientation and
//! distance. MAPQ from the gap between the best and second-best score,
//! as minimap2 does.

use crate::align::{self, Alignment, MATCH, MISMATCH};
use crate::dataset::Genome;
use crate::genome::revcomp;
use crate::index::Index;
use crate::minimizer::{self, Minimizer};

/// Band half-width of the gapped alignment, bases.
const BAND: usize = 12;
/// Widest band, for anchors spread over a tandem repeat.
const MAX_BAND: usize = 200;
/// Candidates aligned per read.
const MAX_CANDIDATES: usize = 6;
/// Longest fragment a proper pair may span.
pub const MAX_FRAGMENT: u32 = 1500;
/// What a pair gives up by not being proper (minimap2's `--frag` pairing
/// weighs about this much).
const UNPAIRED_PENALTY: i32 = 20;

/// Where a read maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Global reference position of the read's first aligned base.
    pub pos: u32,
    /// The read aligns as its reverse complement.
    pub reverse: bool,
    /// The alignment (its `start` is `pos`).
    pub alignment: Alignment,
    /// Mapping quality, 0 to 60.
    pub mapq: u8,
}

/// A mapped pair (or single read): each mate's placement, and whether
/// they form a proper pair.
#[derive(Debug, Clone, Default)]
pub struct Mapped {
    /// Mate 1 and mate 2 (mate 2 `None` for single-end reads too).
    pub mates: [Option<Placement>; 2],
    /// Both mapped, facing each other, within `MAX_FRAGMENT`.
    pub proper: bool,
}

/// The mapper: a reference and its index.
pub struct Mapper<'g> {
    genome: &'g Genome,
    index: &'g Index,
}

/// Per-thread scratch, reused across reads.
#[derive(Default)]
pub struct Scratch {
    sketch: Vec<Minimizer>,
    anchors: Vec<(bool, i64)>,
}

/// A scored place for one read.
#[derive(Debug, Clone)]
struct Candidate {
    reverse: bool,
    alignment: Alignment,
}

impl<'g> Mapper<'g> {
    /// Maps to `genome` through its `index` (see [`Index::build`]).
    pub fn new(genome: &'g Genome, index: &'g Index) -> Self {
        Mapper { genome, index }
    }

    /// Maps a pair (or a single read when `second` is `None`).
    pub fn map(&self, first: &[u8], second: Option<&[u8]>, scratch: &mut Scratch) -> Mapped {
        let a = self.candidates(first, scratch);
        let Some(second) = second else {
            return Mapped {
                mates: [place(&a), None],
                proper: false,
            };
        };
        let mut a = a;
        let mut b = self.candidates(second, scratch);
        // Mate rescue: a mate without a place of its own is looked for
        // where its partner's best place says it must be.
        if b.is_empty()
            && let Some(c) = a.first().and_then(|x| self.rescue(x, second))
        {
            b.push(c);
        } else if a.is_empty()
            && let Some(c) = b.first().and_then(|x| self.rescue(x, first))
        {
            a.push(c);
        }
        // The best proper pair, and the runner-up for MAPQ.
        let mut best: Option<(i32, usize, usize)> = None;
        let mut runner_up = i32::MIN;
        for (i, x) in a.iter().enumerate() {
            for (j, y) in b.iter().enumerate() {
                if !self.proper(x, y) {
                    continue;
                }
                let s = x.alignment.score + y.alignment.score;
                match best {
                    Some((bs, _, _)) if s <= bs => runner_up = runner_up.max(s),
                    _ => {
                        if let Some((bs, _, _)) = best {
                            runner_up = runner_up.max(bs);
                        }
                        best = Some((s, i, j));
                    }
                }
            }
        }
        let single = |c: &[Candidate]| c.first().map_or(0, |c| c.alignment.score);
        let unpaired = single(&a) + single(&b) - UNPAIRED_PENALTY;
        match best {
            Some((s, i, j)) if s >= unpaired => {
                let second_best = runner_up.max(unpaired);
                let q = mapq(s, second_best);
                // A mate keeps the better of its own MAPQ and the pair's.
                let mate = |c: &[Candidate], k: usize| {
                    let own = mapq(
                        c[k].alignment.score,
                        c.iter()
                            .enumerate()
                            .filter(|&(o, _)| o != k)
                            .map(|(_, x)| x.alignment.score)
                            .max()
                            .unwrap_or(i32::MIN),
                    );
                    placement(&c[k], own.max(q))
                };
                Mapped {
                    mates: [Some(mate(&a, i)), Some(mate(&b, j))],
                    proper: true,
                }
            }
            _ => Mapped {
                mates: [place(&a), place(&b)],
                proper: false,
            },
        }
    }

    fn proper(&self, x: &Candidate, y: &Candidate) -> bool {
        if x.reverse == y.reverse {
            return false;
        }
        let (fwd, rev) = if x.reverse { (y, x) } else { (x, y) };
        let start = fwd.alignment.start;
        let end = rev.alignment.start + rev.alignment.ref_len();
        let same_contig =
            self.genome.locate(start).0 == self.genome.locate(end.saturating_sub(1)).0;
        same_contig && end > start && (end - start) as u32 <= MAX_FRAGMENT
    }

    /// `read` aligned facing `partner`, within `MAX_FRAGMENT` of it.
    fn rescue(&self, partner: &Candidate, read: &[u8]) -> Option<Candidate> {
        let reverse = !partner.reverse;
        let seq = if reverse {
            revcomp(read)
        } else {
            read.to_vec()
        };
        let span = MAX_FRAGMENT as i64;
        let len = seq.len() as i64;
        // The window the read may start in.
        let (lo, hi) = if partner.reverse {
            let end = (partner.alignment.start + partner.alignment.ref_len()) as i64;
            (end - span, end - len)
        } else {
            let start = partner.alignment.start as i64;
            (start, start + span - len)
        };
        if hi < lo {
            return None;
        }
        let band = ((hi - lo) / 2) as usize;
        let centre = lo + band as i64;
        let reference = &self.genome.seq;
        let from = (lo.max(0) as usize).min(reference.len());
        let to = ((hi + len + 1).max(0) as usize).min(reference.len());
        let mut alignment = align::banded(&seq, &reference[from..to], centre - from as i64, band)?;
        alignment.start += from;
        let floor = len as i32 * MATCH - 10 * (MATCH + MISMATCH) * len as i32 / 100;
        (alignment.score >= floor && self.one_contig(&alignment))
            .then_some(Candidate { reverse, alignment })
    }

    /// The read's candidate places, best first.
    fn candidates(&self, read: &[u8], scratch: &mut Scratch) -> Vec<Candidate> {
        let k = self.index.k;
        let len = read.len() as i64;
        scratch.sketch.clear();
        minimizer::sketch(read, k, self.index.w, &mut scratch.sketch);
        scratch.anchors.clear();
        for m in &scratch.sketch {
            for hit in self.index.lookup(m.hash) {
                let reverse = hit.reverse != m.reverse;
                // Where the read's first base (of the strand that
                // aligns) falls on the reference.
                let qpos = if reverse {
                    len - k as i64 - m.pos as i64
                } else {
                    m.pos as i64
                };
                scratch.anchors.push((reverse, hit.pos as i64 - qpos));
            }
        }
        scratch.anchors.sort_unstable();
        // Clusters of anchors on one strand within a band of diagonals.
        let mut clusters: Vec<(usize, bool, i64, i64)> = Vec::new();
        let mut i = 0;
        let anchors = &scratch.anchors;
        while i < anchors.len() {
            let reverse = anchors[i].0;
            let mut j = i + 1;
            while j < anchors.len()
                && anchors[j].0 == reverse
                && anchors[j].1 - anchors[j - 1].1 <= BAND as i64 / 2
            {
                j += 1;
            }
            // The median diagonal, and the spread (a tandem repeat's
            // anchors line up one period apart).
            let median = anchors[(i + j) / 2].1;
            let spread = anchors[j - 1].1 - anchors[i].1;
            clusters.push((j - i, reverse, median, spread));
            i = j;
        }
        clusters.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
        let strongest = clusters.first().map_or(0, |c| c.0);
        let mut out: Vec<Candidate> = Vec::new();
        let mut flipped: Option<Vec<u8>> = None;
        for &(count, reverse, diagonal, spread) in clusters.iter().take(MAX_CANDIDATES) {
            if count * 4 < strongest {
                break;
            }
            let seq: &[u8] = if reverse {
                flipped.get_or_insert_with(|| revcomp(read))
            } else {
                read
            };
            if let Some(alignment) = self.align(seq, diagonal, spread as usize) {
                out.push(Candidate { reverse, alignment });
            }
        }
        out.sort_by_key(|c| std::cmp::Reverse(c.alignment.score));
        // Two clusters may settle on one place: keep it once.
        out.dedup_by(|a, b| a.reverse == b.reverse && a.alignment.start == b.alignment.start);
        out
    }

    /// `seq` aligned near `diagonal`: ungapped when that has at most two
    /// mismatches (no gapped alignment can then beat it by more than the
    /// gap costs), else the better of ungapped and banded, the band wide
    /// enough for the anchors' `spread` of diagonals.
    fn align(&self, seq: &[u8], diagonal: i64, spread: usize) -> Option<Alignment> {
        let reference = &self.genome.seq;
        let fast = usize::try_from(diagonal)
            .ok()
            .and_then(|start| align::ungapped(seq, reference, start));
        if let Some(a) = &fast
            && a.mismatches <= 2
            && self.one_contig(a)
        {
            return fast;
        }
        // Only the window around the diagonal goes to the DP.
        let band = (BAND + spread).min(MAX_BAND) as i64;
        let from = (diagonal - band).max(0) as usize;
        let to = ((diagonal + seq.len() as i64 + band).max(0) as usize).min(reference.len());
        if from >= to {
            return fast;
        }
        let mut gapped = align::banded(
            seq,
            &reference[from..to],
            diagonal - from as i64,
            band as usize,
        )?;
        gapped.start += from;
        let floor = seq.len() as i32 * MATCH - 10 * (MATCH + MISMATCH) * seq.len() as i32 / 100;
        let best = match fast {
            Some(f) if f.score >= gapped.score => f,
            _ => gapped,
        };
        // Never across two contigs of the concatenated reference.
        if !self.one_contig(&best) {
            return None;
        }
        // Worse than 10% mismatches: not this read's place.
        (best.score >= floor.min(seq.len() as i32)).then_some(best)
    }
}

impl Mapper<'_> {
    fn one_contig(&self, a: &Alignment) -> bool {
        let last = a.start + a.ref_len().max(1) - 1;
        self.genome.locate(a.start).0 == self.genome.locate(last).0
    }
}

fn placement(c: &Candidate, mapq: u8) -> Placement {
    Placement {
        pos: c.alignment.start as u32,
        reverse: c.reverse,
        alignment: c.alignment.clone(),
        mapq,
    }
}

fn place(c: &[Candidate]) -> Option<Placement> {
    let first = c.first()?;
    let second = c.get(1).map_or(i32::MIN, |x| x.alignment.score);
    Some(placement(first, mapq(first.alignment.score, second)))
}

/// Mapping quality from the best and second-best scores: 0 when they tie,
/// 60 when there is no second, in between by how much better the best is
/// (minimap2's `40 (1 - s2/s1) ln s1`, capped at 60).
pub fn mapq(best: i32, second: i32) -> u8 {
    if best <= 0 {
        return 0;
    }
    if second == i32::MIN || second <= 0 {
        return 60;
    }
    let s1 = best as f64;
    let q = 40.0 * (1.0 - second as f64 / s1) * s1.ln();
    q.clamp(0.0, 60.0).round() as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_pairs_to_their_origin() {
        let seq = crate::genome::reference(5, 60_000);
        let genome = Genome::single("chr", seq.clone());
        let index = Index::build(&genome, 21, 11);
        let mapper = Mapper::new(&genome, &index);
        let donor = crate::genome::donor(9, &seq, 0.001, 0.0002);
        let reads = crate::reads::simulate(
            1,
            &donor,
            &[0],
            seq.len(),
            crate::reads::ReadSpec::new(150, 2.0, 0.005, 400.0),
        );
        let origins = reads.origins.as_ref().unwrap();
        let mut scratch = Scratch::default();
        let (mut correct, mut total) = (0, 0);
        for (i, o) in origins.iter().enumerate() {
            let m = mapper.map(
                &reads.first[i].seq,
                Some(&reads.second[i].seq),
                &mut scratch,
            );
            for (mate, origin) in o.iter().enumerate() {
                total += 1;
                if let Some(p) = &m.mates[mate]
                    && p.reverse == origin.reverse
                    && (p.pos as i64 - origin.pos as i64).abs() <= 10
                {
                    correct += 1;
                    let (seq, _) = reads.mate(i, mate).oriented(p.reverse);
                    let (s, nm) = align::rescore(&seq, &genome.seq, &p.alignment).unwrap();
                    assert_eq!((s, nm), (p.alignment.score, p.alignment.mismatches));
                }
            }
        }
        // A 60 kb genome with repeats: nearly every read finds its place.
        assert!(correct * 100 >= total * 97, "{correct} of {total}");
    }

    #[test]
    fn mapq_falls_as_the_runner_up_closes_in() {
        assert_eq!(mapq(300, i32::MIN), 60);
        assert_eq!(mapq(300, 300), 0);
        assert!(mapq(300, 290) < mapq(300, 250));
        assert_eq!(mapq(0, i32::MIN), 0);
    }
}
