//! VCF 4.2 output (truth sets and calls) and the comparison of calls
//! with truth after normalisation.
//!
//! Written as text: a record is one formatted line, and the file is
//! checked by `bcftools view` in the tests, the tool the field reads VCF
//! with.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use crate::dataset::Genome;
use crate::genome::{self, Variant};

/// One VCF record: a variant, its genotype and, for a call, its quality
/// and depth.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The variant, in global coordinates.
    pub variant: Variant,
    /// `0/1` or `1/1`.
    pub genotype: &'static str,
    /// Phred-scaled quality that the site is not reference, if called.
    pub qual: Option<f64>,
    /// Reads covering the site, if called.
    pub depth: Option<u32>,
}

/// Writes `records` (sorted by position) as a one-sample VCF.
pub fn write(path: &Path, genome: &Genome, records: &[Record], source: &str) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut out = std::io::BufWriter::new(file);
    write_to(&mut out, genome, records, source).map_err(fail)?;
    out.flush().map_err(fail)
}

/// Writes the VCF text of `records` into `out`.
pub fn write_to(
    out: &mut impl Write,
    genome: &Genome,
    records: &[Record],
    source: &str,
) -> std::io::Result<()> {
    writeln!(out, "##fileformat=VCFv4.2")?;
    writeln!(out, "##source={source}")?;
    for (i, (name, _)) in genome.contigs.iter().enumerate() {
        writeln!(out, "##contig=<ID={name},length={}>", genome.contig_len(i))?;
    }
    writeln!(
        out,
        "##INFO=<ID=DP,Number=1,Type=Integer,Description=\"Reads covering the site\">"
    )?;
    writeln!(
        out,
        "##FORMAT=<ID=GT,Number=1,Type=String,Description=\"Genotype\">"
    )?;
    writeln!(
        out,
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tsample"
    )?;
    for r in records {
        let (contig, pos) = genome.locate(r.variant.pos);
        let qual = r.qual.map_or(".".to_string(), |q| format!("{q:.1}"));
        let info = r.depth.map_or(".".to_string(), |d| format!("DP={d}"));
        writeln!(
            out,
            "{}\t{}\t.\t{}\t{}\t{qual}\tPASS\t{info}\tGT\t{}",
            genome.contigs[contig].0,
            pos + 1,
            String::from_utf8_lossy(&r.variant.reference),
            String::from_utf8_lossy(&r.variant.alternate),
            r.genotype
        )?;
    }
    Ok(())
}

/// How calls compare with truth.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Accuracy {
    /// Calls that are in the truth.
    pub true_positives: usize,
    /// Calls that are not.
    pub false_positives: usize,
    /// Truth that was not called.
    pub false_negatives: usize,
}

impl Accuracy {
    /// Compares `calls` with `truth` by position and alleles after both
    /// are normalised against `seq` (genotypes are not compared).
    pub fn of(seq: &[u8], calls: &[Variant], truth: &[Variant]) -> Self {
        let norm = |v: &Variant| genome::normalize(seq, v);
        let truth: HashSet<Variant> = truth.iter().map(norm).collect();
        let calls: HashSet<Variant> = calls.iter().map(norm).collect();
        let tp = calls.intersection(&truth).count();
        Accuracy {
            true_positives: tp,
            false_positives: calls.len() - tp,
            false_negatives: truth.len() - tp,
        }
    }

    /// Share of calls that are true, %.
    pub fn precision(&self) -> f64 {
        pct(
            self.true_positives,
            self.true_positives + self.false_positives,
        )
    }

    /// Share of truth that was called, %.
    pub fn recall(&self) -> f64 {
        pct(
            self.true_positives,
            self.true_positives + self.false_negatives,
        )
    }

    /// Harmonic mean of precision and recall, %.
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genome::tests::v;

    #[test]
    fn accuracy_matches_after_normalisation() {
        let seq = b"GATTTTTCAGGA";
        let truth = [v(1, b"AT", b"A"), v(9, b"G", b"C")];
        // The same deletion spelt further right, one wrong SNP allele.
        let calls = [v(4, b"TT", b"T"), v(9, b"G", b"T")];
        let a = Accuracy::of(seq, &calls, &truth);
        assert_eq!(
            (a.true_positives, a.false_positives, a.false_negatives),
            (1, 1, 1)
        );
        assert_eq!(a.precision(), 50.0);
        assert_eq!(a.recall(), 50.0);
        assert_eq!(a.f1(), 50.0);
    }

    #[test]
    fn writes_contig_coordinates() {
        let genome = Genome {
            seq: b"ACGTACGTAC".to_vec(),
            contigs: vec![("a".into(), 0), ("b".into(), 4)],
        };
        let records = [Record {
            variant: v(5, b"C", b"G"),
            genotype: "0/1",
            qual: Some(30.0),
            depth: Some(12),
        }];
        let mut out = Vec::new();
        write_to(&mut out, &genome, &records, "test").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("##contig=<ID=b,length=6>"), "{text}");
        assert!(
            text.ends_with("b\t2\t.\tC\tG\t30.0\tPASS\tDP=12\tGT\t0/1\n"),
            "{text}"
        );
    }
}
