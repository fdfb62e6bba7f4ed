//! The line charts' browser code, shared by the HTML report (inlined, so a
//! report works offline) and `warpt serve`'s dashboard (served).

/// uPlot 1.6.32 from the npm registry, as published (MIT).
pub const UPLOT_JS: &str = include_str!("../assets/vendor/uPlot.iife.min.js");
/// uPlot's stylesheet.
pub const UPLOT_CSS: &str = include_str!("../assets/vendor/uPlot.min.css");
/// uPlot's licence, shipped beside it.
pub const UPLOT_LICENSE: &str = include_str!("../assets/vendor/uPlot.LICENSE");
/// `warpt.lines` and `warpt.num`: the line charts drawn with uPlot (hover
/// values and titles, drag zoom, legend toggles, marks, log axis).
pub const LINES_JS: &str = include_str!("../assets/lines.js");
