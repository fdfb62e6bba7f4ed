//! The user's own benchmarks under warpt's harness (`warpt harness`).
//!
//! - [`discover`]: finding them in a tree — chapters of `baseline_*` /
//!   `optimized_*` pairs and standalone kernels with `run_benchmark()`.

pub mod discover;
