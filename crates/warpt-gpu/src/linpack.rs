//! `linpack/linpack_fp64_gpu`: HPL's fp64 solve on an NVIDIA GPU through
//! cuSOLVER (see `cuda::linpack`), in builds with the `cuda` feature; in
//! any other build, or where there is no NVIDIA driver, it is `skipped`
//! with the reason.

use warpt_harness::{
    Benchmark, BenchmarkError, Listed, ListedSuite, Measure, MeasureResult, RunContext,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, Validation};

/// The suite it belongs to.
pub const SUITE: &str = "linpack";

/// Benchmark name within the linpack suite.
pub const NAME: &str = "linpack_fp64_gpu";

/// The spec of `linpack_fp64_gpu`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(SUITE, NAME)
        .component(BenchmarkComponent::Gpu)
        .description(
            "HPL-style fp64 dense solve on an NVIDIA GPU: cuSOLVER getrf (LU with partial \
             pivoting) and getrs of HPL's random N x N system from the seed, timed from the factor's \
             start to the solve's completion (the upload untimed). GFLOP/s = (2/3 N^3 + 3/2 N^2) / \
             time. Validation: HPL's scaled residual < 16, on the host. Needs a build with \
             `--features cuda` and an NVIDIA driver with cuBLAS and cuSOLVER; skipped otherwise.",
        )
        .duration(10.0)
        .param(Param::int("n", 0, 0..).help(
            "matrix order N; 0 = the N whose matrix fills 40% of the GPU's free memory (1000 to 40000)",
        ))
        .param(Param::int("device_index", 0, 0..).help("the CUDA device ordinal"))
        .param(Param::flag("inject_error", false).help(
            "perturb the solution before the residual test (tests that validation catches it)",
        ))
        .metric("gflops")
        .metric("time_s")
        .build()
}

/// The running benchmark.
#[derive(Default)]
pub struct GpuLinpack {
    #[cfg(feature = "cuda")]
    state: Option<(crate::cuda::Cuda, crate::cuda::linpack::System)>,
    #[cfg(feature = "cuda")]
    n: usize,
    #[cfg(feature = "cuda")]
    inject_error: bool,
    validation: Option<Validation>,
}

impl Benchmark for GpuLinpack {
    #[cfg(not(feature = "cuda"))]
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let _ = ctx;
        Err(BenchmarkError::Skipped(
            "this build has no CUDA path: build warpt with `--features cuda`".into(),
        ))
    }

    #[cfg(feature = "cuda")]
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        use crate::cuda::{Cuda, Needs, linpack::System};
        let cuda = Cuda::open(ctx.int_param("device_index", 0)? as usize, Needs::Solver)?;
        let asked = ctx.int_param("n", 0)? as usize;
        self.n = if asked > 0 {
            asked
        } else {
            ((0.4 * cuda.free_at_open as f64 / 8.0).sqrt() as usize).clamp(1000, 40_000)
        };
        self.inject_error = ctx.bool_param("inject_error")?;
        let system = System::new(&cuda, self.n, ctx.seed)?;
        self.state = Some((cuda, system));
        Ok(())
    }

    #[cfg(not(feature = "cuda"))]
    fn measure(&mut self, _: &RunContext, _: &mut Measure<'_>) -> MeasureResult {
        Err(BenchmarkError::not_prepared())
    }

    #[cfg(feature = "cuda")]
    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        use warpt_harness::{Convert, MeasurePolicy, SeriesDef};
        let (cuda, system) = warpt_harness::prepared_mut(&mut self.state)?;
        let flops = warpt_linpack::hpl::flops(self.n);
        let defs = [
            SeriesDef::rate("gflops", "GFLOP/s", flops / 1e9),
            SeriesDef::new("time_s", "s", false, &[], Convert::Time(1.0)),
        ];
        let mut error = None;
        let m = measure.run(
            &MeasurePolicy::share_of(ctx, 1),
            "cusolver lu",
            &defs,
            |out| match system.solve(cuda) {
                Ok(t) => {
                    out[0] = t;
                    out[1] = t;
                }
                Err(e) => {
                    error.get_or_insert(e);
                    out[0] = 1.0;
                    out[1] = 1.0;
                }
            },
        );
        if let Some(e) = error {
            return Err(e);
        }
        cuda.sample_memory();
        let residual = system.residual(cuda, self.inject_error)?;
        self.validation = Some(if residual < warpt_linpack::hpl::RESIDUAL_THRESHOLD {
            Validation::pass(format!("HPL's scaled residual {residual:.3e} < 16"))
        } else {
            Validation::fail(format!("HPL's scaled residual {residual:.3e} >= 16"))
        });
        let mut details = cuda.details();
        details.push(("n".into(), warpt_model::ParamValue::Int(self.n as i64)));
        details.push((
            "scaled_residual".into(),
            warpt_model::ParamValue::Float(residual),
        ));
        Ok(warpt_harness::Measured::new(m.metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        self.validation
            .take()
            .unwrap_or_else(|| Validation::fail("nothing was measured, so nothing was checked"))
    }
}

/// The GPU part of the linpack suite.
pub const GPU_LINPACK: ListedSuite = ListedSuite {
    name: SUITE,
    description: "HPL on an NVIDIA GPU through cuSOLVER",
    benchmarks: &[Listed::new(spec, || Box::new(GpuLinpack::default()))],
};
