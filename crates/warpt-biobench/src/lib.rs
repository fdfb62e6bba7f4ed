//! The biobench suite: the workloads of a genomics pipeline, each on data
//! whose truth it knows.
//!
//! - [`sw_align`]: Smith-Waterman database search, in GCUPS;
//! - [`kmer_count`]: canonical k-mer counting of reads, in Mbases/s;
//! - [`read_map`]: paired reads mapped to the reference, in reads/s;
//! - [`variant_call`]: SNPs and indels called from the mapped reads, in
//!   variants/s, with precision and recall;
//! - [`assembly`]: de Bruijn assembly of a small genome's reads, in
//!   Mbases/s, with N50, genome fraction and misassemblies;
//! - [`scoring`]: substitution matrices and gap penalties;
//! - [`sw_scalar`], [`sw_inter`], [`sw_striped`]: Smith-Waterman, the `i32`
//!   reference, the SIMD kernel across targets (a database search) and the
//!   striped one along the query (one pair at a time), over the vector
//!   lanes of `sw_lanes`;
//! - [`seqgen`]: seeded proteins and DNA, with planted homologs;
//! - [`genome`], [`reads`]: a reference with repeats, a diploid donor
//!   with planted variants, and paired reads that know their origin;
//! - [`dataset`]: that data, or the user's own files, for a benchmark;
//! - [`fasta`], [`fastq`], [`vcf`]: the formats in and out;
//! - [`kmer`]: canonical k-mers and the partitioned counting table;
//! - [`minimizer`], [`index`], [`align`], [`mapper`], [`sam`]: the read
//!   mapper's sketch, reference index, banded aligner, pairing and output;
//! - [`pileup`], [`caller`]: reads stacked per column, diploid genotypes;
//! - [`debruijn`], [`threading`], [`extend`], [`assess`]: the assembly
//!   graph, the reads threaded on its unitigs, walks that join unitigs
//!   where read pairs say how, and contigs held against the reference;
//! - [`params`], [`threads`]: parameter tables and their checks, the
//!   thread pool.

pub mod align;
pub mod assembly;
pub mod assess;
pub mod caller;
pub mod dataset;
pub mod debruijn;
pub mod extend;
pub mod fasta;
pub mod fastq;
pub mod genome;
pub mod index;
pub mod kmer;
pub mod kmer_count;
pub mod mapper;
pub mod minimizer;
pub mod pileup;
pub mod read_map;
pub mod reads;
pub mod sam;
pub mod scoring;
pub mod seqgen;
pub mod sw_align;
pub mod sw_inter;
mod sw_lanes;
pub mod sw_scalar;
pub mod sw_striped;
pub mod threading;
pub mod threads;
pub mod variant_call;
pub mod vcf;

use warpt_harness::{Listed, ListedSuite};
use warpt_model::BenchmarkSpec;

/// The suite's name.
pub const SUITE: &str = "biobench";

/// A biobench spec's start: a domain workload of the CPUs and memory.
fn domain_spec(name: &str) -> warpt_model::SpecBuilder {
    BenchmarkSpec::builder(SUITE, name)
        .components([
            warpt_model::BenchmarkComponent::Cpu,
            warpt_model::BenchmarkComponent::Ram,
        ])
        .kind(warpt_model::BenchmarkKind::Domain)
}

/// A spec of a benchmark on a dataset ([`dataset`]): its parameters and
/// checks with `own` added.
fn dataset_spec(name: &str, own: Vec<warpt_model::Param>) -> warpt_model::SpecBuilder {
    domain_spec(name)
        .duration(5.0)
        .params(dataset::params())
        .params(own)
        .check(dataset::check_params)
}

/// The suite's benchmarks, in the order `list` shows them.
const BENCHMARKS: &[Listed] = &[
    Listed::new(sw_align::spec, || Box::new(sw_align::SwAlign::new())),
    Listed::new(kmer_count::spec, || {
        Box::new(kmer_count::KmerCount::default())
    }),
    Listed::new(read_map::spec, || Box::new(read_map::ReadMap::default())),
    Listed::new(variant_call::spec, || {
        Box::new(variant_call::VariantCall::default())
    }),
    Listed::new(assembly::spec, || Box::new(assembly::Assembly::default())),
];

/// The biobench suite, for the registry.
pub const BIOBENCH: ListedSuite = ListedSuite {
    name: SUITE,
    description: "Genomics workloads on seeded data with planted truth: Smith-Waterman alignment (GCUPS), k-mer counting, read mapping, variant calling, assembly",
    benchmarks: BENCHMARKS,
};
