//! `read_map`: paired reads mapped to the reference on all cores
//! (minimap2 `-ax sr`'s job), in reads per second, scored against the
//! reads' true origins.

use std::io::Write;

use rayon::prelude::*;
use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasurePolicy, MeasureResult, Measured, RunContext,
    SeriesDef,
};
use warpt_model::{BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Validation};

use crate::align;
use crate::dataset::{self, Dataset, Needs};
use crate::index::Index;
use crate::mapper::{Mapped, Mapper, Scratch};
use crate::reads::ReadSet;
use crate::{minimizer, sam, threads};

/// Benchmark name within the suite.
pub const NAME: &str = "read_map";

/// A read counts as placed correctly within this many bases of its
/// origin, on the right strand (the usual convention of mapper
/// evaluations, wgsim_eval's among them).
pub const TOLERANCE: i64 = 10;

/// MAPQ thresholds the precision and sensitivity are reported at.
const MAPQ_STEPS: [u8; 4] = [0, 10, 30, 60];

fn params() -> Vec<Param> {
    vec![
        Param::int("k", 21, 10..=minimizer::MAX_K as i64 - 4)
            .help("minimizer k-mer length, 10 to 28"),
        Param::int("w", 11, 1..=64).help("minimizer window: one per w consecutive k-mers"),
        dataset::threads(),
        Param::output_path("sam", "")
            .help("write the alignments of the last pass here as SAM; empty = nowhere"),
        dataset::inject_error("misplace one alignment"),
    ]
}

/// The spec of `read_map`.
pub fn spec() -> BenchmarkSpec {
    crate::dataset_spec(NAME, params())
        .description(
            "Short-read mapping (minimap2 -ax sr's job): each read's (w,k)-minimizers looked up in an index of \
                 the reference, hits grouped by strand and diagonal, each candidate aligned end to end (ungapped, or \
                 banded with affine gaps), mates paired, MAPQ from the best and second-best scores; all cores. \
                 Metrics `reads_per_s` (reads, both mates counted, / seconds; the index is built beforehand) and \
                 `mapped_correct_pct` (reads placed within 10 bp of their true origin on the right strand, of all \
                 reads; simulated data only), with precision and sensitivity by MAPQ in the details. Validation: \
                 every alignment's score and edit distance recomputed from its CIGAR against the reference.",
        )
        .metric("reads_per_s")
        .metric("mapped_correct_pct")
        .build()
}

/// The prepared data and index, and the last pass's alignments.
#[derive(Default)]
pub struct ReadMap {
    data: Option<Dataset>,
    index: Option<Index>,
    pool: Option<rayon::ThreadPool>,
    mapped: Vec<Mapped>,
    inject_error: bool,
    sam_path: String,
}

/// Maps every pair of `reads` on the current pool.
pub fn map_all(mapper: &Mapper<'_>, reads: &ReadSet) -> Vec<Mapped> {
    let paired = !reads.second.is_empty();
    (0..reads.first.len())
        .into_par_iter()
        .map_init(Scratch::default, |scratch, i| {
            let second = paired.then(|| reads.second[i].seq.as_slice());
            mapper.map(&reads.first[i].seq, second, scratch)
        })
        .collect()
}

/// Reads placed correctly, and reads placed at all, at each MAPQ
/// threshold of `MAPQ_STEPS`.
fn score(mapped: &[Mapped], reads: &ReadSet) -> Option<[(u64, u64); 4]> {
    let origins = reads.origins.as_ref()?;
    let mut bins = [(0u64, 0u64); 4];
    for (m, truth) in mapped.iter().zip(origins) {
        for (place, origin) in m.mates.iter().zip(truth) {
            let Some(p) = place else { continue };
            let right = p.reverse == origin.reverse
                && (p.pos as i64 - origin.pos as i64).abs() <= TOLERANCE;
            for (bin, &q) in bins.iter_mut().zip(&MAPQ_STEPS) {
                if p.mapq >= q {
                    bin.1 += 1;
                    bin.0 += u64::from(right);
                }
            }
        }
    }
    Some(bins)
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl Benchmark for ReadMap {
    fn setup_limit(&self, ctx: &RunContext) -> Option<warpt_harness::WorkLimit> {
        crate::dataset::setup_limit(ctx, &[])
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<warpt_harness::WorkLimit> {
        crate::dataset::pass_limits(ctx, "mapping")
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let k = ctx.int_param("k", 10)? as usize;
        let w = ctx.int_param("w", 1)? as usize;
        let data = Dataset::prepare(ctx, Needs::ReadsAndReference)?;
        self.pool = threads::pool(ctx.int_param("threads", 0)? as usize)?;
        self.index = Some(threads::install(&self.pool, || {
            Index::build(&data.genome, k, w)
        }));
        self.data = Some(data);
        self.inject_error = ctx.int_param("inject_error", 0)? == 1;
        self.sam_path = ctx.str_param("sam")?.to_string();
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let (Some(data), Some(index)) = (self.data.as_ref(), self.index.as_ref()) else {
            return Err(BenchmarkError::not_prepared());
        };
        let mapper = Mapper::new(&data.genome, index);
        let reads = &data.reads;
        let def = SeriesDef::rate("reads_per_s", "reads/s", reads.len() as f64);
        let (m, last) = measure.time(&MeasurePolicy::share_of(ctx, 1), NAME, &def, |_| {
            threads::install(&self.pool, || map_all(&mapper, reads))
        });
        let mut last = last.unwrap_or_default();
        if !self.sam_path.is_empty() {
            write_sam(&self.sam_path, data, &last)?;
        }
        let placed = last
            .iter()
            .flat_map(|m| m.mates.iter())
            .filter(|p| p.is_some())
            .count() as u64;
        let proper = last.iter().filter(|m| m.proper).count() as u64;
        let total = reads.len() as u64;
        let int = |v: u64| ParamValue::Int(v as i64);
        let mut metrics = m.metrics;
        let mut details = vec![
            ("data".into(), ParamValue::Str(data.source.clone())),
            ("reads".into(), int(total)),
            ("mapped_pct".into(), ParamValue::Float(pct(placed, total))),
            (
                "proper_pair_pct".into(),
                ParamValue::Float(pct(2 * proper, total)),
            ),
            ("index_minimizers".into(), int(index.len() as u64)),
            (
                "index_max_occurrences".into(),
                int(index.max_occurrences as u64),
            ),
            ("threads".into(), int(threads::count(&self.pool) as u64)),
        ];
        match score(&last, reads) {
            Some(bins) => {
                metrics.push(BenchmarkMetric::single(
                    "mapped_correct_pct",
                    pct(bins[0].0, total),
                    "%",
                    true,
                ));
                for ((right, placed), q) in bins.iter().zip(MAPQ_STEPS) {
                    details.push((
                        format!("precision_mapq{q}"),
                        ParamValue::Float(pct(*right, *placed)),
                    ));
                    details.push((
                        format!("sensitivity_mapq{q}"),
                        ParamValue::Float(pct(*right, total)),
                    ));
                }
            }
            None => details.push((
                "mapped_correct_pct".into(),
                ParamValue::Str("unavailable: the user's reads carry no true origin".into()),
            )),
        }
        if self.inject_error
            && let Some(p) = last.iter_mut().find_map(|m| m.mates[0].as_mut())
        {
            p.alignment.start += 1;
            p.pos += 1;
        }
        self.mapped = last;
        Ok(Measured::new(metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(data) = &self.data else {
            return Validation::fail("no data");
        };
        if self.mapped.len() != data.reads.first.len() {
            return Validation::fail(format!(
                "{} pairs mapped of {}",
                self.mapped.len(),
                data.reads.first.len()
            ));
        }
        let mut checked = 0u64;
        let mut wrong = Vec::new();
        for (i, m) in self.mapped.iter().enumerate() {
            for (mate, place) in m.mates.iter().enumerate() {
                let Some(p) = place else { continue };
                let read = data.reads.mate(i, mate);
                let (seq, _) = read.oriented(p.reverse);
                checked += 1;
                let got = align::rescore(&seq, &data.genome.seq, &p.alignment);
                let want = (p.alignment.score, p.alignment.mismatches);
                if p.alignment.start != p.pos as usize || got != Some(want) {
                    wrong.push(format!(
                        "{} at {} {}: reported score {} NM {}, its CIGAR gives {:?}",
                        read.name,
                        p.pos + 1,
                        p.alignment.cigar_string(),
                        want.0,
                        want.1,
                        got
                    ));
                }
            }
        }
        match wrong.first() {
            Some(first) => Validation::fail(format!(
                "{} of {checked} alignments do not match the reference, e.g. {first}",
                wrong.len()
            )),
            None => Validation::pass(format!(
                "all {checked} alignments' scores and edit distances recomputed from their CIGARs against the reference"
            )),
        }
    }
}

/// Writes the SAM of `mapped` (the pairs of `data`) to `path`.
pub fn write_sam(path: &str, data: &Dataset, mapped: &[Mapped]) -> Result<(), BenchmarkError> {
    let fail = |e: std::io::Error| BenchmarkError::Failed(format!("{path}: {e}"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(fail)?);
    sam::header(
        &mut out,
        &data.genome,
        "warpt benchmark run --benchmark read_map",
    )
    .map_err(fail)?;
    let reads = &data.reads;
    for (i, m) in mapped.iter().enumerate() {
        let second = reads.second.get(i);
        sam::write_pair(&mut out, &data.genome, [Some(&reads.first[i]), second], m)
            .map_err(fail)?;
    }
    out.flush().map_err(fail)
}
