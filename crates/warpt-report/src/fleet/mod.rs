//! Many machines at once: which machine is best for what, and which node
//! is sick.
//!
//! - [`machines`]: per workload, every machine's figure with its CI, the
//!   best by throughput, per watt and per cost with the margin's
//!   significance, and scaling lines;
//! - [`render`]: that report as Markdown or HTML with charts;
//! - [`outliers`]: machines of one hardware class compared per metric by a
//!   robust z-score.

pub mod costs;
pub mod machines;
pub mod outliers;
pub mod render;

pub use machines::{MachineReport, analyse, recommend};
pub use outliers::{Outlier, OutlierOptions, OutlierScan, scan};
