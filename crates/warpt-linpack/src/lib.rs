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

use warpt_harness::{Listed, ListedSuite};

use solve::Linpack;
use solve::Precision::{F32, F64, Mixed};

/// The suite's name.
pub const SUITE: &str = "linpack";

/// The linpack suite, for the registry.
pub const LINPACK: ListedSuite = ListedSuite {
    name: SUITE,
    description: "HPL-style dense LU solves: fp64, fp32, mixed precision with refinement, and HPL itself",
    benchmarks: &[
        Listed::new(|| solve::spec(F64), || Box::new(Linpack::new(F64))),
        Listed::new(|| solve::spec(F32), || Box::new(Linpack::new(F32))),
        Listed::new(|| solve::spec(Mixed), || Box::new(Linpack::new(Mixed))),
        Listed::new(external::spec, || Box::new(external::External::new())),
    ],
};
