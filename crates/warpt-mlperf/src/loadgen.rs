//! The scenario engine: LoadGen's scenarios, validity rules and logs in
//! Rust, with the system under test behind a trait.
//!
//! - [`settings`]: scenarios, rules, modes and the effective settings;
//! - [`sut`]: the [`SystemUnderTest`] trait and the handle it answers through;
//! - [`schedule`]: the Server arrival schedule, bit for bit as LoadGen draws it;
//! - [`engine`]: issuing queries as each scenario does, collecting timestamps;
//! - [`early_stopping`]: LoadGen's early-stopping percentile estimates;
//! - [`summary`]: percentiles, metrics and the VALID / INVALID decision;
//! - [`peak`]: FindPeakPerformance for Server;
//! - [`logs`]: `mlperf_log_summary.txt`, `mlperf_log_detail.txt`, `mlperf_log_accuracy.json`;
//! - [`parse`]: reading those logs back, from warpt or the official LoadGen.

pub mod early_stopping;
pub mod engine;
pub mod logs;
pub mod parse;
pub mod peak;
pub mod schedule;
pub mod settings;
pub mod summary;
pub mod sut;

pub use settings::{Mode, Rules, Scenario, TestSettings, TokenBounds};
pub use summary::Summary;
pub use sut::{QuerySample, Responder, Response, SystemUnderTest};

/// Runs one test and summarizes it.
pub fn run_test(sut: &dyn SystemUnderTest, settings: &TestSettings) -> Result<Summary, String> {
    let result = engine::run(sut, settings)?;
    Ok(summary::summarize(&sut.name(), settings, result))
}
