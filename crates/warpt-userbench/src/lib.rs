//! The user's own benchmarks under warpt's harness (`warpt harness`).
//!
//! - [`discover`]: finding them in a tree — chapters of `baseline_*` /
//!   `optimized_*` pairs and standalone kernels with `run_benchmark()`;
//! - [`config`]: `bench.yaml` / `bench.toml` beside a benchmark, and the
//!   matrix of combinations it expands into;
//! - [`driver`]: the benchmark protocol's driver side, and the Python
//!   adapter it ships;
//! - [`external`]: one benchmark file as a warpt `Benchmark` on the driver;
//! - [`interpreter`]: the Python a run's trials start, a launcher resolved once;
//! - [`batch`]: how many calls one request holds (calibration, warm-up);
//! - [`shared`]: samples an adapter shares through a mapped file while it
//!   measures, so it replies once rather than per few samples;
//! - [`counted`]: `--measure instructions`, one call's instructions counted;
//! - [`suite`]: the `harness` suite, through which the worker process
//!   creates those benchmarks;
//! - [`pytest`]: the `pytest` suite, a pytest session's tests measured
//!   through the plugin's socket;
//! - [`sampling`]: the rounds, time and warm-up a benchmark's config asks for;
//! - [`run`]: a whole tree, pairs interleaved, into one suite run;
//! - [`accuracy`]: an optimized variant's output against its baseline's;
//! - [`profile`]: `--profile`, one extra run under a profiler;
//! - [`summary`]: `summary.json` and `summary.md` from that suite run;
//! - [`regressions`]: `regressions.md` against an earlier summary.
//! - [`session`]: around a run: `--targets`, `env.json`, `--compare-to`, the report layout.

pub mod accuracy;
pub mod batch;
pub mod config;
pub mod counted;
pub mod discover;
pub mod driver;
pub mod external;
pub mod interpreter;
pub mod profile;
pub mod pytest;
pub mod regressions;
pub mod run;
pub mod sampling;
pub mod session;
pub mod shared;
pub mod suite;
pub mod summary;
