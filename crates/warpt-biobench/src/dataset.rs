//! The data a genomics benchmark runs on: a reference, a donor's reads and
//! the truth behind them — generated from the seed, or the user's own
//! files (`reference=`, `reads=`, `reads2=`), where truth is unknown.
//!
//! All positions are in one coordinate system: the contigs of the
//! reference laid end to end ([`Genome`]); they are turned back into
//! (contig, position) only when written out.

use std::path::Path;

use warpt_harness::{BenchmarkError, RunContext, WorkLimit, at_floor_rate};
use warpt_model::{Param, ParamValue, Params};

use crate::genome::{self, Genotype, Variant};
use crate::reads::{self, ReadSet, ReadSpec};
use crate::{fasta, fastq, vcf};

/// Largest generated reference, kilobases.
pub const MAX_GENOME_KB: i64 = 4_000_000;

/// The parameters every benchmark on reads shares.
pub fn params() -> Vec<Param> {
    vec![
        Param::input_path("reference", "").help("FASTA reference; empty = generated from the seed"),
        Param::input_path("reads", "")
            .help("FASTQ reads (first mates); empty = simulated from a donor of the reference"),
        Param::input_path("reads2", "")
            .help("FASTQ second mates, in the order of reads=; empty = single-end"),
        genome_kb(1000),
        Param::float("coverage", 20.0, 0.01..=1000.0)
            .help("mean depth of the simulated reads (both mates counted)"),
        Param::int("read_length", 150, 20..=10_000)
            .unit("bases")
            .help("bases per simulated read"),
        Param::int("insert_size", 400, 20..=100_000)
            .unit("bases")
            .help("mean fragment length of simulated pairs (standard deviation 10%)"),
        Param::float("error_rate", 0.005, 0.0..=0.2)
            .help("mean substitution error rate per simulated base, rising along the read"),
        Param::float("snp_rate", 0.001, 0.0..=0.05).help("planted SNPs per reference base"),
        Param::float("indel_rate", 0.0002, 0.0..=0.02)
            .help("planted indels (1-6 bases) per reference base"),
        Param::output_path("export", "").help(
            "write the data here: reference.fa, reads_1.fq, reads_2.fq, truth.vcf; empty = nowhere",
        ),
    ]
}

/// `genome_kb` with its own default (assembly's is smaller).
pub fn genome_kb(default: i64) -> Param {
    Param::int("genome_kb", default, 1..=MAX_GENOME_KB)
        .unit("kb")
        .help("size of the generated reference, kilobases")
}

/// The threads parameter of every benchmark of the suite.
pub fn threads() -> Param {
    Param::int("threads", 0, 0..=4096).help("threads; 0 = one per CPU")
}

/// The validation self-test of every benchmark of the suite.
pub fn inject_error(what: &str) -> Param {
    Param::int("inject_error", 0, 0..=1).help(format!(
        "1 = {what} after the timed passes (tests the validation)"
    ))
}

/// What [`params`] cannot declare: the input files exist, second mates
/// come with first ones, and fragments are no shorter than reads.
pub fn check_params(p: &Params) -> Result<(), String> {
    for key in ["reference", "reads", "reads2"] {
        check_file(p, key)?;
    }
    let given = |k: &str| {
        p.get(k)
            .and_then(ParamValue::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    if given("reads2") && !given("reads") {
        return Err("parameter 'reads2': second mates need reads= (the first mates)".into());
    }
    let insert = p.get("insert_size").and_then(ParamValue::as_i64);
    let length = p.get("read_length").and_then(ParamValue::as_i64);
    if let (Some(i), Some(l)) = (insert, length)
        && i < l
    {
        return Err(format!(
            "parameter 'insert_size' ({i}) must be at least read_length ({l})"
        ));
    }
    Ok(())
}

/// `key`, when given, names a file that exists.
pub fn check_file(p: &Params, key: &str) -> Result<(), String> {
    match p.get(key).and_then(ParamValue::as_str) {
        Some(path) if !path.is_empty() => match std::fs::metadata(path) {
            Ok(m) if m.is_file() => Ok(()),
            Ok(_) => Err(format!("parameter '{key}': {path} is not a file")),
            Err(e) => Err(format!("parameter '{key}': {path}: {e}")),
        },
        _ => Ok(()),
    }
}

/// A reference: its contigs laid end to end.
#[derive(Debug, Clone, Default)]
pub struct Genome {
    /// All bases, upper-case letters.
    pub seq: Vec<u8>,
    /// Each contig's name and where it starts in `seq`.
    pub contigs: Vec<(String, usize)>,
}

impl Genome {
    /// One generated contig.
    pub fn single(name: &str, seq: Vec<u8>) -> Self {
        Genome {
            seq,
            contigs: vec![(name.into(), 0)],
        }
    }

    /// The contig holding global position `pos`, and `pos` within it.
    pub fn locate(&self, pos: usize) -> (usize, usize) {
        let i = self
            .contigs
            .partition_point(|c| c.1 <= pos)
            .saturating_sub(1);
        (i, pos - self.contigs[i].1)
    }

    /// Where contig `i` ends (exclusive).
    pub fn contig_end(&self, i: usize) -> usize {
        self.contigs.get(i + 1).map_or(self.seq.len(), |c| c.1)
    }

    /// Length of contig `i`.
    pub fn contig_len(&self, i: usize) -> usize {
        self.contig_end(i) - self.contigs[i].1
    }
}

/// Reads, the reference and, for generated data, the truth.
pub struct Dataset {
    /// The reference (empty when only reads were given).
    pub genome: Genome,
    /// The reads.
    pub reads: ReadSet,
    /// The planted variants, in global coordinates; `None` for the
    /// user's reads.
    pub truth: Option<Vec<(Variant, Genotype)>>,
    /// Where each part came from, for the result's details.
    pub source: String,
}

/// What a benchmark needs of the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Reads only (a reference is generated only to simulate them).
    Reads,
    /// Reads and the reference they are placed on.
    ReadsAndReference,
}

fn invalid(key: &str, reason: impl Into<String>) -> BenchmarkError {
    BenchmarkError::InvalidParam {
        key: key.into(),
        reason: reason.into(),
    }
}

/// Memory a benchmark needs per reference base at most (sequence, donor
/// haplotypes, index), to refuse a reference that cannot fit.
const BYTES_PER_REFERENCE_BASE: u64 = 40;

fn check_memory(bases: u64, what: &str) -> Result<(), BenchmarkError> {
    let available = warpt_system::memory_quick().available_bytes;
    let need = bases * BYTES_PER_REFERENCE_BASE;
    if available > 0 && need > available {
        return Err(BenchmarkError::Failed(format!(
            "{what} of {:.1} Mbases needs about {:.1} GiB of memory; {:.1} GiB are available",
            bases as f64 / 1e6,
            need as f64 / (1u64 << 30) as f64,
            available as f64 / (1u64 << 30) as f64
        )));
    }
    Ok(())
}

impl Dataset {
    /// Loads or generates the data the parameters describe, and writes it
    /// where `export` says (if anywhere).
    pub fn prepare(ctx: &RunContext, needs: Needs) -> Result<Self, BenchmarkError> {
        let data = Self::load(ctx, needs)?;
        let export = ctx.str_param("export")?;
        if !export.is_empty() {
            data.export(std::path::Path::new(export))
                .map_err(BenchmarkError::Failed)?;
        }
        Ok(data)
    }

    /// Loads or generates the data the parameters describe.
    fn load(ctx: &RunContext, needs: Needs) -> Result<Self, BenchmarkError> {
        let reference_path = ctx.str_param("reference")?.to_string();
        let reads_path = ctx.str_param("reads")?.to_string();
        let reads2_path = ctx.str_param("reads2")?.to_string();
        if needs == Needs::ReadsAndReference && !reads_path.is_empty() && reference_path.is_empty()
        {
            return Err(invalid(
                "reference",
                "reads= given without the reference= to place them on",
            ));
        }
        let genome = if reference_path.is_empty() {
            if !reads_path.is_empty() {
                Genome::default()
            } else {
                let bases = ctx.int_param("genome_kb", 1)? as u64 * 1000;
                check_memory(bases, "a generated reference")?;
                Genome::single("sim", genome::reference(ctx.seed, bases as usize))
            }
        } else {
            let size = std::fs::metadata(&reference_path)
                .map_err(|e| BenchmarkError::Failed(format!("{reference_path}: {e}")))?
                .len();
            check_memory(size, &format!("the reference {reference_path}"))?;
            load_reference(Path::new(&reference_path))?
        };
        if !reads_path.is_empty() {
            let first = fastq::read(Path::new(&reads_path)).map_err(BenchmarkError::Failed)?;
            let second = if reads2_path.is_empty() {
                Vec::new()
            } else {
                fastq::read(Path::new(&reads2_path)).map_err(BenchmarkError::Failed)?
            };
            if !second.is_empty() && second.len() != first.len() {
                return Err(BenchmarkError::Failed(format!(
                    "{reads_path} has {} reads but {reads2_path} has {}: the mates do not pair up",
                    first.len(),
                    second.len()
                )));
            }
            if let Some(i) =
                (0..second.len()).find(|&i| !same_pair(&first[i].name, &second[i].name))
            {
                return Err(BenchmarkError::Failed(format!(
                    "read {} is '{}' in {reads_path} but '{}' in {reads2_path}: the mates do not pair up",
                    i + 1,
                    first[i].name,
                    second[i].name
                )));
            }
            return Ok(Dataset {
                genome,
                reads: ReadSet {
                    first,
                    second,
                    origins: None,
                },
                truth: None,
                source: format!("reads from {reads_path}"),
            });
        }
        let read_length = ctx.int_param("read_length", 20)? as usize;
        let insert = ctx.int_param("insert_size", 20)? as f64;
        let spec = ReadSpec::new(
            read_length,
            ctx.float_param("coverage")?,
            ctx.float_param("error_rate")?,
            insert,
        );
        if let Some(short) =
            (0..genome.contigs.len()).find(|&i| genome.contig_len(i) < insert as usize * 2)
        {
            return Err(BenchmarkError::Failed(format!(
                "contig '{}' ({} bases) is too short to simulate {insert}-base fragments from",
                genome.contigs[short].0,
                genome.contig_len(short)
            )));
        }
        let donor = genome::donor(
            ctx.seed,
            &genome.seq,
            ctx.float_param("snp_rate")?,
            ctx.float_param("indel_rate")?,
        );
        let boundaries: Vec<usize> = genome.contigs.iter().map(|c| c.1).collect();
        let reads = reads::simulate(ctx.seed, &donor, &boundaries, genome.seq.len(), spec);
        let source = if reference_path.is_empty() {
            "generated reference, simulated reads".to_string()
        } else {
            format!("reads simulated from {reference_path}")
        };
        Ok(Dataset {
            genome,
            reads,
            truth: Some(donor.variants),
            source,
        })
    }

    /// Writes the data into `dir` (created if missing): `reference.fa`,
    /// `reads_1.fq`, `reads_2.fq` and, with truth, `truth.vcf`.
    pub fn export(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if !self.genome.seq.is_empty() {
            write_fasta(&dir.join("reference.fa"), &self.genome)?;
        }
        fastq::write(&dir.join("reads_1.fq"), self.reads.first.iter())?;
        if !self.reads.second.is_empty() {
            fastq::write(&dir.join("reads_2.fq"), self.reads.second.iter())?;
        }
        if let Some(truth) = &self.truth {
            let records: Vec<vcf::Record> = truth
                .iter()
                .map(|(v, g)| vcf::Record {
                    variant: v.clone(),
                    genotype: g.vcf(),
                    qual: None,
                    depth: None,
                })
                .collect();
            vcf::write(
                &dir.join("truth.vcf"),
                &self.genome,
                &records,
                "warpt-biobench planted truth",
            )?;
        }
        Ok(())
    }
}

/// Mates are named alike, up to a `/1` `/2` suffix.
fn same_pair(a: &str, b: &str) -> bool {
    let strip = |s: &str| {
        s.strip_suffix("/1")
            .or_else(|| s.strip_suffix("/2"))
            .unwrap_or(s)
            .to_string()
    };
    strip(a) == strip(b)
}

fn load_reference(path: &Path) -> Result<Genome, BenchmarkError> {
    let records = fasta::read(path).map_err(BenchmarkError::Failed)?;
    let mut genome = Genome::default();
    for r in records {
        genome.contigs.push((r.name, genome.seq.len()));
        genome
            .seq
            .extend(r.sequence.iter().map(|b| match b.to_ascii_uppercase() {
                b @ (b'A' | b'C' | b'G' | b'T') => b,
                _ => b'N',
            }));
    }
    Ok(genome)
}

fn write_fasta(path: &Path, genome: &Genome) -> Result<(), String> {
    use std::io::Write;
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut writer = noodles_fasta::io::Writer::new(std::io::BufWriter::new(file));
    for (i, (name, start)) in genome.contigs.iter().enumerate() {
        let record = noodles_fasta::Record::new(
            noodles_fasta::record::Definition::new(name.as_str(), None),
            noodles_fasta::record::Sequence::from(
                genome.seq[*start..genome.contig_end(i)].to_vec(),
            ),
        );
        writer.write_record(&record).map_err(fail)?;
    }
    writer.get_mut().flush().map_err(fail)
}

/// Bases per second assumed for the stage limits: generating or parsing the
/// data, and each pass of a benchmark over it (mapping, counting, calling,
/// assembling). Far below what any of them does on a 2-core VM, so a limit
/// stops a stuck benchmark, not one given a big genome.
const FLOOR_BASES_PER_S: f64 = 0.25e6;

/// The bases the parameters describe: the reference (generated, or its
/// file's size) and the reads (generated at `coverage`, or their files').
fn planned_bases(ctx: &RunContext) -> (f64, f64) {
    let file = |key: &str| {
        ctx.str_param(key)
            .ok()
            .filter(|p| !p.is_empty())
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.len() as f64)
    };
    let reference = file("reference").unwrap_or_else(|| {
        ctx.int_param("genome_kb", 1)
            .map_or(0.0, |kb| kb as f64 * 1000.0)
    });
    let reads = match file("reads") {
        Some(first) => first + file("reads2").unwrap_or(0.0),
        None => reference * ctx.float_param("coverage").unwrap_or(0.0),
    };
    (reference, reads)
}

/// The setup limit of a benchmark that prepares a [`Dataset`]: the data
/// generated or read at the floor rate, and one pass over it for each of
/// `then` (work `prepare` does on the data, such as mapping the reads).
pub fn setup_limit(ctx: &RunContext, then: &[&str]) -> Option<WorkLimit> {
    let (reference, reads) = planned_bases(ctx);
    let passes = 1 + then.len() as u32;
    Some(WorkLimit::setup(
        at_floor_rate(reference + reads, FLOOR_BASES_PER_S) * passes,
        format!(
            "the data ({:.1} Mb of reference, {:.1} Mb of reads){} at a floor of {} Mb/s a pass",
            reference / 1e6,
            reads / 1e6,
            then.iter()
                .map(|t| format!(", then {t}"))
                .collect::<String>(),
            FLOOR_BASES_PER_S / 1e6
        ),
    ))
}

/// The warm-up and measure limits of a benchmark whose every sample is one
/// pass of `what` over the dataset's reads: whatever the duration, the
/// warm-up and the measurement each take at least one pass.
pub fn pass_limits(ctx: &RunContext, what: &str) -> Vec<WorkLimit> {
    let (reference, reads) = planned_bases(ctx);
    let pass = at_floor_rate(reference + reads, FLOOR_BASES_PER_S);
    let part = format!(
        "{what} over {:.1} Mb: {:.0} s a pass at a floor of {} Mb/s",
        (reference + reads) / 1e6,
        pass.as_secs_f64(),
        FLOOR_BASES_PER_S / 1e6
    );
    vec![
        WorkLimit::warmup(ctx.burnin, pass, part.clone()),
        WorkLimit::measure(ctx.duration, pass, part),
    ]
}
