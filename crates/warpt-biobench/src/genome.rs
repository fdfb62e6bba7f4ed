//! Seeded genomes with planted truth: a reference with the repeat
//! structure that makes real genomes hard (microsatellites, tandem
//! repeats, families of diverged interspersed copies), and a diploid donor
//! that differs from it by known SNPs and small indels.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::seqgen::{self, Alphabet};

/// A small variant against the reference, in VCF's convention: `pos` is
/// 0-based; an indel carries its anchor base (the base before it) in both
/// alleles. Indels are left-aligned, so one event has one spelling.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Variant {
    /// 0-based position of the first reference base of `reference`.
    pub pos: usize,
    /// The reference allele, as letters.
    pub reference: Vec<u8>,
    /// The alternate allele, as letters.
    pub alternate: Vec<u8>,
}

impl Variant {
    /// A single-base substitution.
    pub fn is_snp(&self) -> bool {
        self.reference.len() == 1 && self.alternate.len() == 1
    }
}

/// Which haplotypes of the diploid donor carry a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Genotype {
    /// One haplotype (`0/1`); which one is the `usize`.
    Het(usize),
    /// Both (`1/1`).
    Hom,
}

impl Genotype {
    /// The VCF spelling.
    pub fn vcf(self) -> &'static str {
        match self {
            Genotype::Het(_) => "0/1",
            Genotype::Hom => "1/1",
        }
    }

    fn on(self, hap: usize) -> bool {
        match self {
            Genotype::Het(h) => h == hap,
            Genotype::Hom => true,
        }
    }
}

/// A reference of `len` bases: 41% GC background with about 2% tandem
/// repeats (microsatellites of 1–6 bp units, minisatellites of 10–60 bp)
/// and about 10% interspersed copies of a few repeat families (300 bp to
/// 3 kb, each copy 2–15% diverged from its family).
pub fn reference(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x9e11_0e5e);
    let dna = Alphabet::Dna;
    let families: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            let flen = [300, 700, 1500, 3000][i];
            seqgen::sequence(&mut rng, dna, flen)
        })
        .collect();
    let mut out = Vec::with_capacity(len + 4096);
    while out.len() < len {
        // Unique sequence between repeats: 200 bp to 8 kb.
        let unique = 200 + (rng.next_u64() % 7800) as usize;
        out.extend(seqgen::sequence(&mut rng, dna, unique));
        let u = seqgen::unit(&mut rng);
        if u < 0.45 {
            let family = &families[(rng.next_u64() % families.len() as u64) as usize];
            let divergence = 0.02 + 0.13 * seqgen::unit(&mut rng);
            out.extend(seqgen::mutate(
                &mut rng,
                dna,
                family,
                divergence,
                divergence / 10.0,
            ));
        } else if u < 0.75 {
            let unit_len = 1 + (rng.next_u64() % 6) as usize;
            let copies = 6 + (rng.next_u64() % 20) as usize;
            let motif = seqgen::sequence(&mut rng, dna, unit_len);
            for _ in 0..copies {
                out.extend_from_slice(&motif);
            }
        } else {
            let unit_len = 10 + (rng.next_u64() % 51) as usize;
            let copies = 3 + (rng.next_u64() % 8) as usize;
            let motif = seqgen::sequence(&mut rng, dna, unit_len);
            for _ in 0..copies {
                out.extend(seqgen::mutate(&mut rng, dna, &motif, 0.02, 0.0));
            }
        }
    }
    out.truncate(len);
    out
}

/// Left-aligns an indel and trims it to its one anchor base (vt's and
/// `bcftools norm`'s normalisation); substitutions are returned as they
/// are. `seq` is the reference the variant is against.
pub fn normalize(seq: &[u8], v: &Variant) -> Variant {
    let (mut pos, mut r, mut a) = (v.pos, v.reference.clone(), v.alternate.clone());
    if r.len() == a.len() {
        return v.clone();
    }
    loop {
        // Trim a shared last base; when an allele empties, extend both to
        // the left with the reference base before.
        if !r.is_empty() && !a.is_empty() && r.last() == a.last() {
            r.pop();
            a.pop();
        }
        if r.is_empty() || a.is_empty() {
            if pos == 0 {
                break;
            }
            pos -= 1;
            r.insert(0, seq[pos]);
            a.insert(0, seq[pos]);
            continue;
        }
        if r.last() != a.last() {
            break;
        }
    }
    // Trim shared first bases while both keep at least one.
    while r.len() > 1 && a.len() > 1 && r[0] == a[0] {
        r.remove(0);
        a.remove(0);
        pos += 1;
    }
    Variant {
        pos,
        reference: r,
        alternate: a,
    }
}

/// A diploid donor: the reference with planted variants, and the two
/// haplotype sequences that carry them.
pub struct Donor {
    /// The planted variants, sorted and normalised, with their genotypes.
    pub variants: Vec<(Variant, Genotype)>,
    /// The two haplotypes, as letters.
    pub haplotypes: [Vec<u8>; 2],
    /// For each haplotype base, the reference position it came from (an
    /// inserted base takes its anchor's).
    pub to_reference: [Vec<u32>; 2],
}

/// Plants SNPs (rate `snp_rate` per base) and indels of 1–6 bases
/// (`indel_rate`, half insertions, half deletions) into `seq`, a third
/// homozygous, at least 12 bases apart, and builds the two haplotypes.
pub fn donor(seed: u64, seq: &[u8], snp_rate: f64, indel_rate: f64) -> Donor {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xd0_0a0e);
    let mut variants = Vec::new();
    let mut pos = 20;
    let total = snp_rate + indel_rate;
    while total > 0.0 && pos + 20 < seq.len() {
        // The gap to the next variant is geometric with mean 1/total.
        let gap = (-(1.0 - seqgen::unit(&mut rng)).ln() / total) as usize;
        pos += gap.max(12);
        if pos + 20 >= seq.len() {
            break;
        }
        let genotype = if rng.next_u64() % 3 == 0 {
            Genotype::Hom
        } else {
            Genotype::Het((rng.next_u64() & 1) as usize)
        };
        let raw = if seqgen::unit(&mut rng) < snp_rate / total {
            let mut alt = seq[pos];
            while alt == seq[pos] {
                alt = b"ACGT"[(rng.next_u64() % 4) as usize];
            }
            Variant {
                pos,
                reference: vec![seq[pos]],
                alternate: vec![alt],
            }
        } else {
            let len = 1 + (-(1.0 - seqgen::unit(&mut rng)).ln() * 1.5) as usize;
            let len = len.min(6);
            if rng.next_u64() & 1 == 0 {
                let mut alt = vec![seq[pos]];
                alt.extend(seqgen::sequence(&mut rng, Alphabet::Dna, len));
                Variant {
                    pos,
                    reference: vec![seq[pos]],
                    alternate: alt,
                }
            } else {
                Variant {
                    pos,
                    reference: seq[pos..=pos + len].to_vec(),
                    alternate: vec![seq[pos]],
                }
            }
        };
        let v = normalize(seq, &raw);
        // Normalisation moves an indel left; keep variants apart so no two
        // overlap after it.
        if variants
            .last()
            .is_some_and(|(p, _): &(Variant, Genotype)| p.pos + p.reference.len() + 2 > v.pos)
        {
            pos += raw.reference.len();
            continue;
        }
        pos += raw.reference.len();
        variants.push((v, genotype));
    }
    let build = |hap: usize| {
        let mut out = Vec::with_capacity(seq.len() + 64);
        let mut map = Vec::with_capacity(seq.len() + 64);
        let mut at = 0;
        for (v, _) in variants.iter().filter(|(_, g)| g.on(hap)) {
            for (i, &b) in seq[at..v.pos].iter().enumerate() {
                out.push(b);
                map.push((at + i) as u32);
            }
            for (i, &b) in v.alternate.iter().enumerate() {
                out.push(b);
                map.push((v.pos + i.min(v.reference.len() - 1)) as u32);
            }
            at = v.pos + v.reference.len();
        }
        for (i, &b) in seq[at..].iter().enumerate() {
            out.push(b);
            map.push((at + i) as u32);
        }
        (out, map)
    };
    let (h0, m0) = build(0);
    let (h1, m1) = build(1);
    Donor {
        variants,
        haplotypes: [h0, h1],
        to_reference: [m0, m1],
    }
}

/// `seq` reverse-complemented (letters; anything but ACGT becomes N).
pub fn revcomp(seq: &[u8]) -> Vec<u8> {
    seq.iter()
        .rev()
        .map(|&b| match b {
            b'A' => b'T',
            b'C' => b'G',
            b'G' => b'C',
            b'T' => b'A',
            _ => b'N',
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A variant at `pos`, `r` to `a` (for vcf's tests too).
    pub(crate) fn v(pos: usize, r: &[u8], a: &[u8]) -> Variant {
        Variant {
            pos,
            reference: r.to_vec(),
            alternate: a.to_vec(),
        }
    }

    #[test]
    fn normalize_left_aligns_in_repeats() {
        let seq = b"GATTTTTC";
        // Deleting any one T of the run is the same event: anchored on G.
        assert_eq!(normalize(seq, &v(4, b"TT", b"T")), v(1, b"AT", b"A"));
        assert_eq!(normalize(seq, &v(1, b"AT", b"A")), v(1, b"AT", b"A"));
        // An inserted CA in CACACA slides to the first copy's anchor.
        let seq = b"TCACACAG";
        assert_eq!(normalize(seq, &v(5, b"C", b"CAC")), v(0, b"T", b"TCA"));
        // SNPs are left as they are.
        assert_eq!(normalize(seq, &v(3, b"A", b"G")), v(3, b"A", b"G"));
    }

    #[test]
    fn reference_has_gc_and_repeats() {
        let seq = reference(1, 200_000);
        assert_eq!(seq.len(), 200_000);
        let gc = seq.iter().filter(|&&b| b == b'G' || b == b'C').count() as f64 / 2e5;
        assert!((0.38..0.44).contains(&gc), "GC {gc}");
        // Repeats: some 24-mers occur more than once (random 24-mers in
        // 200 kb essentially never do).
        let mut seen = std::collections::HashMap::new();
        for w in seq.windows(24).step_by(7) {
            *seen.entry(w).or_insert(0) += 1;
        }
        let repeated = seen.values().filter(|&&c| c > 1).count();
        assert!(repeated > 100, "{repeated} repeated 24-mers");
    }

    #[test]
    fn donor_haplotypes_carry_the_planted_variants() {
        let seq = reference(2, 100_000);
        let d = donor(3, &seq, 0.002, 0.0005);
        let snps = d.variants.iter().filter(|(v, _)| v.is_snp()).count();
        let indels = d.variants.len() - snps;
        assert!((120..300).contains(&snps), "{snps} SNPs");
        assert!((20..90).contains(&indels), "{indels} indels");
        for hap in 0..2 {
            let h = &d.haplotypes[hap];
            let map = &d.to_reference[hap];
            assert_eq!(h.len(), map.len());
            // Every base away from a variant matches the reference base it
            // maps to.
            let near = |p: usize| {
                d.variants
                    .iter()
                    .any(|(v, _)| p + 8 >= v.pos && p <= v.pos + v.reference.len() + 8)
            };
            for (i, &b) in h.iter().enumerate() {
                let r = map[i] as usize;
                if !near(r) {
                    assert_eq!(b, seq[r], "hap {hap} base {i} ref {r}");
                }
            }
            let expected: i64 = d
                .variants
                .iter()
                .filter(|(_, g)| g.on(hap))
                .map(|(v, _)| v.alternate.len() as i64 - v.reference.len() as i64)
                .sum();
            assert_eq!(h.len() as i64 - seq.len() as i64, expected);
        }
        // Variants are normalised already.
        for (v, _) in &d.variants {
            assert_eq!(&normalize(&seq, v), v);
        }
    }
}
