//! The linpack suite: what HPC engineers judge a machine by.
//!
//! - [`hpl`]: HPL's matrix generation, flop count and residual test;
//! - [`hpl_io`]: HPL's input file and the result lines it prints;
//! - [`lu`]: HPL's blocked, look-ahead LU: updates on warpt-gemm, triangular solves on faer;
//! - [`refine`]: fp64 refinement of a low-precision solution (IR, GMRES-IR);
//! - [`solve`]: `linpack_fp64_cpu`, `linpack_fp32_cpu`, `linpack_mxp_cpu`;
//! - [`external`]: `linpack_external`, HPL itself (xhpl or hpcc) run and parsed;
//! - [`gemm`]: `micro/gemm`, matrix products in every precision (it joins
//!   the micro suite through [`gemm::GEMM_BENCHMARKS`]).

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

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        if name == external::NAME {
            return Some(Box::new(external::External::new()));
        }
        ALL.iter()
            .find(|p| p.name() == name)
            .map(|p| Box::new(Linpack::new(*p)) as Box<dyn Benchmark>)
    }
}
