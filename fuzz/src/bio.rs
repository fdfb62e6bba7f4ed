//! Sequencing inputs the bioinformatics benchmarks read: FASTA (`genome=`)
//! and FASTQ (`reads=`). warpt writes SAM and VCF but reads neither.

use warpt_biobench::{fasta, fastq};

use crate::scratch;

/// A FASTA file. Property: what the line check passes, noodles reads, and
/// every record has a name and residues.
pub fn fasta(data: &[u8]) {
    let path = scratch::file("genome.fa", data);
    if let Ok(records) = fasta::read(&path) {
        assert!(!records.is_empty());
        assert!(
            records.iter().all(|r| !r.sequence.is_empty()),
            "{records:?}"
        );
    }
}

/// A FASTQ file. Property: every read read has as many qualities as bases.
pub fn fastq(data: &[u8]) {
    let path = scratch::file("reads.fq", data);
    if let Ok(reads) = fastq::read(&path) {
        assert!(!reads.is_empty());
        assert!(
            reads.iter().all(|r| r.seq.len() == r.qual.len()),
            "{reads:?}"
        );
    }
}
