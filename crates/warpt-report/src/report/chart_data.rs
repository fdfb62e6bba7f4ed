//! What a chart shows, as data: bars, lines and latency curves, drawn as
//! SVG by [`super::charts`] and handed to the browser by
//! [`super::interactive`].

/// One bar: a label, a value and its 95% CI.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Category (tags) on the x axis.
    pub category: String,
    /// Which run (one colour per run).
    pub series: usize,
    /// Median.
    pub value: f64,
    /// CI of the median.
    pub ci: Option<(f64, f64)>,
}

/// One line of a line chart: a name and (x, y) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend label.
    pub name: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A latency curve: (x, p50, p99) points, in x order.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Legend label.
    pub name: String,
    /// Points: throughput, median, 99th percentile.
    pub points: Vec<(f64, f64, f64)>,
}
