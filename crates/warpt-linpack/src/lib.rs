//! The linpack suite: what HPC engineers judge a machine by.
//!
//! - [`hpl`]: HPL's matrix generation, flop count and residual test;
//! - [`hpl_io`]: HPL's input file and the result lines it prints;
//! - [`lu`]: HPL's blocked, look-ahead LU: updates on warpt-gemm, triangular solves on faer;
//! - [`refine`]: fp64 refinement of a low-precision solution (IR, GMRES-IR);
//! - [`solve`]: `linpack_fp64_cpu`, `linpack_fp32_cpu`, `linpack_mxp_cpu`;
//! - [`external`]: `linpack_external`, HPL itself (xhpl or hpcc) run and parsed;
//! - [`gemm`]: `micro/gemm`, matrix products in every precision (it joins
//!   the micro suite through [`gemm::GemmBenchmarks`]).

pub mod external;
pub mod gemm;
pub mod hpl;
pub mod hpl_io;
pub mod lu;
pub mod refine;
pub mod solve;

use warpt_harness::{Benchmark, Suite};
use warpt_model::BenchmarkSpec;

use solve::{Linpack, Precision};

/// The suite's name.
pub const SUITE: &str = "linpack";

const ALL: [Precision; 3] = [Precision::F64, Precision::F32, Precision::Mixed];

/// The linpack suite, for the registry.
pub struct LinpackSuite;

impl Suite for LinpackSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "HPL-style dense LU solves: fp64, fp32, mixed precision with refinement, and HPL itself"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        let mut specs: Vec<BenchmarkSpec> = ALL.iter().map(|p| solve::spec(*p)).collect();
        specs.push(external::spec());
        specs
    }

    fn check_params(&self, name: &str, params: &warpt_model::Params) -> Result<(), String> {
        if name == external::NAME
            && let Some(binary) = params.get("binary").and_then(|v| v.as_str())
            && !binary.is_empty()
        {
            external::find_binary(binary).map_err(|e| e.to_string())?;
        }
        if name == external::NAME
            && let Some(runs) = params.get("runs").and_then(|v| v.as_i64())
            && !(1..hpl_io::MAX_SIZES as i64).contains(&runs)
        {
            return Err(format!(
                "parameter 'runs': {runs} is outside 1..={}: HPL reads at most {} sizes and one is the warm-up",
                hpl_io::MAX_SIZES - 1,
                hpl_io::MAX_SIZES
            ));
        }
        if let Some(v) = params.get("solver")
            && v.as_str().and_then(solve::Solver::parse).is_none()
        {
            return Err(format!(
                "parameter 'solver': '{v}' is not one of blocked, faer"
            ));
        }
        if params.get("factor_precision").and_then(|v| v.as_str()) == Some("bf16")
            && params.get("solver").and_then(|v| v.as_str()) == Some("faer")
        {
            return Err(
                "parameter 'factor_precision': bf16 updates are warpt's blocked LU's; solver=faer has none"
                    .to_string(),
            );
        }
        let fraction = params
            .get("mem_fraction")
            .and_then(warpt_model::ParamValue::as_f64)
            .unwrap_or(0.0);
        if !(0.0..=0.9).contains(&fraction) {
            let available = warpt_system::memory_quick().available_bytes >> 20;
            return Err(format!(
                "parameter 'mem_fraction': {fraction} is outside [0, 0.9]; warpt refuses more than 90% of the \
                 {available} MiB available"
            ));
        }
        Ok(())
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        if name == external::NAME {
            return Some(Box::new(external::External::new()));
        }
        ALL.iter()
            .find(|p| p.name() == name)
            .map(|p| Box::new(Linpack::new(*p)) as Box<dyn Benchmark>)
    }
}
