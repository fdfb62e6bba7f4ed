//! Illumina-like paired reads from a diploid donor, in the spirit of
//! wgsim and mason: fragments with a normal insert-size distribution from
//! either haplotype and either strand, substitution errors that grow along
//! the read, a few indel errors, and qualities that follow the error
//! profile. Every read knows where it came from.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::genome::{self, Donor};
use crate::seqgen::{self, unit};

/// One read: name, bases and Phred+33 qualities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The name; both mates of a pair share it.
    pub name: String,
    /// The bases, as letters.
    pub seq: Vec<u8>,
    /// One Phred+33 quality character per base.
    pub qual: Vec<u8>,
}

/// Where a read came from: the leftmost reference position its bases
/// cover (0-based) and whether it reads the reverse strand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// Leftmost reference position of the read's bases.
    pub pos: u32,
    /// The read is the reverse complement of the reference there.
    pub reverse: bool,
}

/// Paired reads, mate 1 and mate 2 at the same index.
#[derive(Debug, Clone, Default)]
pub struct ReadSet {
    /// First mates.
    pub first: Vec<Read>,
    /// Second mates (empty for single-end reads).
    pub second: Vec<Read>,
    /// The true origins of `[first, second]`, for simulated reads.
    pub origins: Option<Vec<[Origin; 2]>>,
}

impl Read {
    /// Bases and qualities as they lie on the reference strand: reverse
    /// complemented (qualities reversed) when the read maps to the reverse
    /// strand.
    pub fn oriented(&self, reverse: bool) -> (Vec<u8>, Vec<u8>) {
        if reverse {
            let mut qual = self.qual.clone();
            qual.reverse();
            (genome::revcomp(&self.seq), qual)
        } else {
            (self.seq.clone(), self.qual.clone())
        }
    }
}

impl ReadSet {
    /// Mate `mate` (0 or 1) of pair `i`.
    pub fn mate(&self, i: usize, mate: usize) -> &Read {
        if mate == 0 {
            &self.first[i]
        } else {
            &self.second[i]
        }
    }

    /// Every read, first mates then second mates.
    pub fn all(&self) -> impl Iterator<Item = &Read> {
        self.first.iter().chain(self.second.iter())
    }

    /// Total bases of every read.
    pub fn bases(&self) -> u64 {
        self.all().map(|r| r.seq.len() as u64).sum()
    }

    /// Number of reads (both mates counted).
    pub fn len(&self) -> usize {
        self.first.len() + self.second.len()
    }

    /// No reads at all.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

/// What to simulate.
#[derive(Debug, Clone, Copy)]
pub struct ReadSpec {
    /// Bases per read.
    pub read_length: usize,
    /// Mean depth over the reference, both mates counted.
    pub coverage: f64,
    /// Mean substitution error rate per base (rising along the read).
    pub error_rate: f64,
    /// Mean fragment length.
    pub insert_mean: f64,
    /// Standard deviation of the fragment length.
    pub insert_sd: f64,
}

impl ReadSpec {
    /// Reads of `read_length` bases at `coverage`, with substitution
    /// errors at `error_rate`, from fragments of mean length `insert_mean`
    /// and a standard deviation of a tenth of that.
    pub fn new(read_length: usize, coverage: f64, error_rate: f64, insert_mean: f64) -> Self {
        ReadSpec {
            read_length,
            coverage,
            error_rate,
            insert_mean,
            insert_sd: insert_mean / 10.0,
        }
    }
}

/// Pairs per parallel chunk (each chunk has its own seeded generator, so
/// the reads do not depend on the thread count).
const CHUNK: usize = 2048;

/// Simulates `coverage` worth of read pairs from `donor` (reference length
/// `reference_len`, contigs starting at `boundaries`; no fragment spans two).
pub fn simulate(
    seed: u64,
    donor: &Donor,
    boundaries: &[usize],
    reference_len: usize,
    spec: ReadSpec,
) -> ReadSet {
    let pairs = (spec.coverage * reference_len as f64 / (2.0 * spec.read_length as f64)) as usize;
    let chunks: Vec<Vec<(Read, Read, [Origin; 2])>> = (0..pairs.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed_0000 ^ (c as u64) << 20);
            (c * CHUNK..((c + 1) * CHUNK).min(pairs))
                .map(|i| pair(&mut rng, donor, boundaries, spec, i))
                .collect()
        })
        .collect();
    let mut set = ReadSet {
        first: Vec::with_capacity(pairs),
        second: Vec::with_capacity(pairs),
        origins: Some(Vec::with_capacity(pairs)),
    };
    for (a, b, o) in chunks.into_iter().flatten() {
        set.first.push(a);
        set.second.push(b);
        if let Some(origins) = set.origins.as_mut() {
            origins.push(o);
        }
    }
    set
}

fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    // Box-Muller; one of the pair is enough here.
    let u1 = unit(rng).max(1e-12);
    let u2 = unit(rng);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn pair(
    rng: &mut Xoshiro256PlusPlus,
    donor: &Donor,
    boundaries: &[usize],
    spec: ReadSpec,
    i: usize,
) -> (Read, Read, [Origin; 2]) {
    let len = spec.read_length;
    let contig = |p: u32| boundaries.partition_point(|&b| b <= p as usize);
    // Draw fragments until one lies within one contig (the caller makes
    // every contig at least two fragments long).
    let (hap, start, end) = loop {
        let hap = (rng.next_u64() & 1) as usize;
        let h = &donor.haplotypes[hap];
        let map = &donor.to_reference[hap];
        let frag = ((spec.insert_mean + spec.insert_sd * normal(rng)) as usize)
            .max(len)
            .min(h.len());
        let start = (rng.next_u64() % (h.len() - frag + 1) as u64) as usize;
        let end = start + frag;
        if contig(map[start]) == contig(map[end - 1]) {
            break (hap, start, end);
        }
    };
    let h = &donor.haplotypes[hap];
    let map = &donor.to_reference[hap];
    let slack = 12;
    // The forward read takes bases from the fragment's start, the reverse
    // one from its end, reading inwards.
    let fwd_src = &h[start..(start + len + slack).min(h.len())];
    let rev_src = genome::revcomp(&h[end.saturating_sub(len + slack)..end]);
    let (fseq, fqual, _) = sequence_errors(rng, fwd_src, len, spec.error_rate);
    let (rseq, rqual, rused) = sequence_errors(rng, &rev_src, len, spec.error_rate);
    let fwd_origin = Origin {
        pos: map[start],
        reverse: false,
    };
    let rev_origin = Origin {
        pos: map[end - rused],
        reverse: true,
    };
    let strand_flip = rng.next_u64() & 1 == 1;
    let ((s1, q1, o1), (s2, q2, o2)) = if strand_flip {
        ((rseq, rqual, rev_origin), (fseq, fqual, fwd_origin))
    } else {
        ((fseq, fqual, fwd_origin), (rseq, rqual, rev_origin))
    };
    let strand = |o: Origin| if o.reverse { 'r' } else { 'f' };
    // wgsim's habit: the truth in the name, so any mapper can be scored.
    let name = format!(
        "s{i}_{}{}_{}{}",
        o1.pos + 1,
        strand(o1),
        o2.pos + 1,
        strand(o2)
    );
    (
        Read {
            name: name.clone(),
            seq: s1,
            qual: q1,
        },
        Read {
            name,
            seq: s2,
            qual: q2,
        },
        [o1, o2],
    )
}

/// Reads `len` bases off `src` with sequencing errors: substitutions at
/// `rate * (0.4 + 1.2 * cycle / len)` (mean `rate`), an insertion or
/// deletion at `rate / 25` per base. Returns the bases, their qualities
/// and how many source bases were consumed.
fn sequence_errors(
    rng: &mut Xoshiro256PlusPlus,
    src: &[u8],
    len: usize,
    rate: f64,
) -> (Vec<u8>, Vec<u8>, usize) {
    let mut seq = Vec::with_capacity(len);
    let mut qual = Vec::with_capacity(len);
    let mut at = 0;
    while seq.len() < len {
        let cycle = seq.len();
        let p = rate * (0.4 + 1.2 * cycle as f64 / len.max(2) as f64);
        let truthful_q = if p > 0.0 {
            (-10.0 * p.log10()).clamp(2.0, 41.0)
        } else {
            41.0
        };
        let jitter = (rng.next_u64() % 7) as f64 - 3.0;
        let mut q = (truthful_q + jitter).clamp(2.0, 41.0);
        if at >= src.len() {
            // Past the end of a chromosome: an N, as a sequencer reports
            // a base it could not call.
            seq.push(b'N');
            qual.push(b'#');
            continue;
        }
        let u = unit(rng);
        let indel = rate / 25.0;
        if u < indel / 2.0 {
            // An inserted base.
            seq.push(seqgen::residue(rng, seqgen::Alphabet::Dna));
            q = (q - 12.0).max(2.0);
        } else if u < indel {
            // A skipped source base.
            at += 1;
            continue;
        } else if unit(rng) < p {
            let mut b = src[at];
            while b == src[at] {
                b = b"ACGT"[(rng.next_u64() % 4) as usize];
            }
            seq.push(b);
            at += 1;
            q = (q - 12.0).max(2.0);
        } else {
            seq.push(src[at]);
            at += 1;
        }
        qual.push(33 + q as u8);
    }
    (seq, qual, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genome;

    /// A reference of `len` bases from `seed`, a donor without variants,
    /// and `spec`'s reads of it.
    fn reads_of(seed: u64, len: usize, spec: ReadSpec) -> (Vec<u8>, ReadSet) {
        let reference = genome::reference(seed, len);
        let donor = genome::donor(seed + 1, &reference, 0.0, 0.0);
        let set = simulate(seed + 2, &donor, &[0], reference.len(), spec);
        (reference, set)
    }

    #[test]
    fn reads_come_from_where_they_say() {
        let (reference, set) = reads_of(5, 50_000, ReadSpec::new(100, 4.0, 0.0, 300.0));
        assert_eq!(set.first.len(), 1000);
        let origins = set.origins.as_ref().unwrap();
        for (i, o) in origins.iter().enumerate() {
            for (read, o) in [(&set.first[i], o[0]), (&set.second[i], o[1])] {
                let p = o.pos as usize;
                let want = &reference[p..p + 100];
                let got = if o.reverse {
                    genome::revcomp(&read.seq)
                } else {
                    read.seq.clone()
                };
                assert_eq!(got, want, "{}", read.name);
            }
            assert_ne!(o[0].reverse, o[1].reverse);
        }
    }

    #[test]
    fn errors_follow_the_rate_and_rise_along_the_read() {
        let (reference, set) = reads_of(8, 100_000, ReadSpec::new(150, 10.0, 0.01, 400.0));
        let origins = set.origins.as_ref().unwrap();
        let (mut early, mut late, mut bases) = (0usize, 0usize, 0usize);
        for (i, o) in origins.iter().enumerate() {
            let read = &set.first[i];
            let o = o[0];
            let truth = &reference[o.pos as usize..o.pos as usize + 150];
            let seq = if o.reverse {
                genome::revcomp(&read.seq)
            } else {
                read.seq.clone()
            };
            // Count mismatches only in reads whose ends match (no indel).
            let mism: Vec<usize> = (0..150).filter(|&j| seq[j] != truth[j]).collect();
            if mism.len() > 10 {
                continue;
            }
            bases += 150;
            for j in mism {
                let cycle = if o.reverse { 149 - j } else { j };
                if cycle < 75 {
                    early += 1;
                } else {
                    late += 1;
                }
            }
            assert!(read.qual.iter().all(|&q| (35..=74).contains(&q)));
        }
        let rate = (early + late) as f64 / bases as f64;
        assert!((0.007..0.013).contains(&rate), "error rate {rate}");
        assert!(
            late as f64 > 1.5 * early as f64,
            "{early} early, {late} late"
        );
    }
}
