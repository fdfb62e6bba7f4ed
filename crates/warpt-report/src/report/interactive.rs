//! The report's line charts made explorable. Each is drawn twice: an SVG by
//! plotters (what prints, and what shows without JavaScript) and, in a
//! browser, a uPlot chart over the same data through `lines.js` — hover
//! values, drag zoom, legend toggles, a log axis — that takes its place.
//! uPlot and `lines.js` are inlined in the page, so a report keeps working
//! offline.

use serde::Serialize;

use super::chart_data::{Curve, Line};
use crate::assets::{LINES_JS, UPLOT_CSS, UPLOT_JS};
use warpt_model::escape::xml;

/// One chart's data and options, as `warpt.lines(fig, series, opts)` takes them.
#[derive(Debug, Serialize)]
pub(crate) struct Spec {
    series: Vec<Series>,
    opts: Opts,
}

#[derive(Debug, Serialize)]
struct Series {
    name: String,
    points: Vec<Point>,
    marks: Vec<Mark>,
}

#[derive(Debug, Serialize)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Debug, Serialize)]
struct Mark {
    x: f64,
    label: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Opts {
    unit: String,
    x_label: String,
    x_log: bool,
    log_toggle: bool,
    marks: Vec<Mark>,
}

fn series(name: &str, points: impl Iterator<Item = (f64, f64)>, marks: Vec<Mark>) -> Series {
    Series {
        name: name.to_string(),
        points: points.map(|(x, y)| Point { x, y }).collect(),
        marks,
    }
}

/// Lines of y against x (`x_log`: cache or problem sizes over decades).
pub(crate) fn lines(x_desc: &str, y_desc: &str, lines: &[Line], x_log: bool) -> Spec {
    Spec {
        series: lines
            .iter()
            .map(|l| series(&l.name, l.points.iter().copied(), Vec::new()))
            .collect(),
        opts: Opts {
            unit: y_desc.to_string(),
            x_label: x_desc.to_string(),
            x_log,
            log_toggle: false,
            marks: Vec::new(),
        },
    }
}

/// A history over run numbers, the change points (labelled with their
/// line's name) as the chart's marks.
pub(crate) fn trend(unit: &str, lines: &[Line], steps: &[(f64, String)]) -> Spec {
    let mut spec = self::lines("run", unit, lines, false);
    spec.opts.marks = steps
        .iter()
        .map(|(x, label)| Mark {
            x: *x,
            label: label.clone(),
        })
        .collect();
    spec
}

/// Latency against throughput: p50 and p99 lines, the SLO as a flat line,
/// the knee as a mark; the y axis can be switched to log (p99 often sits
/// far above p50).
pub(crate) fn curve(
    x_desc: &str,
    y_desc: &str,
    curve: &Curve,
    bound: Option<f64>,
    knee: Option<&(f64, String)>,
) -> Spec {
    let marks = knee
        .map(|(x, label)| Mark {
            x: *x,
            label: label.clone(),
        })
        .into_iter()
        .collect();
    let mut all = vec![
        series("p50", curve.points.iter().map(|p| (p.0, p.1)), marks),
        series("p99", curve.points.iter().map(|p| (p.0, p.2)), Vec::new()),
    ];
    let (first, last) = (curve.points.first(), curve.points.last());
    if let (Some(b), Some(a), Some(z)) = (bound, first, last) {
        let name = format!("SLO {}", crate::render::num(b));
        all.push(series(&name, [(a.0, b), (z.0, b)].into_iter(), Vec::new()));
    }
    Spec {
        series: all,
        opts: Opts {
            unit: y_desc.to_string(),
            x_label: x_desc.to_string(),
            x_log: false,
            log_toggle: true,
            marks: Vec::new(),
        },
    }
}

/// The chart as the page holds it: the SVG inside a block carrying the
/// data the script redraws it from (the page puts it in its figure).
pub(crate) fn figure(svg: String, spec: &Spec) -> String {
    if svg.is_empty() {
        return svg;
    }
    match serde_json::to_string(spec) {
        Ok(json) => format!(
            "<div class=\"chart\" data-chart=\"{}\">{svg}</div>",
            xml(&json)
        ),
        Err(_) => svg,
    }
}

/// Draws every figure's data with `warpt.lines` and hides its SVG (which
/// comes back for printing).
const INIT: &str = "document.querySelectorAll('[data-chart]').forEach(f => {\
  const spec = JSON.parse(f.dataset.chart);\
  f.classList.add('live');\
  warpt.lines(f, spec.series, spec.opts);\
});";

/// Where the page has line charts: uPlot, `lines.js` and the script that
/// draws them, to go before `</body>`; else nothing.
pub(crate) fn scripts(page: &str) -> String {
    if !page.contains("data-chart=") {
        return String::new();
    }
    format!(
        "<style>{UPLOT_CSS}\ndiv.live>svg{{display:none}}.marks,.log-toggle{{color:#666;font-size:90%}}\
         @media print{{div.live>svg{{display:block}}div.live .uplot,div.live .log-toggle{{display:none}}}}</style>\n\
         <script>{UPLOT_JS}</script>\n<script>{LINES_JS}</script>\n<script>{INIT}</script>\n"
    )
}
