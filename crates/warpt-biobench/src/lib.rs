//! The biobench suite: the workloads of a genomics pipeline, each on data
//! whose truth it knows.
//!
//! - [`scoring`]: substitution matrices and gap penalties;
//! - [`sw_scalar`], [`sw_striped`]: Smith-Waterman, the `i32` reference and
//!   the striped SIMD aligner.

pub mod scoring;
pub mod sw_scalar;
pub mod sw_striped;
