//! `kmer_count`: the canonical k-mers of every read counted into one
//! table on all cores (jellyfish's job), in Mbases of reads per second.

use std::collections::{BTreeMap, HashMap};

use rand_core::{RngCore, SeedableRng};
use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasurePolicy, MeasureResult, Measured, RunContext,
    SeriesDef,
};
use warpt_model::{BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Validation};

use crate::dataset::{self, Dataset, Needs};
use crate::kmer::{self, CODE, Counts};
use crate::threads;

/// Benchmark name within the suite.
pub const NAME: &str = "kmer_count";

/// k-mers the validation recounts with a plain `HashMap`.
const SAMPLE: usize = 4096;

fn params() -> Vec<Param> {
    vec![
        Param::int("k", 31, 1..=kmer::MAX_K as i64).help("k-mer length, 1 to 63"),
        dataset::threads(),
        Param::output_path("histo", "").help(
            "write the count histogram here as jellyfish histo does ('count distinct' lines); empty = nowhere",
        ),
        dataset::inject_error("corrupt one count"),
    ]
}

/// The spec of `kmer_count`.
pub fn spec() -> BenchmarkSpec {
    crate::dataset_spec(NAME, params())
        .description(
            "Canonical k-mer counting (jellyfish's job): every k-mer of every read (forward and reverse complement \
                 rolled together, the smaller kept; k up to 63) into a hash table split in partitions by hash, each \
                 behind its own lock, all cores inserting at once. Reads simulated from a generated genome (or \
                 reads=/reads2= FASTQ). Metric `mbases_per_s`: read bases / seconds, 1e6. Validation: the counts of a \
                 seeded sample of k-mers equal a plain HashMap recount by strings, and the histogram sums to the \
                 number of k-mers in the reads.",
        )
        .metric("mbases_per_s")
        .metric("distinct_kmers")
        .build()
}

/// A count in a `u64` table (k ≤ 32) or a `u128` one.
enum Table {
    Narrow(Counts<u64>),
    Wide(Counts<u128>),
}

impl Table {
    fn count(reads: &[&[u8]], k: usize, expected: usize) -> Self {
        if k <= 32 {
            Table::Narrow(Counts::count(reads, k, expected))
        } else {
            Table::Wide(Counts::count(reads, k, expected))
        }
    }

    fn distinct(&self) -> u64 {
        match self {
            Table::Narrow(c) => c.distinct(),
            Table::Wide(c) => c.distinct(),
        }
    }

    fn histogram(&self) -> BTreeMap<u32, u64> {
        match self {
            Table::Narrow(c) => c.histogram(),
            Table::Wide(c) => c.histogram(),
        }
    }

    /// The count of `kmer` (letters, its canonical spelling).
    fn get(&self, kmer: &[u8]) -> u32 {
        match self {
            Table::Narrow(c) => c.get(kmer::encode::<u64>(kmer)),
            Table::Wide(c) => c.get(kmer::encode::<u128>(kmer)),
        }
    }

    fn bump(&mut self, kmer: &[u8]) {
        match self {
            Table::Narrow(c) => c.bump(kmer::encode::<u64>(kmer)),
            Table::Wide(c) => c.bump(kmer::encode::<u128>(kmer)),
        }
    }
}

/// The prepared reads and the last timed count.
#[derive(Default)]
pub struct KmerCount {
    data: Option<Dataset>,
    k: usize,
    pool: Option<rayon::ThreadPool>,
    table: Option<Table>,
    seed: u64,
    inject_error: bool,
    histo_path: String,
}

impl KmerCount {
    fn reads(&self) -> Vec<&[u8]> {
        self.data
            .as_ref()
            .map(|d| d.reads.all().map(|r| r.seq.as_slice()).collect())
            .unwrap_or_default()
    }

    /// A seeded sample of distinct canonical k-mers that occur in the
    /// reads, as letters.
    fn sample(&self) -> Vec<Vec<u8>> {
        let reads = self.reads();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(self.seed ^ 0x6b6d);
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for _ in 0..SAMPLE * 4 {
            if out.len() >= SAMPLE || reads.is_empty() {
                break;
            }
            let r = reads[(rng.next_u64() % reads.len() as u64) as usize];
            if r.len() < self.k {
                continue;
            }
            let at = (rng.next_u64() % (r.len() - self.k + 1) as u64) as usize;
            let w = &r[at..at + self.k];
            if w.iter().any(|&c| CODE[c as usize] > 3) {
                continue;
            }
            let c = canonical(w);
            if seen.insert(c.clone()) {
                out.push(c);
            }
        }
        out
    }
}

/// The lexically smaller of a k-mer and its reverse complement (A < C <
/// G < T orders as the 2-bit codes do).
fn canonical(w: &[u8]) -> Vec<u8> {
    let upper = w.to_ascii_uppercase();
    let rc = crate::genome::revcomp(&upper);
    if rc < upper { rc } else { upper }
}

impl Benchmark for KmerCount {
    fn setup_limit(&self, ctx: &RunContext) -> Option<warpt_harness::WorkLimit> {
        crate::dataset::setup_limit(ctx, &[])
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<warpt_harness::WorkLimit> {
        crate::dataset::pass_limits(ctx, "counting k-mers")
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        // At most kmer::MAX_K: the plan checked.
        self.k = ctx.int_param("k", 1)? as usize;
        let data = Dataset::prepare(ctx, Needs::Reads)?;
        self.data = Some(data);
        self.pool = threads::pool(ctx.int_param("threads", 0)? as usize)?;
        self.seed = ctx.seed;
        self.inject_error = ctx.int_param("inject_error", 0)? == 1;
        self.histo_path = ctx.str_param("histo")?.to_string();
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let data = warpt_harness::prepared(&self.data)?;
        let bases = data.reads.bases();
        let reads_n = data.reads.len();
        let source = data.source.clone();
        let reads = self.reads();
        let def = SeriesDef::rate("mbases_per_s", "Mbases/s", bases as f64 / 1e6)
            .tag("k", self.k.to_string());
        // Sized like jellyfish's -s: about one distinct k-mer per 4 bases
        // at first, then what the previous pass found.
        let first = (bases / 4) as usize;
        let k = self.k;
        let (m, last) = measure.time(
            &MeasurePolicy::share_of(ctx, 1),
            NAME,
            &def,
            |prev: Option<&Table>| {
                let expected = prev.map_or(first, |t| t.distinct() as usize);
                threads::install(&self.pool, || Table::count(&reads, k, expected))
            },
        );
        let mut table = last.ok_or_else(|| BenchmarkError::Failed("no timed pass".into()))?;
        let histogram = table.histogram();
        if !self.histo_path.is_empty() {
            write_histogram(&self.histo_path, &histogram)?;
        }
        if self.inject_error
            && let Some(first) = self.sample().first()
        {
            table.bump(first);
        }
        let distinct = table.distinct();
        let total: u64 = histogram.iter().map(|(c, n)| *c as u64 * n).sum();
        let singletons = histogram.get(&1).copied().unwrap_or(0);
        self.table = Some(table);
        let mut metrics = m.metrics;
        metrics.push(BenchmarkMetric::single(
            "distinct_kmers",
            distinct as f64,
            "k-mers",
            true,
        ));
        let int = |v: u64| ParamValue::Int(v as i64);
        Ok(Measured {
            metrics,
            details: vec![
                ("k".into(), int(self.k as u64)),
                ("data".into(), ParamValue::Str(source)),
                ("reads".into(), int(reads_n as u64)),
                ("bases".into(), int(bases)),
                ("kmers".into(), int(total)),
                ("distinct_kmers".into(), int(distinct)),
                ("singleton_kmers".into(), int(singletons)),
                ("threads".into(), int(threads::count(&self.pool) as u64)),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(table) = &self.table else {
            return Validation::fail("no measured pass to check");
        };
        let sample = self.sample();
        let k = self.k;
        // The reference: both spellings of each sampled k-mer, looked up
        // by the window's letters, counted by a plain HashMap.
        let mut spelling: HashMap<Vec<u8>, usize> = HashMap::new();
        for (i, s) in sample.iter().enumerate() {
            spelling.insert(s.clone(), i);
            spelling.insert(crate::genome::revcomp(s), i);
        }
        let mut want = vec![0u32; sample.len()];
        let mut windows = 0u64;
        for read in self.reads() {
            let upper = read.to_ascii_uppercase();
            for w in upper.windows(k) {
                if w.iter().any(|&c| CODE[c as usize] > 3) {
                    continue;
                }
                windows += 1;
                if let Some(&i) = spelling.get(w) {
                    // A palindrome is one spelling, counted once.
                    want[i] += 1;
                }
            }
        }
        let total: u64 = table.histogram().iter().map(|(c, n)| *c as u64 * n).sum();
        let wrong: Vec<String> = sample
            .iter()
            .zip(&want)
            .filter_map(|(s, &w)| {
                let got = table.get(s);
                (got != w).then(|| format!("{}: {got}, reference {w}", String::from_utf8_lossy(s)))
            })
            .collect();
        let mut failures = Vec::new();
        if let Some(first) = wrong.first() {
            failures.push(format!(
                "{} of {} sampled k-mer counts differ from a HashMap recount, e.g. {first}",
                wrong.len(),
                sample.len()
            ));
        }
        if total != windows {
            failures.push(format!(
                "the histogram sums to {total} k-mers, the reads hold {windows}"
            ));
        }
        if failures.is_empty() {
            Validation::pass(format!(
                "{} sampled k-mer counts equal a HashMap recount; the histogram sums to the reads' {windows} k-mers",
                sample.len()
            ))
        } else {
            Validation::fail(failures.join("; "))
        }
    }
}

fn write_histogram(path: &str, histogram: &BTreeMap<u32, u64>) -> Result<(), BenchmarkError> {
    use std::io::Write;
    let fail = |e: std::io::Error| BenchmarkError::Failed(format!("{path}: {e}"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(fail)?);
    for (count, n) in histogram {
        writeln!(out, "{count} {n}").map_err(fail)?;
    }
    out.flush().map_err(fail)
}
