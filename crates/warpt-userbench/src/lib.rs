//! The user's own benchmarks under warpt's harness (`warpt harness`).
//!
//! - [`discover`]: finding them in a tree — chapters of `baseline_*` /
//!   `optimized_*` pairs and standalone kernels with `run_benchmark()`;
//! - [`driver`]: the benchmark protocol's driver side, and the Python
//!   adapter it ships;
//! - [`external`]: one benchmark file as a warpt `Benchmark` on the driver.

pub mod discover;
pub mod driver;
pub mod external;
