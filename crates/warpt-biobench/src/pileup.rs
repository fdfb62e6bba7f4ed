//! The pileup: mapped reads stacked on the reference, column by column.
//! Each column keeps, per base, how many reads show it and the sums of
//! the three per-read log-likelihood terms a diploid genotype needs, so
//! no read is visited twice; indels are counted by their normalised
//! allele. The reference is cut into chunks that are piled up in
//! parallel.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::align::Op;
use crate::genome::{Variant, normalize};
use crate::kmer::CODE;

/// Bases nearest a read's ends that give no evidence: an end-to-end
/// alignment shows an indel there as mismatches.
pub const END_TRIM: usize = 5;
/// Indels count only when at least this far from both ends of the read
/// (nearer, the aligner may show them as mismatches), and so does the
/// depth they are weighed against ([`Column::interior`]).
pub const INDEL_FLANK: usize = 20;
/// Reference bases per chunk piled up by one task.
const CHUNK: usize = 1 << 16;
/// Base qualities are capped here (and floored at 2).
const MAX_QUAL: usize = 45;

/// A read as aligned, on the reference strand.
#[derive(Debug, Clone)]
pub struct Aligned {
    /// Global position of its first aligned base.
    pub pos: u32,
    /// Its CIGAR.
    pub cigar: Vec<(u32, Op)>,
    /// Bases, reverse-complemented if it mapped to the reverse strand.
    pub seq: Vec<u8>,
    /// Phred+33 qualities, in the order of `seq`.
    pub qual: Vec<u8>,
}

impl Aligned {
    /// Reference bases it covers.
    pub fn ref_len(&self) -> usize {
        self.cigar
            .iter()
            .filter(|c| c.1 != Op::Insertion)
            .map(|c| c.0 as usize)
            .sum()
    }
}

/// What the reads say about one reference position.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Column {
    /// Reads showing each base (A C G T).
    pub count: [u16; 4],
    /// Per base, the sums over its reads of ln(1-e), ln(e/3) and
    /// ln((1-e)/2 + e/6): the read's likelihood if the base is on both,
    /// neither or one of the two haplotypes (e its error probability).
    pub ll: [[f32; 3]; 4],
    /// Reads with a deletion over this position.
    pub deleted: u16,
    /// Reads covering it at least `INDEL_FLANK` bases from both ends.
    pub interior: u16,
}

impl Column {
    /// Reads covering the position (bases and deletions).
    pub fn depth(&self) -> u32 {
        self.count.iter().map(|&c| c as u32).sum::<u32>() + self.deleted as u32
    }
}

/// Every column of the reference, and the indels with their read counts.
pub struct Pileup {
    /// One column per reference position.
    pub columns: Vec<Column>,
    /// Normalised indels and the reads showing them.
    pub indels: HashMap<Variant, u32>,
}

/// The three log-likelihood terms of a base of quality `q`.
fn terms(q: usize) -> [f32; 3] {
    let e = 10f64.powf(-(q.clamp(2, MAX_QUAL) as f64) / 10.0);
    [
        (1.0 - e).ln() as f32,
        (e / 3.0).ln() as f32,
        ((1.0 - e) / 2.0 + e / 6.0).ln() as f32,
    ]
}

/// Piles up `reads` (sorted by position) on `reference`, on the current
/// rayon pool.
pub fn pile(reference: &[u8], reads: &[Aligned]) -> Pileup {
    let table: Vec<[f32; 3]> = (0..=MAX_QUAL).map(terms).collect();
    let longest = reads.iter().map(Aligned::ref_len).max().unwrap_or(0);
    let mut columns = vec![Column::default(); reference.len()];
    let indels = columns
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(c, cols)| {
            let from = c * CHUNK;
            let mut indels: HashMap<Variant, u32> = HashMap::new();
            let first = reads.partition_point(|r| (r.pos as usize) + longest < from);
            for read in &reads[first..] {
                if read.pos as usize >= from + cols.len() {
                    break;
                }
                pile_read(reference, read, from, cols, &table, &mut indels);
            }
            indels
        })
        .reduce(HashMap::new, |mut a, b| {
            for (v, n) in b {
                *a.entry(v).or_default() += n;
            }
            a
        });
    Pileup { columns, indels }
}

/// Adds the part of `read` that falls in `cols` (which start at `from`).
fn pile_read(
    reference: &[u8],
    read: &Aligned,
    from: usize,
    cols: &mut [Column],
    table: &[[f32; 3]],
    indels: &mut HashMap<Variant, u32>,
) {
    let to = from + cols.len();
    let len = read.seq.len();
    let evidence = END_TRIM..len.saturating_sub(END_TRIM);
    let interior = INDEL_FLANK..len.saturating_sub(INDEL_FLANK);
    let (mut r, mut q) = (read.pos as usize, 0usize);
    for &(n, op) in &read.cigar {
        let n = n as usize;
        match op {
            Op::Match => {
                let lo = r.max(from);
                let hi = (r + n).min(to);
                for at in lo..hi {
                    let i = q + (at - r);
                    if interior.contains(&i) {
                        cols[at - from].interior += 1;
                    }
                    let code = CODE[read.seq[i] as usize];
                    if code > 3 || !evidence.contains(&i) {
                        continue;
                    }
                    let qual = (read.qual.get(i).copied().unwrap_or(b'I') as usize)
                        .saturating_sub(33)
                        .min(MAX_QUAL);
                    let col = &mut cols[at - from];
                    col.count[code as usize] += 1;
                    for (sum, term) in col.ll[code as usize].iter_mut().zip(table[qual]) {
                        *sum += term;
                    }
                }
                r += n;
                q += n;
            }
            Op::Insertion => {
                if (from..to).contains(&(r.wrapping_sub(1))) && r > 0 && evidence.contains(&q) {
                    let mut alternate = vec![reference[r - 1]];
                    alternate.extend_from_slice(&read.seq[q..q + n]);
                    let v = Variant {
                        pos: r - 1,
                        reference: vec![reference[r - 1]],
                        alternate,
                    };
                    *indels.entry(normalize(reference, &v)).or_default() += 1;
                }
                q += n;
            }
            Op::Deletion => {
                if (from..to).contains(&(r.wrapping_sub(1))) && r > 0 && evidence.contains(&q) {
                    let v = Variant {
                        pos: r - 1,
                        reference: reference[r - 1..r + n].to_vec(),
                        alternate: vec![reference[r - 1]],
                    };
                    *indels.entry(normalize(reference, &v)).or_default() += 1;
                }
                for at in r.max(from)..(r + n).min(to) {
                    cols[at - from].deleted += 1;
                    if interior.contains(&q) {
                        cols[at - from].interior += 1;
                    }
                }
                r += n;
            }
        }
    }
}

/// Reads showing each base at `pos`, recounted by walking every read's
/// CIGAR (the plain reference the validation compares columns with).
pub fn recount(reads: &[Aligned], pos: usize) -> ([u16; 4], u16) {
    let mut count = [0u16; 4];
    let mut deleted = 0;
    for read in reads {
        let (mut r, mut q) = (read.pos as usize, 0usize);
        let len = read.seq.len();
        for &(n, op) in &read.cigar {
            let n = n as usize;
            match op {
                Op::Match => {
                    if (r..r + n).contains(&pos) {
                        let i = q + pos - r;
                        let code = CODE[read.seq[i] as usize];
                        if code <= 3 && i >= END_TRIM && i + END_TRIM < len {
                            count[code as usize] += 1;
                        }
                    }
                    r += n;
                    q += n;
                }
                Op::Insertion => q += n,
                Op::Deletion => {
                    if (r..r + n).contains(&pos) {
                        deleted += 1;
                    }
                    r += n;
                }
            }
        }
    }
    (count, deleted)
}
