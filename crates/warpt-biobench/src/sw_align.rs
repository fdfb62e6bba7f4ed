//! `sw_align`: a database search — every query against every target by
//! Smith-Waterman with affine gaps, all cores, in GCUPS (billions of DP
//! cells, query length × target length, per second): by default across
//! targets (one target per SIMD lane, [`crate::sw_inter`]), or striped
//! along the query ([`crate::sw_striped`], parasail's method).

use std::time::Instant;

use rayon::prelude::*;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params, Validation,
};

use crate::scoring::{Gaps, Matrix};
use crate::seqgen::{Alphabet, SearchSet};
use crate::sw_inter::{Packed, Searcher};
use crate::sw_striped::{Aligner, Isa, Width};
use crate::{fasta, sw_scalar, threads};

/// Benchmark name within the suite.
pub const NAME: &str = "sw_align";

/// Most DP cells the validation recomputes with the scalar reference (the
/// pairs are a seeded sample beyond that).
const CHECK_CELLS: u64 = 400_000_000;

fn params() -> Vec<Param> {
    vec![
        Param::choice("alphabet", "protein", &["protein", "dna"])
            .help("protein (BLOSUM62 by default) or dna (dnafull)"),
        Param::choice("matrix", "", &["", "blosum62", "dnafull"])
            .help("substitution matrix: blosum62 or dnafull; empty = the alphabet's"),
        Param::int("gap_open", 10, 0..=127)
            .help("cost of a gap's first position (parasail's convention)"),
        Param::int("gap_extend", 1, 0..=127).help("cost of each further gap position"),
        Param::input_path("queries", "")
            .help("FASTA file of queries; empty = generated from the seed"),
        Param::input_path("targets", "")
            .help("FASTA file of targets; empty = generated from the seed"),
        Param::int("query_count", 4, 1..=100_000).help("generated queries"),
        Param::int("query_length", 400, 1..=100_000)
            .help("mean length of generated queries (each within ±50%)"),
        Param::int("target_count", 4000, 1..=100_000_000).help("generated targets"),
        Param::int("target_length", 350, 1..=100_000)
            .help("mean length of generated targets (each within ±50%)"),
        Param::float("homolog_pct", 5.0, 0.0..=100.0)
            .unit("%")
            .help("share of generated targets holding a mutated piece of a query, %"),
        Param::choice("kernel", "inter", &["inter", "striped"]).help(
            "inter (one target per SIMD lane, SWIPE's method) or striped (the query across lanes, \
             one pair at a time: Farrar's method, as parasail)",
        ),
        Param::choice("isa", "auto", &["auto", "avx512bw", "avx2", "scalar"])
            .help("auto (the widest this CPU has), avx512bw, avx2 or scalar"),
        crate::dataset::threads(),
        Param::output_path("scores", "")
            .help("write the last pass's scores here as CSV (query,target,score); empty = nowhere"),
        crate::dataset::inject_error("corrupt one score"),
    ]
}

/// The spec of `sw_align`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Cpu)
        .kind(BenchmarkKind::Domain)
        .description(
            "Smith-Waterman local alignment with affine gaps, every query against every target (a database search) \
                 on all cores: by default one target per SIMD lane (kernel=inter, SWIPE's method; targets sorted by \
                 length and packed a vector at a time), or striped query profiles (kernel=striped, Farrar's method, \
                 as parasail); saturating 8-bit lanes, re-aligned in 16-bit lanes when a score saturates; AVX-512BW \
                 or AVX2 chosen at run time (isa=auto: the faster of the two on a slice of this search). Protein (BLOSUM62, \
                 gap open 10, extend 1) or DNA (dnafull); sequences from the seed, or `queries=` / `targets=` FASTA files. \
                 Metric `gcups`: query length x target length / seconds, 1e9. Validation: scores equal a scalar Gotoh \
                 reference (every pair, or a seeded sample of up to 4e8 cells).",
        )
        .duration(5.0)
        .params(params())
        .check(check_params)
        .metric("gcups")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(p: &Params) -> Result<(), String> {
    for key in ["queries", "targets"] {
        crate::dataset::check_file(p, key)?;
    }
    if let Some(isa) = p.get("isa").and_then(ParamValue::as_str) {
        let isa = isa_by_name(isa);
        if let Some(i) = isa.filter(|i| !i.available()) {
            return Err(format!(
                "parameter 'isa': this CPU has no {}; use auto",
                i.name()
            ));
        }
    }
    Ok(())
}

fn isa_by_name(name: &str) -> Option<Isa> {
    match name {
        "avx512bw" => Some(Isa::Avx512Bw),
        "avx2" => Some(Isa::Avx2),
        "scalar" => Some(Isa::Scalar),
        _ => None,
    }
}

/// How the search puts cells in SIMD lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// One target per lane ([`Searcher`]).
    Inter,
    /// The query striped across lanes, one pair at a time ([`Aligner`]).
    Striped,
}

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Kernel::Inter => "inter",
            Kernel::Striped => "striped",
        }
    }
}

/// The prepared search and what the last timed pass found.
pub struct SwAlign {
    matrix: Matrix,
    gaps: Gaps,
    kernel: Kernel,
    isa: Isa,
    queries: Vec<Vec<u8>>,
    targets: Vec<Vec<u8>>,
    /// The targets packed for the inter-sequence kernel on `isa`.
    packed: Option<Packed>,
    pool: Option<rayon::ThreadPool>,
    /// `scores[q][t]` and the width that computed each, of the last pass.
    scores: Vec<Vec<(i32, Width)>>,
    seed: u64,
    inject_error: bool,
    /// GCUPS of each ISA on a slice of the search, when `isa=auto` chose.
    calibration: Vec<(Isa, f64)>,
    /// Where to write the last pass's scores (`scores=`), if anywhere.
    scores_path: String,
}

impl Default for SwAlign {
    fn default() -> Self {
        Self::new()
    }
}

impl SwAlign {
    /// Not yet prepared.
    pub fn new() -> Self {
        SwAlign {
            matrix: Matrix::blosum62(),
            gaps: Gaps {
                open: 10,
                extend: 1,
            },
            kernel: Kernel::Inter,
            isa: Isa::Scalar,
            queries: Vec::new(),
            targets: Vec::new(),
            packed: None,
            pool: None,
            scores: Vec::new(),
            seed: 0,
            inject_error: false,
            calibration: Vec::new(),
            scores_path: String::new(),
        }
    }

    /// Aligns every query against every target: `[query][target]`.
    fn search(&self) -> Vec<Vec<(i32, Width)>> {
        let run = || {
            let packed = self.packed.as_ref();
            self.align(self.isa, &self.queries, &self.targets, packed)
        };
        threads::install(&self.pool, run)
    }

    /// `queries` against `targets` on `isa`, on the current rayon pool:
    /// across targets when `packed` holds them packed for `isa` (the
    /// [`Kernel::Inter`] kernel), else striped.
    fn align(
        &self,
        isa: Isa,
        queries: &[Vec<u8>],
        targets: &[Vec<u8>],
        packed: Option<&Packed>,
    ) -> Vec<Vec<(i32, Width)>> {
        match packed {
            Some(packed) => {
                let searcher = Searcher::new(isa, &self.matrix, self.gaps);
                queries
                    .par_iter()
                    .map(|q| searcher.search(q, targets, packed))
                    .collect()
            }
            None => queries
                .iter()
                .map(|q| {
                    let aligner = Aligner::new(isa, q, &self.matrix, self.gaps);
                    targets
                        .par_iter()
                        .with_min_len(8)
                        .map(|t| aligner.score(t))
                        .collect()
                })
                .collect(),
        }
    }

    /// Picks the fastest ISA this CPU has for this search: the widest
    /// is not always it (on a CPU whose 512-bit integer work issues on two
    /// ports where 256-bit work issues on three, AVX2 can win). Each runs
    /// the first query against a slice of the targets, best of three.
    fn calibrate(&mut self) {
        let candidates: Vec<Isa> = [Isa::Avx512Bw, Isa::Avx2]
            .into_iter()
            .filter(|i| i.available())
            .collect();
        let Some(query) = self.queries.first() else {
            return;
        };
        if candidates.len() < 2 {
            return;
        }
        // About 2e8 cells: a few tens of milliseconds per try.
        let mut cells = 0u64;
        let mut count = 0;
        for t in &self.targets {
            if cells >= 200_000_000 {
                break;
            }
            cells += (t.len() * query.len()) as u64;
            count += 1;
        }
        let slice = &self.targets[..count];
        let rate = |isa: Isa| {
            let packed = (self.kernel == Kernel::Inter)
                .then(|| Searcher::new(isa, &self.matrix, self.gaps).pack(slice));
            let first = std::slice::from_ref(query);
            let run = || {
                let start = Instant::now();
                let scores = self.align(isa, first, slice, packed.as_ref());
                std::hint::black_box(scores);
                start.elapsed().as_secs_f64()
            };
            let best = (0..3).map(|_| run()).fold(f64::INFINITY, f64::min);
            cells as f64 / best.max(1e-9) / 1e9
        };
        self.calibration = threads::install(&self.pool, || {
            candidates.iter().map(|&i| (i, rate(i))).collect()
        });
        if let Some(&(best, _)) = self.calibration.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
            self.isa = best;
        }
    }

    /// Writes the last pass's scores as `query,target,score` lines.
    fn write_scores(&self) -> Result<(), BenchmarkError> {
        use std::io::Write;
        let fail = |e: std::io::Error| BenchmarkError::Failed(format!("{}: {e}", self.scores_path));
        let file = std::fs::File::create(&self.scores_path).map_err(fail)?;
        let mut out = std::io::BufWriter::new(file);
        writeln!(out, "query,target,score").map_err(fail)?;
        for (q, row) in self.scores.iter().enumerate() {
            for (t, s) in row.iter().enumerate() {
                writeln!(out, "{q},{t},{}", s.0).map_err(fail)?;
            }
        }
        out.flush().map_err(fail)
    }

    fn cells(&self) -> u64 {
        let q: u64 = self.queries.iter().map(|q| q.len() as u64).sum();
        let t: u64 = self.targets.iter().map(|t| t.len() as u64).sum();
        q * t
    }
}

fn load(path: &str, matrix: &Matrix) -> Result<Vec<Vec<u8>>, BenchmarkError> {
    let records = fasta::read(std::path::Path::new(path)).map_err(BenchmarkError::Failed)?;
    Ok(records.iter().map(|r| matrix.encode(&r.sequence)).collect())
}

/// DP cells per second assumed for the measure limit: below the scalar
/// reference on one thread (`isa=scalar` on a big search).
const FLOOR_CELLS_PER_S: f64 = 20e6;

impl Benchmark for SwAlign {
    fn work_limits(&self, ctx: &RunContext) -> Vec<warpt_harness::WorkLimit> {
        // Whatever the duration, the warm-up and the measurement each take
        // at least one pass over every pair.
        let cells = self.cells() as f64;
        let pass = warpt_harness::at_floor_rate(cells, FLOOR_CELLS_PER_S);
        let part = format!(
            "passes of {:.2e} cells: {:.0} s each at a floor of {} M cells/s",
            cells,
            pass.as_secs_f64(),
            FLOOR_CELLS_PER_S / 1e6
        );
        vec![
            warpt_harness::WorkLimit::warmup(ctx.burnin, pass, part.clone()),
            warpt_harness::WorkLimit::measure(ctx.duration, pass, part),
        ]
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let alphabet = Alphabet::by_name(ctx.str_param("alphabet")?).ok_or_else(|| {
            BenchmarkError::InvalidParam {
                key: "alphabet".into(),
                reason: "protein or dna".into(),
            }
        })?;
        let name = match ctx.str_param("matrix")? {
            "" => alphabet.default_matrix(),
            m => m,
        };
        self.matrix = Matrix::by_name(name).ok_or_else(|| BenchmarkError::InvalidParam {
            key: "matrix".into(),
            reason: format!("one of {}", Matrix::NAMES.join(", ")),
        })?;
        self.gaps = Gaps {
            open: ctx.int_param("gap_open", 0)?.min(127) as i32,
            extend: ctx.int_param("gap_extend", 0)?.min(127) as i32,
        };
        let isa_param = ctx.str_param("isa")?.to_string();
        self.isa = match isa_param.as_str() {
            "auto" => Isa::detect(),
            other => isa_by_name(other)
                .filter(|i| i.available())
                .ok_or_else(|| BenchmarkError::Skipped(format!("this CPU has no {other}")))?,
        };
        let generated = SearchSet::generate(
            ctx.seed,
            alphabet,
            (
                ctx.int_param("query_count", 1)? as usize,
                ctx.int_param("query_length", 1)? as usize,
            ),
            (
                ctx.int_param("target_count", 1)? as usize,
                ctx.int_param("target_length", 1)? as usize,
            ),
            ctx.float_param("homolog_pct")? / 100.0,
        );
        self.queries = match ctx.str_param("queries")? {
            "" => generated
                .queries
                .iter()
                .map(|s| self.matrix.encode(s))
                .collect(),
            path => load(path, &self.matrix)?,
        };
        self.targets = match ctx.str_param("targets")? {
            "" => generated
                .targets
                .iter()
                .map(|s| self.matrix.encode(s))
                .collect(),
            path => load(path, &self.matrix)?,
        };
        self.pool = threads::pool(ctx.int_param("threads", 0)? as usize)?;
        self.kernel = match ctx.str_param("kernel")? {
            "striped" => Kernel::Striped,
            _ => Kernel::Inter,
        };
        if self.kernel == Kernel::Striped && self.gaps.open < self.gaps.extend {
            // The striped pass is exact only when opening costs at least as
            // much as extending; the aligner runs the scalar code instead,
            // and the result says so. (The inter-sequence kernel has no
            // lazy-F pass and is exact for any gaps.)
            self.isa = Isa::Scalar;
        } else if isa_param == "auto" {
            self.calibrate();
        }
        self.packed = (self.kernel == Kernel::Inter)
            .then(|| Searcher::new(self.isa, &self.matrix, self.gaps).pack(&self.targets));
        self.seed = ctx.seed;
        self.scores_path = ctx.str_param("scores")?.to_string();
        self.inject_error = ctx.int_param("inject_error", 0)? == 1;
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let cells = self.cells();
        let def = SeriesDef::new(
            "gcups",
            "GCUPS",
            true,
            &[
                ("alphabet", self.matrix_alphabet().into()),
                ("kernel", self.kernel.name().into()),
                ("isa", self.isa.name().into()),
            ],
            Convert::Rate(cells as f64 / 1e9),
        );
        let (m, last) = measure.time(&MeasurePolicy::share_of(ctx, 1), NAME, &def, |_| {
            self.search()
        });
        self.scores = last.unwrap_or_default();
        if !self.scores_path.is_empty() {
            self.write_scores()?;
        }
        if self.inject_error {
            // The first pair, which every check (sample or not) includes.
            if let Some(first) = self.scores.first_mut().and_then(|r| r.first_mut()) {
                first.0 += 1;
            }
        }
        let widths = |w: Width| self.scores.iter().flatten().filter(|s| s.1 == w).count() as i64;
        let threads = threads::count(&self.pool);
        let int = |v: usize| ParamValue::Int(v as i64);
        Ok(Measured {
            metrics: m.metrics,
            details: vec![
                ("kernel".into(), ParamValue::Str(self.kernel.name().into())),
                ("isa".into(), ParamValue::Str(self.isa.name().into())),
                ("matrix".into(), ParamValue::Str(self.matrix.name.into())),
                ("gap_open".into(), ParamValue::Int(self.gaps.open as i64)),
                (
                    "gap_extend".into(),
                    ParamValue::Int(self.gaps.extend as i64),
                ),
                ("queries".into(), int(self.queries.len())),
                ("targets".into(), int(self.targets.len())),
                ("cells_per_pass".into(), ParamValue::Int(cells as i64)),
                ("pairs_8bit".into(), ParamValue::Int(widths(Width::U8))),
                ("pairs_16bit".into(), ParamValue::Int(widths(Width::I16))),
                ("pairs_32bit".into(), ParamValue::Int(widths(Width::I32))),
                ("threads".into(), int(threads)),
                (
                    "isa_calibration".into(),
                    ParamValue::Str(
                        self.calibration
                            .iter()
                            .map(|(i, g)| format!("{} {g:.2} GCUPS", i.name()))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                ),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let pairs = self.sample_pairs();
        if self.scores.len() != self.queries.len() {
            return Validation::fail("no measured pass to check");
        }
        let wrong: Vec<String> = pairs
            .par_iter()
            .filter_map(|&(q, t)| {
                let want =
                    sw_scalar::score(&self.queries[q], &self.targets[t], &self.matrix, self.gaps);
                let got = self.scores[q][t].0;
                (got != want).then(|| format!("query {q} x target {t}: {got}, reference {want}"))
            })
            .collect();
        match wrong.first() {
            Some(first) => Validation::fail(format!(
                "{} of {} checked scores differ from the scalar reference, e.g. {first}",
                wrong.len(),
                pairs.len()
            )),
            None => Validation::pass(format!(
                "{} of {} pairs ({}) equal the scalar Gotoh reference",
                pairs.len(),
                self.queries.len() * self.targets.len(),
                if pairs.len() == self.queries.len() * self.targets.len() {
                    "all"
                } else {
                    "a seeded sample"
                }
            )),
        }
    }
}

impl SwAlign {
    fn matrix_alphabet(&self) -> &'static str {
        if self.matrix.name == "dnafull" {
            "dna"
        } else {
            "protein"
        }
    }

    /// Every pair when they fit the check budget, else a seeded sample
    /// that does (and always every pair computed wider than 8 bits).
    fn sample_pairs(&self) -> Vec<(usize, usize)> {
        use rand_core::{RngCore, SeedableRng};
        let all: Vec<(usize, usize)> = (0..self.queries.len())
            .flat_map(|q| (0..self.targets.len()).map(move |t| (q, t)))
            .collect();
        if self.cells() <= CHECK_CELLS {
            return all;
        }
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(self.seed ^ 0x5157);
        let mut budget = CHECK_CELLS;
        let mut picked = Vec::new();
        let cost =
            |&(q, t): &(usize, usize)| (self.queries[q].len() * self.targets[t].len()) as u64;
        for &pair in &all {
            let wide = self
                .scores
                .get(pair.0)
                .and_then(|r| r.get(pair.1))
                .is_some_and(|s| s.1 != Width::U8);
            if wide && cost(&pair) <= budget {
                budget -= cost(&pair);
                picked.push(pair);
            }
        }
        for _ in 0..all.len() {
            let pair = all[(rng.next_u64() % all.len() as u64) as usize];
            if cost(&pair) > budget {
                break;
            }
            budget -= cost(&pair);
            picked.push(pair);
        }
        picked.push((0, 0));
        picked.sort_unstable();
        picked.dedup();
        picked
    }
}
