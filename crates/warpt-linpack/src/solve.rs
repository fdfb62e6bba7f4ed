//! `linpack_fp64_cpu`, `linpack_fp32_cpu` and `linpack_mxp_cpu`: HPL-style
//! dense solves with faer's blocked, parallel LU with partial pivoting.

use faer::linalg::solvers::Solve;
use faer::{Col, Mat, Par};
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkMetric, BenchmarkSpec, ParamValue,
    Validation,
};

use crate::hpl::{self, RESIDUAL_THRESHOLD};

/// Most refinement steps before mixed precision gives up.
const MAX_REFINEMENT: usize = 50;

/// Which solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// LU and solve in fp64.
    F64,
    /// LU and solve in fp32, residual at fp32 epsilon.
    F32,
    /// LU in fp32, iterative refinement in fp64 to the fp64 residual test.
    Mixed,
}

impl Precision {
    /// The benchmark's name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F64 => "linpack_fp64_cpu",
            Precision::F32 => "linpack_fp32_cpu",
            Precision::Mixed => "linpack_mxp_cpu",
        }
    }
}

/// The spec of one of the three.
pub fn spec(p: Precision) -> BenchmarkSpec {
    let what = match p {
        Precision::F64 => "LU with partial pivoting and solve in fp64",
        Precision::F32 => {
            "LU with partial pivoting and solve in fp32 (residual test at fp32 epsilon)"
        }
        Precision::Mixed => {
            "LU in fp32, then iterative refinement in fp64 until the fp64 HPL residual test passes (HPL-MxP style; \
             GFLOP/s is HPL's fp64 count over the total time)"
        }
    };
    let mut metrics = vec![
        "gflops".into(),
        "scaled_residual".into(),
        "factor_s".into(),
        "solve_s".into(),
    ];
    if p == Precision::Mixed {
        metrics.push("refinement_iterations".into());
    }
    BenchmarkSpec {
        id: BenchmarkId::new(crate::SUITE, p.name()),
        components: vec![BenchmarkComponent::Cpu],
        kind: BenchmarkKind::Synthetic,
        description: Some(format!(
            "HPL-style dense solve of a random N x N system (entries uniform in [-0.5, 0.5), from the seed): {what}. \
             GFLOP/s = (2/3 N^3 + 3/2 N^2) / time, as HPL counts. Validation: HPL's scaled residual \
             ||Ax-b|| / (eps (||A|| ||x|| + ||b||) N) < 16. faer's LU, on every CPU."
        )),
        default_duration_seconds: Some(10.0),
        external_tool: None,
        params: [
            ("n".to_string(), ParamValue::Int(3000)),
            ("mem_fraction".to_string(), ParamValue::Float(0.0)),
        ]
        .into(),
        param_help: [
            ("n".to_string(), "matrix order N".to_string()),
            (
                "mem_fraction".to_string(),
                "size N so the fp64 matrix uses this share of available memory, as HPL users do (0 = use n; at most 0.9)"
                    .to_string(),
            ),
        ]
        .into(),
        timeouts: Default::default(),
        metrics,
    }
}

/// The running benchmark.
pub struct Linpack {
    precision: Precision,
    n: usize,
    system: Option<(Mat<f64>, Col<f64>)>,
    worst_residual: f64,
    solves: usize,
    failures: Vec<String>,
    max_iterations: usize,
}

impl Linpack {
    /// A fresh instance.
    pub fn new(precision: Precision) -> Self {
        Linpack {
            precision,
            n: 0,
            system: None,
            worst_residual: 0.0,
            solves: 0,
            failures: Vec::new(),
            max_iterations: 0,
        }
    }
}

fn to_f32(a: &Mat<f64>) -> Mat<f32> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] as f32)
}

impl Benchmark for Linpack {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let available = warpt_system::memory_quick().available_bytes as f64;
        let fraction = ctx
            .params
            .get("mem_fraction")
            .and_then(ParamValue::as_f64)
            .unwrap_or(0.0);
        if !(0.0..=0.9).contains(&fraction) {
            return Err(BenchmarkError::InvalidParam {
                key: "mem_fraction".into(),
                reason: format!(
                    "{fraction} is outside [0, 0.9]: warpt refuses more than 90% of the {:.0} MiB available",
                    available / 1048576.0
                ),
            });
        }
        self.n = if fraction > 0.0 {
            ((fraction * available / 8.0).sqrt() as usize).max(64)
        } else {
            ctx.int_param("n", 2)? as usize
        };
        // The matrix, faer's factor copy, and the fp32 copy for the other two.
        let need = (self.n * self.n) as f64 * 8.0 * 2.5;
        if need > 0.9 * available {
            return Err(BenchmarkError::Skipped(format!(
                "N = {} needs about {:.0} MiB but {:.0} MiB is available; lower n or mem_fraction",
                self.n,
                need / 1048576.0,
                available / 1048576.0
            )));
        }
        faer::set_global_parallelism(Par::rayon(0));
        self.system = Some(hpl::system(self.n, ctx.seed));
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let (a, b) = self
            .system
            .take()
            .ok_or_else(|| BenchmarkError::Failed("not prepared".into()))?;
        let n = self.n;
        let flops = hpl::flops(n);
        let defs = [
            SeriesDef::new("gflops", "GFLOP/s", true, &[], Convert::Rate(flops / 1e9)),
            SeriesDef::new("factor_s", "s", false, &[], Convert::Time(1.0)),
            SeriesDef::new("solve_s", "s", false, &[], Convert::Time(1.0)),
        ];
        let (a32, b32) = match self.precision {
            Precision::F64 => (None, None),
            _ => (
                Some(to_f32(&a)),
                Some(Col::<f32>::from_fn(n, |i| b[i] as f32)),
            ),
        };
        let precision = self.precision;
        let norm_a = hpl::norm_inf(&a);
        let mut outcome: Vec<(f64, usize, bool)> = Vec::new();
        let policy = MeasurePolicy::share_of(ctx, 1);
        let m = measure.run(&policy, precision.name(), &defs, |out| {
            let t = std::time::Instant::now();
            let (x, iterations, converged, factor_s) = match (precision, &a32, &b32) {
                (Precision::F64, _, _) => {
                    let lu = a.partial_piv_lu();
                    let f = t.elapsed().as_secs_f64();
                    (lu.solve(&b), 0, true, f)
                }
                (Precision::F32, Some(a32), Some(b32)) => {
                    let lu = a32.partial_piv_lu();
                    let f = t.elapsed().as_secs_f64();
                    let x32 = lu.solve(b32);
                    (Col::<f64>::from_fn(n, |i| x32[i] as f64), 0, true, f)
                }
                (_, Some(a32), Some(b32)) => {
                    let lu = a32.partial_piv_lu();
                    let f = t.elapsed().as_secs_f64();
                    let x32 = lu.solve(b32);
                    let mut x = Col::<f64>::from_fn(n, |i| x32[i] as f64);
                    let (mut it, mut ok) = (0, false);
                    while it < MAX_REFINEMENT {
                        let r = &b - &a * &x;
                        if hpl::scaled(&r, norm_a, &x, &b, f64::EPSILON) < RESIDUAL_THRESHOLD {
                            ok = true;
                            break;
                        }
                        let d32 = lu.solve(Col::<f32>::from_fn(n, |i| r[i] as f32));
                        x += Col::<f64>::from_fn(n, |i| d32[i] as f64);
                        it += 1;
                    }
                    (x, it, ok, f)
                }
                _ => unreachable!("fp32 copies exist for fp32 and mixed"),
            };
            let total = t.elapsed().as_secs_f64();
            out[0] = total;
            out[1] = factor_s.max(1e-9);
            out[2] = (total - factor_s).max(1e-9);
            let eps = if precision == Precision::F32 {
                f32::EPSILON as f64
            } else {
                f64::EPSILON
            };
            outcome.push((
                hpl::scaled_residual(&a, norm_a, &x, &b, eps),
                iterations,
                converged,
            ));
        });
        for (res, it, ok) in &outcome {
            self.solves += 1;
            self.worst_residual = self.worst_residual.max(*res);
            self.max_iterations = self.max_iterations.max(*it);
            if !ok {
                self.failures.push(format!(
                    "refinement did not reach the fp64 residual test in {MAX_REFINEMENT} steps"
                ));
            } else if *res >= RESIDUAL_THRESHOLD || !res.is_finite() {
                self.failures
                    .push(format!("scaled residual {res:.3e} >= {RESIDUAL_THRESHOLD}"));
            }
        }
        let mut metrics = m.metrics;
        metrics.push(BenchmarkMetric {
            name: "scaled_residual".into(),
            value: self.worst_residual,
            unit: "".into(),
            higher_is_better: false,
            tags: Default::default(),
            stats: None,
        });
        if precision == Precision::Mixed {
            metrics.push(BenchmarkMetric {
                name: "refinement_iterations".into(),
                value: self.max_iterations as f64,
                unit: "".into(),
                higher_is_better: false,
                tags: Default::default(),
                stats: None,
            });
        }
        let gflops = metrics.first().map_or(0.0, |m| m.value);
        let mut details = vec![
            ("n".to_string(), ParamValue::Int(n as i64)),
            (
                "threads".to_string(),
                ParamValue::Int(warpt_system::allowed_cpus().len() as i64),
            ),
            (
                "solver".to_string(),
                ParamValue::from("faer partial_piv_lu"),
            ),
        ];
        let threads = warpt_system::allowed_cpus().len();
        let isa = warpt_micro::cpu_flops::Isa::detect();
        if let Some(peak) = warpt_micro::theoretical_peak(isa, threads) {
            let ceiling = if precision == Precision::F32 {
                peak.fp32_gflops
            } else {
                peak.fp64_gflops
            };
            details.push((
                "peak_share".to_string(),
                ParamValue::Float(gflops / ceiling),
            ));
        }
        Ok(Measured {
            metrics,
            details,
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        if self.solves == 0 {
            Validation::fail("nothing was solved")
        } else if let Some(f) = self.failures.first() {
            Validation::fail(format!(
                "{} of {} solves failed: {f}",
                self.failures.len(),
                self.solves
            ))
        } else {
            Validation::pass(format!(
                "all {} solves passed HPL's residual test (worst scaled residual {:.3e} < {RESIDUAL_THRESHOLD})",
                self.solves, self.worst_residual
            ))
        }
    }
}
