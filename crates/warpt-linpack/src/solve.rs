//! `linpack_fp64_cpu`, `linpack_fp32_cpu` and `linpack_mxp_cpu`: HPL-style
//! dense solves with faer's blocked, parallel LU with partial pivoting.

use std::time::Instant;

use faer::linalg::solvers::{PartialPivLu, Solve};
use faer::{Col, Mat, Par};
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef, WorkLimit, at_floor_rate,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Params, Validation,
};

use crate::hpl::{self, RESIDUAL_THRESHOLD};
use crate::lu::{Lu, Real, Updates, update_kernel};
use crate::refine::{self, Method};

/// Panel width of the blocked LU unless `nb` says otherwise: the fastest of
/// 64..512 at N = 3000..8000 on the machine this was written on.
pub const DEFAULT_NB: usize = 256;

/// Bytes per matrix entry the three solves hold: the fp64 matrix kept for
/// the residual plus the copy factored (fp64: 8 + 8; fp32 and mixed: 8 + 4
/// for the fp32 matrix + 4 for its factored copy).
const BYTES_PER_ENTRY: f64 = 16.0;

/// The matrix order: `n`, or with `mem_fraction` > 0 the N whose
/// `bytes_per_entry * N^2` is that share of available memory.
pub fn matrix_order(ctx: &RunContext, bytes_per_entry: f64) -> Result<usize, BenchmarkError> {
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
    Ok(if fraction > 0.0 {
        ((fraction * available / bytes_per_entry).sqrt() as usize).max(64)
    } else {
        ctx.int_param("n", 2)? as usize
    })
}

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
            "LU in fp32 (factor_precision=bf16: trailing updates on bf16 operands accumulated in fp32), then \
             refinement in fp64 until the fp64 HPL residual test passes: plain iterative refinement, GMRES \
             preconditioned by the low-precision LU where that stops converging (HPL-MxP style; GFLOP/s is HPL's \
             fp64 count over the total time)"
        }
    };
    let mut b = BenchmarkSpec::builder(crate::SUITE, p.name())
        .component(BenchmarkComponent::Cpu)
        .description(format!(
            "HPL-style dense solve of a random N x N system (entries uniform in [-0.5, 0.5), from the seed): {what}. \
             GFLOP/s = (2/3 N^3 + 3/2 N^2) / time, as HPL counts. Validation: HPL's scaled residual \
             ||Ax-b|| / (eps (||A|| ||x|| + ||b||) N) < 16. LU: HPL's blocked right-looking algorithm with look-ahead, \
             its trailing updates on warpt's GEMM engine (details.gemm_kernel) and its triangular solves on faer's \
             (solver=faer: faer's own recursive LU), on every CPU."
        ))
        .duration(10.0)
        .param(Param::int("n", 3000, 1..).help("matrix order N"))
        .param(Param::int("nb", DEFAULT_NB as i64, 1..).help("panel width (HPL's NB) of the blocked LU"))
        .param(mem_fraction(
            "size N from available memory as HPL users do: the matrix and its factored copy (16 bytes per entry) \
             use this share of it (0 = use n; at most 0.9)",
        ))
        .param(Param::choice("solver", "blocked", &["blocked", "faer"]).help(
            "blocked (HPL-style right-looking LU with look-ahead on warpt's GEMM engine) or faer (faer's recursive partial_piv_lu)",
        ))
        .metric("gflops")
        .metric("scaled_residual")
        .metric("factor_s")
        .metric("solve_s");
    if p == Precision::Mixed {
        b = b
            .param(Param::choice("factor_precision", "fp32", &["fp32", "bf16"]).help(
                "fp32, or bf16: the LU's trailing updates multiply bf16-rounded panels, accumulating in fp32",
            ))
            .param(Param::choice("matrix", "hpl", &["hpl", "hpl-mxp"]).help(
                "hpl (HPL's random matrix), or hpl-mxp (HPL-MxP's: the same with each diagonal entry the sum of \
                 its row's magnitudes, diagonally dominant, as low-precision factors need)",
            ))
            .metric("refinement_iterations");
    }
    b.check(check_params).build()
}

/// `mem_fraction`: a share of the available memory, which
/// [`check_mem_fraction`] holds to 90%.
pub fn mem_fraction(help: &str) -> Param {
    Param::float("mem_fraction", 0.0, 0.0..=1.0).help(help)
}

/// warpt refuses more than 90% of the available memory, and says how much
/// that is.
pub fn check_mem_fraction(params: &Params) -> Result<(), String> {
    let fraction = params
        .get("mem_fraction")
        .and_then(ParamValue::as_f64)
        .unwrap_or(0.0);
    if fraction > 0.9 {
        let available = warpt_system::memory_quick().available_bytes >> 20;
        return Err(format!(
            "parameter 'mem_fraction': {fraction} is outside [0, 0.9]; warpt refuses more than 90% of the \
             {available} MiB available"
        ));
    }
    Ok(())
}

/// The memory share, and bf16 updates only on warpt's blocked LU.
fn check_params(params: &Params) -> Result<(), String> {
    check_mem_fraction(params)?;
    if params.get("factor_precision").and_then(ParamValue::as_str) == Some("bf16")
        && params.get("solver").and_then(ParamValue::as_str) == Some("faer")
    {
        return Err(
            "parameter 'factor_precision': bf16 updates are warpt's blocked LU's; solver=faer has none"
                .to_string(),
        );
    }
    Ok(())
}

/// The running benchmark.
pub struct Linpack {
    precision: Precision,
    n: usize,
    nb: usize,
    solver: Solver,
    system: Option<(Mat<f64>, Col<f64>)>,
    worst_residual: f64,
    solves: usize,
    failures: Vec<String>,
    max_iterations: usize,
    /// The trailing updates' precision (bf16 only for mixed precision).
    updates: Updates,
    /// The matrix generator (`hpl`, or `hpl-mxp` for mixed precision).
    matrix: &'static str,
    /// The refinement that finished each solve, and GMRES's iterations.
    methods: Vec<Method>,
    max_gmres: usize,
}

impl Linpack {
    /// A fresh instance.
    pub fn new(precision: Precision) -> Self {
        Linpack {
            precision,
            n: 0,
            nb: DEFAULT_NB,
            solver: Solver::Blocked,
            system: None,
            worst_residual: 0.0,
            solves: 0,
            failures: Vec::new(),
            max_iterations: 0,
            updates: Updates::Native,
            matrix: "hpl",
            methods: Vec::new(),
            max_gmres: 0,
        }
    }
}

fn to_f32(a: &Mat<f64>) -> Mat<f32> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] as f32)
}

/// Which LU factors the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solver {
    /// warpt's HPL-style blocked LU with look-ahead ([`crate::lu`]).
    Blocked,
    /// faer's recursive `partial_piv_lu`, for comparison.
    Faer,
}

impl Solver {
    /// The parameter value naming this solver.
    pub fn name(self) -> &'static str {
        match self {
            Solver::Blocked => "blocked",
            Solver::Faer => "faer",
        }
    }

    /// The solver a parameter value names.
    pub fn parse(s: &str) -> Option<Self> {
        [Solver::Blocked, Solver::Faer]
            .into_iter()
            .find(|v| v.name() == s)
    }
}

/// A factored matrix from either solver.
enum Factors<T: Real> {
    Blocked(Lu<T>),
    Faer(PartialPivLu<T>),
}

impl<T: Real> Factors<T> {
    fn solve(&self, b: &Col<T>) -> Col<T> {
        match self {
            Factors::Blocked(lu) => {
                let mut x = b.clone();
                lu.solve_in_place(x.as_mut());
                x
            }
            Factors::Faer(lu) => lu.solve(b),
        }
    }
}

/// One direct solve, its factors kept for refinement.
struct Direct<T: Real> {
    factors: Factors<T>,
    x: Col<T>,
    factor_s: f64,
    total_s: f64,
}

/// One timed solve of the benchmark, with its solution in fp64.
struct Solved {
    x: Col<f64>,
    iterations: usize,
    /// The refinement that finished, and its GMRES iterations (mixed only).
    method: Option<(Method, usize)>,
    converged: bool,
    /// Whether refinement stopped for want of progress (mixed only).
    stalled: bool,
    /// HPL's fp64 scaled residual of `x` when refinement already computed it.
    residual: Option<f64>,
    factor_s: f64,
    total_s: f64,
}

/// Factors `a` and solves for `b`, timing both. The blocked LU factors in
/// place, so the copy it works on is made before the clock starts (HPL
/// generates its matrix outside the timing too); faer's LU copies the matrix
/// itself, inside the call timed.
fn solve_direct<T: Real>(
    a: &Mat<T>,
    b: &Col<T>,
    solver: Solver,
    nb: usize,
    updates: Updates,
) -> Direct<T> {
    let copy = (solver == Solver::Blocked).then(|| a.clone());
    let t = Instant::now();
    let factors = match copy {
        Some(copy) => Factors::Blocked(Lu::factor_with(copy, nb, updates)),
        None => Factors::Faer(a.partial_piv_lu()),
    };
    let factor_s = t.elapsed().as_secs_f64();
    let x = factors.solve(b);
    Direct {
        factors,
        x,
        factor_s,
        total_s: t.elapsed().as_secs_f64(),
    }
}

impl<T: Real> Direct<T> {
    fn finish(self) -> Solved {
        Solved {
            x: Col::from_fn(self.x.nrows(), |i| self.x[i].to_f64()),
            iterations: 0,
            method: None,
            converged: true,
            stalled: false,
            residual: None,
            factor_s: self.factor_s,
            total_s: self.total_s,
        }
    }
}

/// What one timed solve leaves for validation: its scaled residual,
/// refinement steps, whether it converged, and its refinement method.
type SolveOutcome = (f64, usize, bool, bool, Option<(Method, usize)>);

/// Refinement of an fp32 (or bf16-updated) solution in fp64 until HPL's
/// fp64 residual test passes ([`refine`]: plain refinement, GMRES-IR where
/// that stops contracting), preconditioned by the low-precision factors.
/// The time continues from the direct solve's.
fn refine(a: &Mat<f64>, b: &Col<f64>, norm_a: f64, direct: Direct<f32>) -> Solved {
    let t = Instant::now();
    let n = b.nrows();
    let x = Col::<f64>::from_fn(n, |i| direct.x[i] as f64);
    let factors = &direct.factors;
    let precondition = |v: &Col<f64>| {
        let d = factors.solve(&Col::<f32>::from_fn(n, |i| v[i] as f32));
        Col::<f64>::from_fn(n, |i| d[i] as f64)
    };
    let limits = refine::Limits {
        max_steps: MAX_REFINEMENT,
        ..refine::Limits::default()
    };
    let r = refine::refine(a, b, norm_a, x, precondition, limits);
    Solved {
        x: r.x,
        iterations: r.steps,
        method: Some((r.method, r.gmres_iterations)),
        converged: r.residual.is_some(),
        stalled: r.stalled,
        residual: r.residual,
        factor_s: direct.factor_s,
        total_s: direct.total_s + t.elapsed().as_secs_f64(),
    }
}

/// GFLOP/s assumed for the stage limits: far below any CPU's LU (a 2-core
/// VM factors at 20-60 GFLOP/s), so a limit stops a stuck solve, not a big one.
const FLOOR_GFLOPS: f64 = 1.0;
/// Matrix entries generated per second, assumed for the setup limit.
const FLOOR_ENTRIES_PER_S: f64 = 10e6;

impl Linpack {
    /// One solve of order `n` at the floor rate.
    fn solve_floor(n: usize) -> std::time::Duration {
        at_floor_rate(hpl::flops(n) / 1e9, FLOOR_GFLOPS)
    }
}

impl Benchmark for Linpack {
    fn setup_limit(&self, ctx: &RunContext) -> Option<WorkLimit> {
        let n = matrix_order(ctx, BYTES_PER_ENTRY).ok()?;
        let entries = (n * n) as f64;
        Some(WorkLimit::setup(
            at_floor_rate(entries, FLOOR_ENTRIES_PER_S),
            format!(
                "generating the N = {n} system: {entries:.2e} entries at a floor of {:.0e}/s",
                FLOOR_ENTRIES_PER_S
            ),
        ))
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<WorkLimit> {
        // Whatever the duration, the warm-up and the measurement each take
        // at least one whole solve.
        let one = Self::solve_floor(self.n);
        let part = format!(
            "solves of N = {}: {:.1} GFLOP each, {:.0} s at a floor of {FLOOR_GFLOPS} GFLOP/s",
            self.n,
            hpl::flops(self.n) / 1e9,
            one.as_secs_f64()
        );
        vec![
            WorkLimit::warmup(ctx.burnin, one, part.clone()),
            WorkLimit::measure(ctx.duration, one, part),
        ]
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        self.n = matrix_order(ctx, BYTES_PER_ENTRY)?;
        let need = (self.n * self.n) as f64 * BYTES_PER_ENTRY;
        let available = warpt_system::memory_quick().available_bytes as f64;
        if need > 0.9 * available {
            return Err(BenchmarkError::Skipped(format!(
                "N = {} needs about {:.0} MiB but {:.0} MiB is available; lower n or mem_fraction",
                self.n,
                need / 1048576.0,
                available / 1048576.0
            )));
        }
        self.nb = ctx.int_param("nb", 1)? as usize;
        let solver = ctx.str_param("solver")?;
        self.solver = Solver::parse(solver).ok_or_else(|| BenchmarkError::InvalidParam {
            key: "solver".into(),
            reason: format!("'{solver}' is not one of blocked, faer"),
        })?;
        if self.precision == Precision::Mixed {
            self.updates = match ctx.str_param("factor_precision")? {
                "fp32" => Updates::Native,
                "bf16" if self.solver == Solver::Blocked => Updates::Bf16,
                "bf16" => {
                    return Err(BenchmarkError::InvalidParam {
                        key: "factor_precision".into(),
                        reason: "bf16 updates are warpt's blocked LU's: use solver=blocked".into(),
                    });
                }
                other => {
                    return Err(BenchmarkError::InvalidParam {
                        key: "factor_precision".into(),
                        reason: format!("'{other}' is not one of fp32, bf16"),
                    });
                }
            };
        }
        faer::set_global_parallelism(Par::rayon(0));
        let (mut a, b) = hpl::system(self.n, ctx.seed);
        if self.precision == Precision::Mixed {
            self.matrix = match ctx.str_param("matrix")? {
                "hpl" => "hpl",
                "hpl-mxp" => {
                    hpl::make_diagonally_dominant(&mut a);
                    "hpl-mxp"
                }
                other => {
                    return Err(BenchmarkError::InvalidParam {
                        key: "matrix".into(),
                        reason: format!("'{other}' is not one of hpl, hpl-mxp"),
                    });
                }
            };
        }
        self.system = Some((a, b));
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let (a, b) = self
            .system
            .take()
            .ok_or_else(BenchmarkError::not_prepared)?;
        let n = self.n;
        let flops = hpl::flops(n);
        let defs = [
            SeriesDef::rate("gflops", "GFLOP/s", flops / 1e9),
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
        let solver = self.solver;
        let nb = self.nb;
        let updates = self.updates;
        let norm_a = hpl::norm_inf(&a);
        let mut outcome: Vec<SolveOutcome> = Vec::new();
        let policy = MeasurePolicy::share_of(ctx, 1);
        let m = measure.run(&policy, precision.name(), &defs, |out| {
            let s = match (precision, &a32, &b32) {
                (Precision::F64, _, _) => {
                    solve_direct(&a, &b, solver, nb, Updates::Native).finish()
                }
                (Precision::F32, Some(a32), Some(b32)) => {
                    solve_direct(a32, b32, solver, nb, Updates::Native).finish()
                }
                (Precision::Mixed, Some(a32), Some(b32)) => {
                    refine(&a, &b, norm_a, solve_direct(a32, b32, solver, nb, updates))
                }
                _ => unreachable!("fp32 copies exist for fp32 and mixed"),
            };
            out[0] = s.total_s;
            out[1] = s.factor_s.max(1e-9);
            out[2] = (s.total_s - s.factor_s).max(1e-9);
            let eps = if precision == Precision::F32 {
                f32::EPSILON as f64
            } else {
                f64::EPSILON
            };
            // Refinement's last check is HPL's test of this very x.
            let residual = s
                .residual
                .unwrap_or_else(|| hpl::scaled_residual(&a, norm_a, &s.x, &b, eps));
            outcome.push((residual, s.iterations, s.converged, s.stalled, s.method));
        });
        let factors = match self.updates {
            Updates::Bf16 => "bf16",
            Updates::Native => "fp32",
        };
        for (res, it, ok, stalled, method) in &outcome {
            if let Some((m, gmres)) = method {
                self.methods.push(*m);
                self.max_gmres = self.max_gmres.max(*gmres);
            }
            self.solves += 1;
            self.worst_residual = self.worst_residual.max(*res);
            self.max_iterations = self.max_iterations.max(*it);
            if *stalled {
                self.failures.push(format!(
                    "refinement stalled after {it} steps at scaled residual {res:.3e}: GMRES-IR \
                     preconditioned by the {factors} LU did not halve it in {} steps, so {factors} \
                     factors cannot precondition matrix={}; use matrix=hpl-mxp (HPL-MxP's diagonally \
                     dominant matrix) or a higher factor_precision",
                    crate::refine::STALL_STEPS,
                    self.matrix
                ));
            } else if !ok {
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
                ParamValue::from(match self.solver {
                    Solver::Blocked => {
                        "warpt blocked right-looking LU, look-ahead 1, updates on warpt-gemm, TRSM on faer"
                    }
                    Solver::Faer => "faer partial_piv_lu",
                }),
            ),
            ("nb".to_string(), ParamValue::Int(self.nb as i64)),
        ];
        let (engine, kernel) = match (self.solver, precision) {
            (Solver::Faer, _) => ("faer", "faer matmul"),
            (Solver::Blocked, Precision::F64) => {
                ("warpt-gemm", update_kernel::<f64>(Updates::Native))
            }
            (Solver::Blocked, _) => ("warpt-gemm", update_kernel::<f32>(self.updates)),
        };
        details.push(("engine".to_string(), ParamValue::from(engine)));
        details.push((
            "isa".to_string(),
            ParamValue::from(warpt_gemm::Isa::best().name()),
        ));
        details.push(("gemm_kernel".to_string(), ParamValue::from(kernel)));
        if precision == Precision::Mixed {
            details.push((
                "factor_precision".to_string(),
                ParamValue::from(match self.updates {
                    Updates::Native => "fp32",
                    Updates::Bf16 => "bf16 (bf16 L and U blocks, fp32 accumulation)",
                }),
            ));
            details.push(("matrix".to_string(), ParamValue::from(self.matrix)));
            // The method of the last solve, and whether any needed GMRES.
            let gmres = self
                .methods
                .iter()
                .filter(|m| **m == Method::GmresIr)
                .count();
            details.push((
                "refinement_method".to_string(),
                ParamValue::from(if gmres > 0 {
                    Method::GmresIr.name()
                } else {
                    Method::Ir.name()
                }),
            ));
            details.push((
                "solves_needing_gmres".to_string(),
                ParamValue::Int(gmres as i64),
            ));
            details.push((
                "gmres_iterations_max".to_string(),
                ParamValue::Int(self.max_gmres as i64),
            ));
        }
        let mut warnings = Vec::new();
        let threads = warpt_system::allowed_cpus().len();
        let isa = warpt_system::isa::Isa::detect();
        // The clock for the peak: the harness read it before and after the
        // series (where cpufreq cannot say it, the fastest counts).
        let peak = warpt_system::clock::clock_from(measure.regime().clock_mhz())
            .map(|c| warpt_system::peak::theoretical_peak(isa, threads, c));
        if let Some(peak) = peak {
            let ceiling = if precision == Precision::F32 {
                peak.fp32_gflops
            } else {
                peak.fp64_gflops
            };
            let share = gflops / ceiling;
            if let Some(why) = peak.share_above_one("peak_share", share) {
                warnings.push(why);
            }
            details.push(("peak_share".to_string(), ParamValue::Float(share)));
            details.extend(peak.clock_details());
        }
        Ok(Measured {
            metrics,
            details,
            warnings,
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
