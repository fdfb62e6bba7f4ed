//! `micro/gemm`: C = A·B at a few sizes, from cache-resident to
//! memory-bound, in fp64, fp32, bf16 (fp32 accumulate) and int8 (int32
//! accumulate).
//!
//! fp64, fp32 and bf16 are warpt's GEMM engine (`warpt-gemm`: packed
//! panels, the best register tile this CPU runs; `details.gemm_kernel`
//! names it). bf16 runs on `vdpbf16ps` (fp32 accumulate) where the CPU has
//! AVX512_BF16; elsewhere its inputs are widened to fp32 (exactly, in
//! storage order, on every thread, the widening timed) and multiplied by
//! the fp32 kernel — the `method` detail says which path ran. int8 is the
//! engine's `vpdpbusd` kernel where the CPU has AVX512_VNNI, else warpt's
//! own AVX2 kernel ([`int8`]). Every sample multiplies the same seeded
//! matrices; validation recomputes sampled entries of C in fp64 (exactly,
//! for int8) and holds each to a bound stated per precision.
//!
//! Each fp64 and fp32 rate is also stated as a share of the FMA peak of
//! its precision on the same threads (`peak_share`, [`peak`]).
//!
//! - [`int8`]: the int8 GEMM;
//! - [`peak`]: the rates as shares of the FMA peak.

pub mod int8;
pub mod peak;

use std::time::Instant;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_gemm::{Bf16, Isa, Kernel, MatMut, MatRef, Scalar};
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Listed, ListedSuite, Measure, MeasurePolicy, MeasureResult,
    Measured, RunContext, SeriesDef, WorkLimit, at_floor_rate,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

/// The benchmark's name (in the micro suite).
pub const NAME: &str = "gemm";

/// The sizes measured by default: L2-resident, L3-resident, memory-bound.
const DEFAULT_SIZES: &str = "128,512,1536";

/// Entries of C checked per product.
const CHECKED: usize = 64;

/// A GEMM precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// fp64 in, fp64 accumulate.
    Fp64,
    /// fp32 in, fp32 accumulate.
    Fp32,
    /// bf16 in, fp32 accumulate and out.
    Bf16,
    /// int8 in, int32 accumulate and out.
    Int8,
}

impl Precision {
    /// Every precision, in report order.
    pub const ALL: [Precision; 4] = [
        Precision::Fp64,
        Precision::Fp32,
        Precision::Bf16,
        Precision::Int8,
    ];

    /// The `precision` tag.
    pub fn tag(self) -> &'static str {
        match self {
            Precision::Fp64 => "fp64",
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        }
    }

    /// The metric's unit.
    pub fn unit(self) -> &'static str {
        match self {
            Precision::Int8 => "GOP/s",
            _ => "GFLOP/s",
        }
    }

    /// How C is computed, for details.
    pub fn method(self) -> &'static str {
        match self {
            Precision::Fp64 => "warpt-gemm f64",
            Precision::Fp32 => "warpt-gemm f32",
            Precision::Bf16 => {
                if bf16_kernel() && Kernel::<Bf16>::best().isa == Isa::Amx {
                    "warpt-gemm bf16 (AMX tdpbf16ps tiles, fp32 accumulate)"
                } else if bf16_kernel() {
                    "warpt-gemm bf16 (vdpbf16ps, fp32 accumulate)"
                } else {
                    "bf16 widened to fp32 (exact), warpt-gemm f32: this CPU has no AVX512_BF16"
                }
            }
            Precision::Int8 => {
                if int8_kernel() && Kernel::<i8>::best().isa == Isa::Amx {
                    "warpt-gemm int8 (AMX tdpbsud tiles on A offset to unsigned, corrected; exact)"
                } else if int8_kernel() {
                    "warpt-gemm int8 (vpdpbusd on A offset to unsigned, corrected; exact)"
                } else {
                    "warpt's blocked int8 GEMM (AVX2 vpmaddwd on i16-widened operands, exact): this CPU has no AVX512_VNNI"
                }
            }
        }
    }

    /// The validation bound, for details.
    pub fn tolerance(self) -> &'static str {
        match self {
            Precision::Fp64 => "|C - C_fp64| <= 2 k eps64 sum|a||b| per entry",
            Precision::Fp32 | Precision::Bf16 => {
                "|C - C_fp64| <= 2 k eps32 sum|a||b| per entry (the inputs themselves are exact)"
            }
            Precision::Int8 => "C equals the exact integer product",
        }
    }

    fn parse(s: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|p| p.tag() == s)
    }
}

/// The spec.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::gemm::SUITE, NAME)
        .component(BenchmarkComponent::Cpu)
        .description(
            "C = A·B for square n x n matrices at each size in n, in fp64, fp32, bf16 with fp32 \
             accumulation and int8 with int32 accumulation (warpt's GEMM engine), on every allowed CPU. 2 n^3 \
             operations per product (GFLOP/s; GOP/s for int8). Validation: sampled entries of C against an \
             fp64 (for int8 exact) recomputation, within a bound stated per precision. fp64 and fp32 \
             rates are also stated as a share of the FMA peak of the same precision and threads \
             (peak_share, percent).",
        )
        .duration(6.0)
        .param(Param::text("n", DEFAULT_SIZES).help("matrix orders, comma-separated (each >= 1)"))
        .param(
            Param::choice("precision", "all", &["all", "fp64", "fp32", "bf16", "int8"])
                .help("all, or one of fp64, fp32, bf16, int8"),
        )
        .param(Param::int("threads", 0, 0..).help("threads; 0 = one per CPU this process may use"))
        .check(|params| {
            sizes(params.get("n"))
                .map(|_| ())
                .map_err(|e| format!("parameter 'n': {e}"))
        })
        .metric("gflops")
        .metric("peak_share")
        .build()
}

/// The sizes a `n` parameter names.
pub fn sizes(param: Option<&ParamValue>) -> Result<Vec<usize>, String> {
    let text = match param {
        None => DEFAULT_SIZES.to_string(),
        Some(ParamValue::Int(i)) => i.to_string(),
        Some(v) => v
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
    };
    text.split(',')
        .map(|s| {
            s.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| (1..=65536).contains(&n))
                .ok_or_else(|| {
                    format!(
                        "'{}' in '{text}' is not a matrix order in 1..=65536",
                        s.trim()
                    )
                })
        })
        .collect()
}

/// The seeded operands of one size in the precision's storage, and the
/// product (overwritten by every sample); all row-major.
enum Operands {
    F64(Vec<f64>, Vec<f64>, Vec<f64>),
    F32(Vec<f32>, Vec<f32>, Vec<f32>),
    /// bf16 values, the fp32 buffers they widen into (empty where the
    /// engine has a bf16 kernel for this CPU), and C.
    Bf16 {
        a: Vec<Bf16>,
        b: Vec<Bf16>,
        wa: Vec<f32>,
        wb: Vec<f32>,
        c: Vec<f32>,
    },
    I8(Vec<i8>, Vec<i8>, Vec<i32>),
}

fn uniform(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

impl Operands {
    fn new(p: Precision, n: usize, seed: u64) -> Operands {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ n as u64);
        let mut next = move || uniform(&mut rng);
        match p {
            Precision::Fp64 => Operands::F64(
                (0..n * n).map(|_| next()).collect(),
                (0..n * n).map(|_| next()).collect(),
                vec![0.0; n * n],
            ),
            Precision::Fp32 => Operands::F32(
                (0..n * n).map(|_| next() as f32).collect(),
                (0..n * n).map(|_| next() as f32).collect(),
                vec![0.0; n * n],
            ),
            Precision::Bf16 => {
                // The fp32 copies exist only where bf16 is widened.
                let widened = if bf16_kernel() { 0 } else { n * n };
                Operands::Bf16 {
                    a: (0..n * n).map(|_| Bf16::from_f32(next() as f32)).collect(),
                    b: (0..n * n).map(|_| Bf16::from_f32(next() as f32)).collect(),
                    wa: vec![0.0; widened],
                    wb: vec![0.0; widened],
                    c: vec![0.0; n * n],
                }
            }
            Precision::Int8 => Operands::I8(
                (0..n * n).map(|_| (next() * 256.0).floor() as i8).collect(),
                (0..n * n).map(|_| (next() * 256.0).floor() as i8).collect(),
                vec![0; n * n],
            ),
        }
    }

    /// A[i][k] (exactly the value multiplied).
    fn a(&self, n: usize, i: usize, k: usize) -> f64 {
        match self {
            Operands::F64(a, ..) => a[i * n + k],
            Operands::F32(a, ..) => f64::from(a[i * n + k]),
            Operands::Bf16 { a, .. } => f64::from(a[i * n + k].to_f32()),
            Operands::I8(a, ..) => f64::from(a[i * n + k]),
        }
    }

    /// B[k][j] (exactly the value multiplied).
    fn b(&self, n: usize, k: usize, j: usize) -> f64 {
        match self {
            Operands::F64(_, b, _) => b[k * n + j],
            Operands::F32(_, b, _) => f64::from(b[k * n + j]),
            Operands::Bf16 { b, .. } => f64::from(b[k * n + j].to_f32()),
            Operands::I8(_, b, _) => f64::from(b[k * n + j]),
        }
    }

    /// C[i][j] of the last product.
    fn c(&self, n: usize, i: usize, j: usize) -> f64 {
        match self {
            Operands::F64(.., c) => c[i * n + j],
            Operands::F32(.., c) | Operands::Bf16 { c, .. } => f64::from(c[i * n + j]),
            Operands::I8(.., c) => f64::from(c[i * n + j]),
        }
    }

    /// C = A B once, on `threads` threads.
    fn multiply(&mut self, n: usize, threads: usize) {
        match self {
            Operands::F64(a, b, c) => product(a, b, c, n, threads),
            Operands::F32(a, b, c) => product(a, b, c, n, threads),
            Operands::Bf16 { a, b, wa, wb, c } => {
                if bf16_kernel() {
                    product(a, b, c, n, threads);
                } else {
                    widen(a, wa);
                    widen(b, wb);
                    product(wa, wb, c, n, threads);
                }
            }
            Operands::I8(a, b, c) if int8_kernel() => product(a, b, c, n, threads),
            Operands::I8(a, b, c) => int8::gemm(a, b, c, n, n, n),
        }
    }
}

/// C = A B for row-major n x n operands, by the engine.
fn product<T: warpt_gemm::Element>(a: &[T], b: &[T], c: &mut [T::Acc], n: usize, threads: usize) {
    let views = MatRef::row_major(a, n, n)
        .and_then(|a| Ok((a, MatRef::row_major(b, n, n)?, MatMut::row_major(c, n, n)?)));
    // The operands are n x n by construction: neither a view nor the
    // product can be refused.
    if let Ok((a, b, c)) = views {
        let _ = warpt_gemm::gemm(c, T::Acc::ONE, a, b, T::Acc::ZERO, threads);
    }
}

/// One precision's kernels over its sizes: the name alone when every
/// size ran on it, else each name with its sizes (`avx512f f32 48x8 at
/// n=384,2048, avx512f f32 32x12 at n=1024`).
fn kernels_by_size(names: &[(&str, usize)]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for (name, _) in names {
        if !distinct.contains(name) {
            distinct.push(name);
        }
    }
    if distinct.len() == 1 {
        return distinct[0].to_string();
    }
    distinct
        .iter()
        .map(|d| {
            let sizes: Vec<String> = names
                .iter()
                .filter(|(name, _)| name == d)
                .map(|(_, n)| n.to_string())
                .collect();
            format!("{d} at n={}", sizes.join(","))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the engine multiplies bf16 with bf16 instructions here
/// (`vdpbf16ps`, AMX), as the LU's bf16 updates decide
/// ([`crate::lu::Real::bf16_kernel`]); else bf16 is widened to fp32 and
/// multiplied by the fp32 kernel, which is faster than bf16 by portable
/// code and than AVX2's bf16 tile (0.7-0.8x fp32's rate on square
/// products: it is made for a decode step's weight-bound ones).
fn bf16_kernel() -> bool {
    <f32 as crate::lu::Real>::bf16_kernel().is_some()
}

/// Whether the engine multiplies int8 with int8 dot products here
/// (`vpdpbusd`); else [`int8::gemm`] (AVX2) does.
fn int8_kernel() -> bool {
    Kernel::<i8>::hardware().is_some()
}

/// bf16 values widened exactly into fp32, in storage order, on the
/// current rayon pool.
fn widen(src: &[Bf16], dst: &mut [f32]) {
    use rayon::prelude::*;
    dst.par_chunks_mut(1 << 14)
        .zip(src.par_chunks(1 << 14))
        .for_each(|(d, s)| {
            for (x, &h) in d.iter_mut().zip(s) {
                *x = h.to_f32();
            }
        });
}

/// The first entry of C outside its precision's bound, if any: `CHECKED`
/// entries spread over C, each recomputed in fp64.
fn check(p: Precision, n: usize, ops: &Operands, seed: u64) -> Option<String> {
    let eps = match p {
        Precision::Fp64 => f64::EPSILON,
        Precision::Fp32 | Precision::Bf16 => f64::from(f32::EPSILON),
        Precision::Int8 => 0.0,
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed.rotate_left(17) ^ n as u64);
    for t in 0..CHECKED {
        // The corners first, then seeded positions.
        let (i, j) = match t {
            0 => (0, 0),
            1 => (n - 1, n - 1),
            _ => (
                (rng.next_u64() % n as u64) as usize,
                (rng.next_u64() % n as u64) as usize,
            ),
        };
        let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
        for k in 0..n {
            let prod = ops.a(n, i, k) * ops.b(n, k, j);
            exact += prod;
            magnitude += prod.abs();
        }
        let got = ops.c(n, i, j);
        let bound = 2.0 * n as f64 * eps * magnitude;
        if (got - exact).abs() > bound || !got.is_finite() {
            return Some(format!(
                "{} n={n}: C[{i}][{j}] = {got:e}, expected {exact:e} (bound {bound:e}: {})",
                p.tag(),
                p.tolerance()
            ));
        }
    }
    None
}

/// The running benchmark.
pub struct Gemm {
    plan: Vec<(Precision, usize)>,
    threads: usize,
    pool: Option<rayon::ThreadPool>,
    checked: usize,
    mismatch: Option<String>,
}

impl Gemm {
    /// A fresh instance.
    pub fn new() -> Self {
        Gemm {
            plan: Vec::new(),
            threads: 1,
            pool: None,
            checked: 0,
            mismatch: None,
        }
    }
}

impl Default for Gemm {
    fn default() -> Self {
        Gemm::new()
    }
}

/// GFLOP/s (GOP/s) assumed for the measure limit: below any CPU's GEMM.
const FLOOR_GFLOPS: f64 = 1.0;

impl Benchmark for Gemm {
    fn work_limits(&self, ctx: &RunContext) -> Vec<WorkLimit> {
        // Each (precision, n) calibrates with one product and takes a
        // warm-up and a measured sample of at least one product each.
        let products: f64 = self
            .plan
            .iter()
            .map(|&(_, n)| 3.0 * 2.0 * (n as f64).powi(3))
            .sum();
        let work = at_floor_rate(products / 1e9, FLOOR_GFLOPS);
        vec![WorkLimit::measure(
            ctx.duration,
            work,
            format!(
                "{} (precision, n) pairs up to n = {}: three products each, {:.1} GFLOP at a \
                 floor of {FLOOR_GFLOPS} GFLOP/s",
                self.plan.len(),
                self.plan.iter().map(|&(_, n)| n).max().unwrap_or(0),
                products / 1e9
            ),
        )]
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let sizes = sizes(ctx.params.get("n")).map_err(BenchmarkError::invalid("n"))?;
        let wanted = ctx.str_param("precision")?;
        let precisions: Vec<Precision> = match wanted {
            "all" => Precision::ALL.to_vec(),
            other => vec![
                Precision::parse(other).ok_or_else(|| BenchmarkError::InvalidParam {
                    key: "precision".into(),
                    reason: format!("'{other}' is not one of all, fp64, fp32, bf16, int8"),
                })?,
            ],
        };
        let largest = sizes.iter().copied().max().unwrap_or(1) as f64;
        // fp64 operands and product, plus the fp32 widening buffers of bf16.
        let need = 3.0 * largest * largest * 8.0;
        let available = warpt_system::memory_quick().available_bytes as f64;
        if need > 0.5 * available {
            return Err(BenchmarkError::Skipped(format!(
                "n = {largest} needs about {:.0} MiB but {:.0} MiB is available",
                need / 1048576.0,
                available / 1048576.0
            )));
        }
        self.plan = precisions
            .iter()
            .flat_map(|&p| sizes.iter().map(move |&n| (p, n)))
            .collect();
        let threads = ctx.int_param("threads", 0)? as usize;
        self.threads = if threads == 0 {
            warpt_system::allowed_cpus().len().max(1)
        } else {
            threads
        };
        self.pool = Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.threads)
                .build()
                .map_err(|e| {
                    BenchmarkError::Failed(format!("cannot start {} threads: {e}", self.threads))
                })?,
        );
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let pool = self.pool.take().ok_or_else(BenchmarkError::not_prepared)?;
        let threads = self.threads;
        let policy = MeasurePolicy::share_of(ctx, self.plan.len());
        let mut metrics = Vec::new();
        for (p, n) in self.plan.clone() {
            let mut ops = Operands::new(p, n, ctx.seed);
            // Products per sample: at least ~20 ms of work.
            let t = Instant::now();
            pool.install(|| ops.multiply(n, threads));
            let once = t.elapsed().as_secs_f64().max(1e-7);
            let reps = ((0.02 / once).ceil() as usize).clamp(1, 10_000);
            let work = 2.0 * (n as f64).powi(3) * reps as f64;
            let def = SeriesDef::new(
                "gflops",
                p.unit(),
                true,
                &[("precision", p.tag().into()), ("n", n.to_string())],
                Convert::Rate(work / 1e9),
            );
            let label = format!("{} n={n}", p.tag());
            let m = measure.run(&policy, &label, std::slice::from_ref(&def), |out| {
                let t = Instant::now();
                pool.install(|| {
                    for _ in 0..reps {
                        ops.multiply(n, threads);
                    }
                });
                out[0] = t.elapsed().as_secs_f64();
            });
            metrics.extend(m.metrics);
            match check(p, n, &ops, ctx.seed) {
                Some(e) => {
                    self.mismatch.get_or_insert(e);
                }
                None => self.checked += 1,
            }
        }
        // Each precision's tiles, and at which sizes where they differ (the
        // engine takes the tile that pads n least).
        let mut used: Vec<(Precision, Vec<(&str, usize)>)> = Vec::new();
        for &(p, n) in &self.plan {
            let name = match p {
                Precision::Fp64 => Kernel::<f64>::for_rows(n).name,
                Precision::Fp32 => Kernel::<f32>::for_rows(n).name,
                Precision::Bf16 if bf16_kernel() => Kernel::<Bf16>::for_rows(n).name,
                Precision::Bf16 => Kernel::<f32>::for_rows(n).name,
                Precision::Int8 if int8_kernel() => Kernel::<i8>::for_rows(n).name,
                Precision::Int8 => "int8 avx2 vpmaddwd",
            };
            match used.iter_mut().find(|(q, _)| *q == p) {
                Some((_, names)) => names.push((name, n)),
                None => used.push((p, vec![(name, n)])),
            }
        }
        let kernels: Vec<String> = used
            .iter()
            .map(|(p, names)| format!("{}: {}", p.tag(), kernels_by_size(names)))
            .collect();
        let (shares, peaks) = peak::shares(&metrics, threads);
        metrics.extend(shares);
        let mut details = vec![
            ("engine".to_string(), ParamValue::from("warpt-gemm")),
            ("isa".to_string(), ParamValue::from(Isa::best().name())),
            (
                "gemm_kernel".to_string(),
                ParamValue::from(kernels.join("; ")),
            ),
            ("threads".to_string(), ParamValue::Int(self.threads as i64)),
            (
                "counting".to_string(),
                ParamValue::from("2 n^3 operations per product (a multiply and an add)"),
            ),
        ];
        details.extend(peaks);
        let mut seen = Vec::new();
        for (p, _) in &self.plan {
            if !seen.contains(p) {
                seen.push(*p);
                details.push((format!("method_{}", p.tag()), ParamValue::from(p.method())));
                details.push((
                    format!("tolerance_{}", p.tag()),
                    ParamValue::from(p.tolerance()),
                ));
            }
        }
        Ok(Measured::new(metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        match &self.mismatch {
            Some(m) => Validation::fail(m.clone()),
            None if self.checked < self.plan.len() => Validation::fail("a product was not checked"),
            None => Validation::pass(format!(
                "{CHECKED} sampled entries of each of {} products within their precision's bound",
                self.checked
            )),
        }
    }
}

/// The suite `micro/gemm` joins (registered with `Registry::extend`).
pub const SUITE: &str = "micro";

/// `micro/gemm`, added to the micro suite by the registry (it lives here,
/// beside linpack's kernels, so the micro crate stays light).
pub const GEMM_BENCHMARKS: ListedSuite = ListedSuite {
    name: SUITE,
    description: "dense matrix products in every precision",
    benchmarks: &[Listed::new(spec, || Box::new(Gemm::new()))],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_named_once_or_with_their_sizes() {
        assert_eq!(kernels_by_size(&[("k48", 384), ("k48", 2048)]), "k48");
        assert_eq!(
            kernels_by_size(&[("k48", 384), ("k32", 1024), ("k48", 2048)]),
            "k48 at n=384,2048, k32 at n=1024"
        );
    }

    #[test]
    fn sizes_parse_and_bad_ones_are_named() {
        assert_eq!(sizes(None).unwrap(), [128, 512, 1536]);
        assert_eq!(sizes(Some(&ParamValue::Int(64))).unwrap(), [64]);
        assert_eq!(sizes(Some(&ParamValue::from("8, 16"))).unwrap(), [8, 16]);
        let e = sizes(Some(&ParamValue::from("8,x"))).unwrap_err();
        assert!(e.contains("'x'"), "{e}");
        assert!(sizes(Some(&ParamValue::Int(0))).is_err());
    }

    #[test]
    fn bf16_rounds_to_nearest_even_and_widens_exactly() {
        let round = |x: f32| Bf16::from_f32(x).to_f32();
        assert_eq!(round(1.0), 1.0);
        assert_eq!(round(-0.5), -0.5);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
        assert_eq!(round(1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(round(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
    }

    #[test]
    fn every_precision_passes_its_check_and_a_wrong_entry_fails_it() {
        for p in Precision::ALL {
            for n in [1, 17, 70] {
                let mut ops = Operands::new(p, n, 3);
                ops.multiply(n, 1);
                assert_eq!(check(p, n, &ops, 3), None, "{} n={n}", p.tag());
                // One wrong entry at a checked position (the corner).
                match &mut ops {
                    Operands::F64(.., c) => c[0] += 1e-6,
                    Operands::F32(.., c) | Operands::Bf16 { c, .. } => c[0] += 1e-2,

                    Operands::I8(.., c) => c[0] += 1,
                }
                let e = check(p, n, &ops, 3).unwrap();
                assert!(e.contains("C[0][0]"), "{e}");
            }
        }
    }
}
