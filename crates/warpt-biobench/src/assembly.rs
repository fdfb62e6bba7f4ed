//! `assembly`: de Bruijn graph assembly of the reads of a small genome
//! (velvet's job), in Mbases of reads per second, the contigs held
//! against the reference.

use std::collections::HashMap;

use rand_core::{RngCore, SeedableRng};
use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasurePolicy, MeasureResult, Measured, RunContext,
    SeriesDef,
};
use warpt_model::{BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Params, Validation};

use crate::assess::{self, Assessment};
use crate::dataset::{self, Dataset, Needs};
use crate::debruijn::{self, Cleaning, Graph};
use crate::extend::{self, Extension};
use crate::genome::revcomp;
use crate::kmer::{CODE, Counts};
use crate::threading::Threads;
use crate::threads;

/// Benchmark name within the suite.
pub const NAME: &str = "assembly";

/// Contig k-mers the validation recounts in the reads.
const SAMPLE: usize = 2000;

fn params() -> Vec<Param> {
    vec![
        // A small genome: assembly is the costliest step per base.
        dataset::genome_kb(200),
        Param::int("k", 31, 15..=31).help("k-mer length, odd, 15 to 31"),
        // Two, as minia's default: at 20x a k-mer seen twice is more often
        // a thin stretch of the genome than an error seen twice, and the
        // clean-up removes the errors' tips and bubbles.
        Param::int("min_count", 2, 1..=1000)
            .help("k-mers seen fewer times are sequencing errors and left out"),
        Param::int("min_contig", 200, 1..=1_000_000)
            .unit("bases")
            .help("shorter contigs are not reported (nor counted in N50)"),
        dataset::threads(),
        Param::output_path("contigs", "")
            .help("write the contigs of the last pass here as FASTA; empty = nowhere"),
        dataset::inject_error("append a foreign piece to one contig"),
    ]
}

/// The spec of `assembly`.
pub fn spec() -> BenchmarkSpec {
    crate::domain_spec(NAME)
        .description(
            "De Bruijn graph assembly (velvet's job): canonical k-mers of all reads counted on all cores, those \
                 seen fewer than min_count times dropped as errors, maximal non-branching paths spelled as unitigs, \
                 tips (dead ends shorter than 2k) and bubbles (two paths between the same single-copy k-mers; the \
                 weaker goes) removed, unitigs rebuilt; then walks from each single-copy unitig join unitigs where \
                 the way is clear: one successor, the one read pairs vouch for (mates facing each other at the \
                 insert size measured within unitigs), a tangle crossed to the single-copy unitig pairs vouch for, \
                 a tandem repeat's cycle, a heterozygous bubble. Metric `mbases_per_s`: read bases / seconds of the \
                 whole assembly; `n50` (contigs >= min_contig), and against the reference (simulated data or \
                 reference=): `genome_fraction_pct` (reference bases inside blocks of at least 65 bases where \
                 contigs' unique 31-mers anchor) and `misassemblies` (breaks between such blocks of a contig jumping \
                 > 1 kb, flipping strand or changing contig). \
                 Validation: sampled contig k-mers recounted in the reads by a HashMap are all solid.",
        )
        .duration(5.0)
        .params(dataset::params())
        .params(params())
        .check(check_params)
        .metric("mbases_per_s")
        .metric("n50")
        .metric("genome_fraction_pct")
        .metric("misassemblies")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(p: &Params) -> Result<(), String> {
    dataset::check_params(p)?;
    if let Some(k) = p.get("k").and_then(ParamValue::as_i64)
        && k % 2 == 0
    {
        return Err(format!(
            "parameter 'k' must be odd (an even k-mer can be its own reverse complement), not {k}"
        ));
    }
    Ok(())
}

/// The prepared reads and the last pass's contigs.
#[derive(Default)]
pub struct Assembly {
    data: Option<Dataset>,
    pool: Option<rayon::ThreadPool>,
    k: usize,
    min_count: u32,
    min_contig: usize,
    contigs: Vec<Vec<u8>>,
    seed: u64,
    inject_error: bool,
    contigs_path: String,
}

/// What one assembly did besides its contigs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Steps {
    /// The graph's clean-up.
    pub cleaning: Cleaning,
    /// The walks across unitigs.
    pub extension: Extension,
}

/// Assembles paired reads (`first[i]` and `second[i]` the mates of pair
/// `i`; `second` empty for single-end reads): the contigs of at least
/// `min_contig` bases, longest first, and what each step did.
pub fn assemble(
    first: &[&[u8]],
    second: &[&[u8]],
    k: usize,
    min_count: u32,
    min_contig: usize,
    expected: usize,
) -> (Vec<Vec<u8>>, Steps) {
    let reads: Vec<&[u8]> = first.iter().chain(second).copied().collect();
    let counts = Counts::<u64>::count(&reads, k, expected);
    let mut graph = Graph::new(&counts, min_count);
    let cleaning = graph.clean(4);
    let unitigs = graph.unitigs();
    let threads = Threads::new(&unitigs, k, first, second);
    let (contigs, extension) = extend::extend(&graph, &unitigs, &threads);
    let mut contigs: Vec<Vec<u8>> = contigs
        .into_iter()
        .filter(|s| s.len() >= min_contig)
        .collect();
    contigs.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    (
        contigs,
        Steps {
            cleaning,
            extension,
        },
    )
}

impl Benchmark for Assembly {
    fn setup_limit(&self, ctx: &RunContext) -> Option<warpt_harness::WorkLimit> {
        crate::dataset::setup_limit(ctx, &[])
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<warpt_harness::WorkLimit> {
        crate::dataset::pass_limits(ctx, "assembling")
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        // Odd and 15 to 31: the plan checked.
        self.k = ctx.int_param("k", 15)? as usize;
        let data = Dataset::prepare(ctx, Needs::Reads)?;
        self.data = Some(data);
        self.pool = threads::pool(ctx.int_param("threads", 0)? as usize)?;
        self.min_count = ctx.int_param("min_count", 1)? as u32;
        self.min_contig = ctx.int_param("min_contig", 1)? as usize;
        self.seed = ctx.seed;
        self.inject_error = ctx.int_param("inject_error", 0)? == 1;
        self.contigs_path = ctx.str_param("contigs")?.to_string();
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let data = warpt_harness::prepared(&self.data)?;
        let first: Vec<&[u8]> = data.reads.first.iter().map(|r| r.seq.as_slice()).collect();
        let second: Vec<&[u8]> = data.reads.second.iter().map(|r| r.seq.as_slice()).collect();
        let bases = data.reads.bases();
        let def = SeriesDef::rate("mbases_per_s", "Mbases/s", bases as f64 / 1e6)
            .tag("k", self.k.to_string());
        let (k, min_count, min_contig) = (self.k, self.min_count, self.min_contig);
        let expected = (bases / 4) as usize;
        let (m, last) = measure.time(&MeasurePolicy::share_of(ctx, 1), NAME, &def, |_| {
            threads::install(&self.pool, || {
                assemble(&first, &second, k, min_count, min_contig, expected)
            })
        });
        let (mut contigs, steps) =
            last.ok_or_else(|| BenchmarkError::Failed("no timed pass".into()))?;
        if !self.contigs_path.is_empty() {
            write_fasta(&self.contigs_path, &contigs)?;
        }
        let lengths: Vec<usize> = contigs.iter().map(Vec::len).collect();
        let n50 = debruijn::n50(&lengths);
        let int = |v: u64| ParamValue::Int(v as i64);
        let mut metrics = m.metrics;
        metrics.push(BenchmarkMetric::single("n50", n50 as f64, "bp", true));
        let mut details = vec![
            ("data".into(), ParamValue::Str(data.source.clone())),
            ("k".into(), int(k as u64)),
            ("contigs".into(), int(contigs.len() as u64)),
            ("n50".into(), int(n50 as u64)),
            (
                "largest_contig".into(),
                int(lengths.first().copied().unwrap_or(0) as u64),
            ),
            (
                "total_length".into(),
                int(lengths.iter().sum::<usize>() as u64),
            ),
            ("tips_removed".into(), int(steps.cleaning.tips as u64)),
            ("bubbles_removed".into(), int(steps.cleaning.bubbles as u64)),
            (
                "pairs_placed".into(),
                int(steps.extension.pairs_placed as u64),
            ),
            (
                "insert_median".into(),
                int(steps.extension.insert_median as u64),
            ),
            (
                "branches_by_pairs".into(),
                int(steps.extension.by_pairs as u64),
            ),
            (
                "tangles_bridged".into(),
                int(steps.extension.bridges as u64),
            ),
            ("tandem_loops".into(), int(steps.extension.by_loop as u64)),
            (
                "bubbles_crossed".into(),
                int(steps.extension.by_bubble as u64),
            ),
            ("walks_joined".into(), int(steps.extension.merges as u64)),
            ("read_bases".into(), int(bases)),
            ("threads".into(), int(threads::count(&self.pool) as u64)),
        ];
        if data.genome.seq.is_empty() {
            details.push((
                "genome_fraction_pct".into(),
                ParamValue::Str("unavailable: no reference= to hold the contigs against".into()),
            ));
        } else {
            let Assessment {
                genome_fraction_pct,
                misassemblies,
                unaligned,
            } = assess::assess(&data.genome, &contigs);
            metrics.push(BenchmarkMetric::single(
                "genome_fraction_pct",
                genome_fraction_pct,
                "%",
                true,
            ));
            metrics.push(BenchmarkMetric::single(
                "misassemblies",
                misassemblies as f64,
                "count",
                false,
            ));
            details.push(("unaligned_contigs".into(), int(unaligned as u64)));
            details.push(("reference_bases".into(), int(data.genome.seq.len() as u64)));
        }
        if self.inject_error
            && let Some(first) = contigs.first_mut()
        {
            first.extend_from_slice(b"ACGTTGCAACGTTGCAACGTTGCAACGTTGCAACGT");
        }
        self.contigs = contigs;
        Ok(Measured::new(metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(data) = &self.data else {
            return Validation::fail("no data");
        };
        let k = self.k;
        // Every contig's last k-mer, and seeded ones from anywhere.
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(self.seed ^ 0xa55e);
        let mut sample: Vec<Vec<u8>> = self
            .contigs
            .iter()
            .filter(|c| c.len() >= k)
            .map(|c| c[c.len() - k..].to_vec())
            .collect();
        let total: usize = self
            .contigs
            .iter()
            .map(|c| c.len().saturating_sub(k - 1))
            .sum();
        for _ in 0..SAMPLE.min(total) {
            let mut at = (rng.next_u64() % total as u64) as usize;
            for c in &self.contigs {
                let n = c.len().saturating_sub(k - 1);
                if at < n {
                    sample.push(c[at..at + k].to_vec());
                    break;
                }
                at -= n;
            }
        }
        // Recount by strings: both spellings of each sampled k-mer.
        let mut want: HashMap<Vec<u8>, u32> = HashMap::new();
        for s in &sample {
            want.insert(s.clone(), 0);
            want.insert(revcomp(s), 0);
        }
        for read in data.reads.all() {
            let upper = read.seq.to_ascii_uppercase();
            for w in upper.windows(k) {
                if let Some(n) = want.get_mut(w) {
                    *n += 1;
                }
            }
        }
        let weak: Vec<String> = sample
            .iter()
            .filter_map(|s| {
                let rc = revcomp(s);
                let n = want[s] + if rc != *s { want[&rc] } else { 0 };
                (n < self.min_count || s.iter().any(|&c| CODE[c as usize] > 3))
                    .then(|| format!("{} seen {n} times", String::from_utf8_lossy(s)))
            })
            .collect();
        match weak.first() {
            Some(first) => Validation::fail(format!(
                "{} of {} sampled contig k-mers are not solid in the reads (min_count {}), e.g. {first}",
                weak.len(),
                sample.len(),
                self.min_count
            )),
            None => Validation::pass(format!(
                "{} sampled contig k-mers (every contig's last) each occur at least {} times in the reads",
                sample.len(),
                self.min_count
            )),
        }
    }
}

fn write_fasta(path: &str, contigs: &[Vec<u8>]) -> Result<(), BenchmarkError> {
    use std::io::Write;
    let fail = |e: std::io::Error| BenchmarkError::Failed(format!("{path}: {e}"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(fail)?);
    for (i, c) in contigs.iter().enumerate() {
        writeln!(out, ">contig{} length={}", i + 1, c.len()).map_err(fail)?;
        for line in c.chunks(60) {
            out.write_all(line).map_err(fail)?;
            out.write_all(b"\n").map_err(fail)?;
        }
    }
    out.flush().map_err(fail)
}
