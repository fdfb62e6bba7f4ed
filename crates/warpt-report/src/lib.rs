//! Comparisons and reports of warpt runs.
//!
//! - [`stats`]: Mann-Whitney U, bootstrap CI of a ratio of medians, Benjamini-Hochberg;
//! - [`compare`]: two runs' metrics matched and judged (`improved`, `regressed`, `~`);
//! - [`escape`]: escaping for CSV, Markdown and XML/HTML;
//! - [`render`]: a comparison as terminal text, Markdown or JSON;
//! - [`report`]: Markdown, self-contained HTML with SVG charts, and JSON reports of runs;
//! - [`exports`]: a run as Bencher Metric Format, github-action-benchmark, JUnit XML, CSV.

pub mod compare;
pub mod escape;
pub mod exports;
pub mod render;
pub mod report;
pub mod stats;

pub use compare::{Comparison, Options, Verdict, compare};
