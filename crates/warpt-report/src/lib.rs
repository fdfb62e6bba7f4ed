//! Comparisons and reports of warpt runs.
//!
//! - [`compare`]: two runs' metrics matched and judged (`improved`, `regressed`, `~`,
//!   `inconclusive`) against the machine's noise band;
//! - [`assets`]: the line charts' browser code (uPlot and `lines.js`), for the
//!   HTML report and the dashboard;
//! - [`render`]: a comparison as terminal text, Markdown or JSON;
//! - [`report`]: Markdown, self-contained HTML with SVG charts, and JSON reports of runs;
//! - [`trend`]: change points in a metric's history (PELT);
//! - [`score`]: one number per component and suite against a reference run;
//! - [`matrix`]: machine × workload figures normalised to the best, and the pick per workload;
//! - [`fleet`]: many machines: the best machine per workload (throughput, per
//!   watt, per cost) with the margin's significance, and sick nodes.
//!
//! Writing any of these to a file, in any format, is warpt-export's job.

pub mod assets;
pub mod compare;
pub mod fleet;
/// A metric's history as `results trend` and `ci record` present it.
pub mod history;
pub mod matrix;
pub mod render;
pub mod report;
pub mod score;
/// Text for the terminal: results, lists, noise and stress tables.
pub mod terminal;
pub mod trend;

pub use compare::noise::{AssumedNoise, NoNoise};
pub use compare::{
    Comparison, MetricRef, Noise, NoiseLookup, NoiseSource, Options, Verdict, compare,
};
