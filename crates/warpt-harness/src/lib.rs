//! The warpt measurement core.
//!
//! - [`Benchmark`] and [`Suite`]: the protocol every workload implements
//!   (prepare, measure under [`Measure`], validate);
//! - [`Measure`] and [`MeasurePolicy`]: warm-up, then samples until a minimum
//!   time and a precision target are met, or a cap is hit;
//! - [`stats`]: the statistics every metric carries;
//! - [`Registry`], [`component_defaults`] and [`Plan`]: from the user's
//!   selection to benchmarks with effective parameters;
//! - [`run_plan`]: executes a plan into a [`warpt_model::BenchmarkSuiteRun`];
//! - [`Progress`]: the events a run reports while it works.

mod benchmark;
mod components;
mod manifest;
mod measure;
mod plan;
mod progress;
mod registry;
mod runner;
pub mod stats;

pub use benchmark::{Benchmark, BenchmarkError, Measured, RunContext, Suite};
pub use components::component_defaults;
pub use manifest::{build_manifest, random_suffix};
pub use measure::{Convert, MAX_TIME_FACTOR, Measure, MeasurePolicy, Measurement, SeriesDef};
pub use plan::{Plan, PlanError, PlannedBenchmark, Selection, Unavailable};
pub use progress::{NoProgress, Progress, ProgressEvent};
pub use registry::Registry;
pub use runner::{FALLBACK_DURATION, RunOptions, run_one, run_plan};
