//! `variant_call`: the mapped reads piled up and genotyped (bcftools
//! mpileup + call's job), in variants per second, scored against the
//! planted truth.

use rand_core::{RngCore, SeedableRng};
use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasurePolicy, MeasureResult, Measured, RunContext,
    SeriesDef,
};
use warpt_model::{BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Validation};

use crate::caller::{self, Call};
use crate::dataset::{self, Dataset, Needs};
use crate::index::Index;
use crate::mapper::{Mapped, Mapper};
use crate::pileup::{self, Aligned, Pileup};
use crate::read_map::map_all;
use crate::vcf::{self, Accuracy};
use crate::{read_map, threads};

/// Benchmark name within the suite.
pub const NAME: &str = "variant_call";

/// Columns the validation recounts at random (besides every call's).
const SAMPLE: usize = 256;

fn params() -> Vec<Param> {
    vec![
        dataset::threads(),
        Param::int("min_mapq", 20, 0..=60).help("reads mapped with a lower MAPQ give no evidence"),
        Param::float("min_qual", 20.0, 0.0..=999.0)
            .help("call a site when its Phred quality of not being reference reaches this"),
        Param::output_path("vcf", "")
            .help("write the calls of the last pass here as VCF; empty = nowhere"),
        Param::output_path("sam", "").help(
            "write the alignments the calls come from here as SAM (for other callers); empty = nowhere",
        ),
        dataset::inject_error("corrupt one pileup column"),
    ]
}

/// The spec of `variant_call`.
pub fn spec() -> BenchmarkSpec {
    crate::dataset_spec(NAME, params())
        .description(
            "Germline variant calling (bcftools mpileup + call's job): reads mapped by read_map's mapper \
                 (beforehand, untimed), piled up column by column in parallel chunks (per-base log-likelihood sums; \
                 indels by normalised allele), genotyped as diploid (RR/RA/AA likelihoods, 1e-3 heterozygosity \
                 prior), SNPs and indels called at QUAL >= min_qual. Metric `variants_per_s`: calls / seconds of \
                 pileup plus calling; `precision`, `recall`, `f1` (%) against the planted variants, matched by \
                 position and alleles after left-normalisation (simulated data only). Validation: sampled pileup \
                 columns (every call's and random ones) equal a recount by walking every read's CIGAR.",
        )
        .metric("variants_per_s")
        .metric("precision")
        .metric("recall")
        .metric("f1")
        .build()
}

/// The prepared alignments, and the last pass's pileup and calls.
#[derive(Default)]
pub struct VariantCall {
    data: Option<Dataset>,
    aligned: Vec<Aligned>,
    pool: Option<rayon::ThreadPool>,
    min_qual: f64,
    pileup: Option<Pileup>,
    calls: Vec<Call>,
    seed: u64,
    inject_error: bool,
    vcf_path: String,
}

/// The mapped reads with MAPQ of at least `min_mapq`, on the reference
/// strand, sorted by position.
fn aligned(data: &Dataset, mapped: &[Mapped], min_mapq: u8) -> Vec<Aligned> {
    let reads = &data.reads;
    let mut out = Vec::with_capacity(reads.len());
    for (i, m) in mapped.iter().enumerate() {
        for (mate, place) in m.mates.iter().enumerate() {
            let Some(p) = place.as_ref().filter(|p| p.mapq >= min_mapq) else {
                continue;
            };
            let (seq, qual) = reads.mate(i, mate).oriented(p.reverse);
            out.push(Aligned {
                pos: p.pos,
                cigar: p.alignment.cigar.clone(),
                seq,
                qual,
            });
        }
    }
    out.sort_by_key(|a| a.pos);
    out
}

impl Benchmark for VariantCall {
    fn setup_limit(&self, ctx: &RunContext) -> Option<warpt_harness::WorkLimit> {
        crate::dataset::setup_limit(ctx, &["mapping the reads"])
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<warpt_harness::WorkLimit> {
        crate::dataset::pass_limits(ctx, "calling variants")
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let data = Dataset::prepare(ctx, Needs::ReadsAndReference)?;
        self.pool = threads::pool(ctx.int_param("threads", 0)? as usize)?;
        let min_mapq = ctx.int_param("min_mapq", 0)? as u8;
        let mapped = threads::install(&self.pool, || {
            let index = Index::build(&data.genome, 21, 11);
            map_all(&Mapper::new(&data.genome, &index), &data.reads)
        });
        let sam = ctx.str_param("sam")?;
        if !sam.is_empty() {
            read_map::write_sam(sam, &data, &mapped)?;
        }
        self.aligned = aligned(&data, &mapped, min_mapq);
        self.data = Some(data);
        self.min_qual = ctx.float_param("min_qual")?;
        self.seed = ctx.seed;
        self.inject_error = ctx.int_param("inject_error", 0)? == 1;
        self.vcf_path = ctx.str_param("vcf")?.to_string();
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let data = warpt_harness::prepared(&self.data)?;
        let reference = &data.genome.seq;
        let aligned = &self.aligned;
        let min_qual = self.min_qual;
        // The rate needs the number of calls, known after the first pass;
        // it does not change between passes.
        let first = threads::install(&self.pool, || {
            caller::call(reference, &pileup::pile(reference, aligned), min_qual)
        });
        let def = SeriesDef::rate("variants_per_s", "variants/s", first.len() as f64);
        let (m, last) = measure.time(&MeasurePolicy::share_of(ctx, 1), NAME, &def, |_| {
            threads::install(&self.pool, || {
                let p = pileup::pile(reference, aligned);
                let calls = caller::call(reference, &p, min_qual);
                (p, calls)
            })
        });
        let (mut pile, calls) =
            last.ok_or_else(|| BenchmarkError::Failed("no timed pass".into()))?;
        if calls != first {
            return Err(BenchmarkError::Failed(format!(
                "two passes over the same reads called {} and {} variants",
                first.len(),
                calls.len()
            )));
        }
        let records: Vec<vcf::Record> = calls.iter().map(|c| c.record.clone()).collect();
        if !self.vcf_path.is_empty() {
            vcf::write(
                std::path::Path::new(&self.vcf_path),
                &data.genome,
                &records,
                "warpt variant_call",
            )
            .map_err(BenchmarkError::Failed)?;
        }
        let snps = calls.iter().filter(|c| c.record.variant.is_snp()).count() as u64;
        let covered = pile.columns.iter().filter(|c| c.depth() > 0).count();
        let depth: u64 = pile.columns.iter().map(|c| c.depth() as u64).sum();
        let int = |v: u64| ParamValue::Int(v as i64);
        let mut metrics = m.metrics;
        let mut details = vec![
            ("data".into(), ParamValue::Str(data.source.clone())),
            ("calls".into(), int(calls.len() as u64)),
            ("snps".into(), int(snps)),
            ("indels".into(), int(calls.len() as u64 - snps)),
            ("reads_used".into(), int(aligned.len() as u64)),
            (
                "mean_depth".into(),
                ParamValue::Float(depth as f64 / covered.max(1) as f64),
            ),
            ("threads".into(), int(threads::count(&self.pool) as u64)),
        ];
        match &data.truth {
            Some(truth) => {
                let truth: Vec<_> = truth.iter().map(|(v, _)| v.clone()).collect();
                let called: Vec<_> = records.iter().map(|r| r.variant.clone()).collect();
                let acc = Accuracy::of(reference, &called, &truth);
                for (name, value) in [
                    ("precision", acc.precision()),
                    ("recall", acc.recall()),
                    ("f1", acc.f1()),
                ] {
                    metrics.push(BenchmarkMetric::single(name, value, "%", true));
                }
                details.push(("true_positives".into(), int(acc.true_positives as u64)));
                details.push(("false_positives".into(), int(acc.false_positives as u64)));
                details.push(("false_negatives".into(), int(acc.false_negatives as u64)));
                details.push(("planted".into(), int(truth.len() as u64)));
            }
            None => details.push((
                "f1".into(),
                ParamValue::Str("unavailable: the user's data carry no planted truth".into()),
            )),
        }
        if self.inject_error
            && let Some(c) = calls.first()
        {
            pile.columns[c.record.variant.pos].count[0] += 1;
        }
        self.pileup = Some(pile);
        self.calls = calls;
        Ok(Measured::new(metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let (Some(data), Some(pile)) = (&self.data, &self.pileup) else {
            return Validation::fail("no measured pass to check");
        };
        let len = pile.columns.len();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(self.seed ^ 0x7ca1);
        let mut sites: Vec<usize> = self.calls.iter().map(|c| c.record.variant.pos).collect();
        sites.extend((0..SAMPLE).map(|_| (rng.next_u64() % len.max(1) as u64) as usize));
        let mut wrong = Vec::new();
        for &pos in &sites {
            let (count, deleted) = pileup::recount(&self.aligned, pos);
            let col = &pile.columns[pos];
            if col.count != count || col.deleted != deleted {
                wrong.push(format!(
                    "position {}: pileup {:?}+{} deleted, recount {:?}+{}",
                    pos + 1,
                    col.count,
                    col.deleted,
                    count,
                    deleted
                ));
            }
        }
        let bad_ref = self
            .calls
            .iter()
            .find(|c| {
                let v = &c.record.variant;
                data.genome.seq.get(v.pos..v.pos + v.reference.len()) != Some(&v.reference[..])
            })
            .map(|c| {
                format!(
                    "the call at {} has a REF the reference lacks",
                    c.record.variant.pos + 1
                )
            });
        match (wrong.first(), bad_ref) {
            (Some(first), _) => Validation::fail(format!(
                "{} of {} sampled pileup columns differ from a recount over the reads, e.g. {first}",
                wrong.len(),
                sites.len()
            )),
            (None, Some(bad)) => Validation::fail(bad),
            (None, None) => Validation::pass(format!(
                "{} pileup columns ({} calls', {SAMPLE} random) equal a recount over every read; every REF is the reference's",
                sites.len(),
                self.calls.len()
            )),
        }
    }
}
