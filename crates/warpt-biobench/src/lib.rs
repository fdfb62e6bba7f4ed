//! The biobench suite: the workloads of a genomics pipeline, each on data
//! whose truth it knows.
//!
//! - [`sw_align`]: Smith-Waterman database search, in GCUPS;
//! - [`scoring`]: substitution matrices and gap penalties;
//! - [`sw_scalar`], [`sw_striped`]: Smith-Waterman, the `i32` reference and
//!   the striped SIMD aligner;
//! - [`seqgen`]: seeded proteins and DNA, with planted homologs;
//! - [`fasta`]: the user's own sequences, checked line by line;
//! - [`params`]: parameter tables and their checks.

pub mod fasta;
pub mod params;
pub mod scoring;
pub mod seqgen;
pub mod sw_align;
pub mod sw_scalar;
pub mod sw_striped;

use warpt_harness::{Benchmark, Suite};
use warpt_model::{BenchmarkSpec, Params};

/// The suite's name.
pub const SUITE: &str = "biobench";

/// The biobench suite, for the registry.
pub struct BiobenchSuite;

impl Suite for BiobenchSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "Genomics workloads on seeded data with planted truth: Smith-Waterman alignment (GCUPS)"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        vec![sw_align::spec()]
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        match name {
            sw_align::NAME => Some(Box::new(sw_align::SwAlign::new())),
            _ => None,
        }
    }

    fn check_params(&self, name: &str, params: &Params) -> Result<(), String> {
        match name {
            sw_align::NAME => sw_align::check_params(params),
            _ => Ok(()),
        }
    }
}
