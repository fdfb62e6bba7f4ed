//! The user's own benchmarks under warpt's harness (`warpt harness`).
//!
//! - [`discover`]: finding them in a tree — chapters of `baseline_*` /
//!   `optimized_*` pairs and standalone kernels with `run_benchmark()`;
//! - [`driver`]: the benchmark protocol's driver side, and the Python
//!   adapter it ships.

pub mod discover;
pub mod driver;
