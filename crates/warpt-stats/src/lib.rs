//! warpt's statistics, written once for every crate: where values sit,
//! how far they spread, the tests a comparison rests on, bootstrap
//! intervals and the correction for many tests at once. Pure numbers over
//! `&[f64]`: no warpt type, so the data contract and every layer above can
//! use it.

mod bootstrap;
mod location;
mod median_ci;
mod multiple;
mod normal;
mod rank;
mod spread;
mod t_test;

/// Percentile-bootstrap intervals of ratios.
pub use bootstrap::{
    Bootstrap, bootstrap_paired, bootstrap_paired_ci, bootstrap_ratio, bootstrap_ratio_by,
    bootstrap_ratio_ci,
};
/// Location: median, mean, percentiles, Hodges-Lehmann, a duet's couples.
pub use location::{
    couples, hodges_lehmann_center, hodges_lehmann_shift, mean, mean_var, median, percentile_sorted,
};
/// The median's order-statistic confidence interval.
pub use median_ci::{median_ci, median_ci_rank};
/// Benjamini-Hochberg.
pub use multiple::benjamini_hochberg;
/// The standard normal tail.
pub use normal::normal_sf;
/// Mann-Whitney U and the Wilcoxon signed-rank test.
pub use rank::{mann_whitney, mann_whitney_floor, signed_rank};
/// Spread: CVs and the upper factor of an estimated spread.
pub use spread::{cv, robust_cv, spread_upper_factor};
/// Welch's and the paired t test.
pub use t_test::{paired_t, t_two_sided, welch_t};
