//! Diploid genotype calling from a pileup: at each column the likelihood
//! of the reads under reference/reference, reference/alternate and
//! alternate/alternate (the alternate being the most seen other base),
//! a prior of 1e-3 heterozygosity, and a call where the posterior that
//! the site is not reference reaches the quality threshold; indels by a
//! binomial model on the reads that show them. (bcftools call's
//! multiallelic model, cut down to one alternate allele.)

use rayon::prelude::*;

use crate::genome::Variant;
use crate::pileup::{Column, Pileup};
use crate::vcf::Record;

/// Heterozygosity: the prior of a heterozygous site.
const THETA: f64 = 1e-3;
/// How often a read shows an indel that is not there (or misses one).
const INDEL_ERROR: f64 = 0.005;
/// SNPs this close to a called indel are dropped (the indel's
/// misaligned reads show as mismatches near it).
const INDEL_SHADOW: usize = 5;
const LETTERS: [u8; 4] = *b"ACGT";

/// A call and the evidence behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The VCF record.
    pub record: Record,
    /// Reads showing the alternate allele.
    pub alt_reads: u32,
}

/// The genotype and Phred quality (that the site is not reference) from
/// three log-likelihoods: reference/reference, het, hom-alternate.
fn genotype(ll: [f64; 3]) -> (&'static str, f64) {
    let prior = [(1.0 - 1.5 * THETA).ln(), THETA.ln(), (THETA / 2.0).ln()];
    let post: Vec<f64> = ll.iter().zip(prior).map(|(l, p)| l + p).collect();
    let top = post.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let norm: f64 = post.iter().map(|p| (p - top).exp()).sum();
    let p_ref = (post[0] - top).exp() / norm;
    let qual = if p_ref <= 0.0 {
        999.0
    } else {
        (-10.0 * p_ref.log10()).min(999.0)
    };
    (if post[2] > post[1] { "1/1" } else { "0/1" }, qual)
}

/// The SNP call at column `pos`, if any reaches `min_qual`.
fn snp(reference: &[u8], pos: usize, col: &Column, min_qual: f64) -> Option<Call> {
    let r = crate::kmer::CODE[reference[pos] as usize] as usize;
    if r > 3 {
        return None;
    }
    let alt = (0..4).filter(|&b| b != r).max_by_key(|&b| col.count[b])?;
    if col.count[alt] < 2 {
        return None;
    }
    // ln P(reads | genotype): a read of base b contributes ll[b][0] when
    // b is on both haplotypes, ll[b][2] when on one, ll[b][1] when on none.
    let term = |b: usize, k: usize| col.ll[b][k] as f64;
    let (mut rr, mut ra, mut aa) = (0.0, 0.0, 0.0);
    for b in 0..4 {
        rr += if b == r { term(b, 0) } else { term(b, 1) };
        aa += if b == alt { term(b, 0) } else { term(b, 1) };
        ra += if b == r || b == alt {
            term(b, 2)
        } else {
            term(b, 1)
        };
    }
    let (gt, qual) = genotype([rr, ra, aa]);
    (qual >= min_qual).then(|| Call {
        record: Record {
            variant: Variant {
                pos,
                reference: vec![reference[pos]],
                alternate: vec![LETTERS[alt]],
            },
            genotype: gt,
            qual: Some(qual),
            depth: Some(col.depth()),
        },
        alt_reads: col.count[alt] as u32,
    })
}

/// The indel call for `variant` seen in `alt` reads, if it reaches
/// `min_qual`.
fn indel(variant: &Variant, alt: u32, columns: &[Column], min_qual: f64) -> Option<Call> {
    // Depth where the indel starts (the base after its anchor).
    let at = (variant.pos + 1).min(columns.len() - 1);
    let depth = columns[at]
        .depth()
        .max(columns[variant.pos].depth())
        .max(alt);
    if alt < 2 {
        return None;
    }
    let (n, d) = (alt as f64, depth as f64);
    let e = INDEL_ERROR;
    let rr = n * e.ln() + (d - n) * (1.0 - e).ln();
    let ra = d * 0.5f64.ln();
    let aa = n * (1.0 - e).ln() + (d - n) * e.ln();
    let (gt, qual) = genotype([rr, ra, aa]);
    (qual >= min_qual).then(|| Call {
        record: Record {
            variant: variant.clone(),
            genotype: gt,
            qual: Some(qual),
            depth: Some(depth),
        },
        alt_reads: alt,
    })
}

/// Every call the pileup supports at `min_qual`, sorted by position.
pub fn call(reference: &[u8], pileup: &Pileup, min_qual: f64) -> Vec<Call> {
    let mut indels: Vec<Call> = pileup
        .indels
        .iter()
        .filter_map(|(v, &n)| indel(v, n, &pileup.columns, min_qual))
        .collect();
    indels.sort_by_key(|c| c.record.variant.pos);
    let shadowed = |pos: usize| {
        let i = indels.partition_point(|c| {
            c.record.variant.pos + c.record.variant.reference.len() + INDEL_SHADOW < pos
        });
        indels
            .get(i)
            .is_some_and(|c| c.record.variant.pos <= pos + INDEL_SHADOW)
    };
    let mut calls: Vec<Call> = pileup
        .columns
        .par_iter()
        .enumerate()
        .filter_map(|(pos, col)| snp(reference, pos, col, min_qual))
        .filter(|c| !shadowed(c.record.variant.pos))
        .collect();
    calls.extend(indels);
    calls.sort_by(|a, b| {
        (
            a.record.variant.pos,
            &a.record.variant.reference,
            &a.record.variant.alternate,
        )
            .cmp(&(
                b.record.variant.pos,
                &b.record.variant.reference,
                &b.record.variant.alternate,
            ))
    });
    calls
}
