//! warpt's statistics, written once for every crate: where values sit,
//! how far they spread, the tests a comparison rests on, bootstrap
//! intervals and the correction for many tests at once. Pure numbers over
//! `&[f64]`: no warpt type, so the data contract and every layer above can
//! use it.

/// Percentile-bootstrap intervals of ratios.
mod bootstrap;
/// Median, mean, percentiles, Hodges-Lehmann estimates, a duet's couples.
mod location;
/// The median's order-statistic confidence interval.
mod median_ci;
/// Many tests at once: Benjamini-Hochberg.
mod multiple;
/// The standard normal tail.
mod normal;
/// Rank tests: Mann-Whitney U and Wilcoxon signed-rank.
mod rank;
/// Spreads: CVs and the upper factor of an estimated spread.
mod spread;
/// Welch's and the paired t test.
mod t_test;

pub use bootstrap::{
    Bootstrap, bootstrap_paired, bootstrap_paired_ci, bootstrap_ratio, bootstrap_ratio_by,
    bootstrap_ratio_ci,
};
pub use location::{
    couples, hodges_lehmann_center, hodges_lehmann_shift, mean, mean_var, median, percentile_sorted,
};
pub use median_ci::{median_ci, median_ci_rank};
pub use multiple::benjamini_hochberg;
pub use normal::normal_sf;
pub use rank::{mann_whitney, mann_whitney_floor, signed_rank};
pub use spread::{cv, robust_cv, spread_upper_factor};
pub use t_test::{paired_t, t_two_sided, welch_t};
