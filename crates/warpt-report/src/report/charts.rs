//! The report's charts, each an inline SVG string drawn with plotters (line
//! charts inside a figure that also carries their data for the browser:
//! see [`super::interactive`]).

use plotters::prelude::*;

use super::chart_data::{Bar, Curve, Line};
use super::interactive;
use super::labels::{category_labels, short_labels};

const W: u32 = 760;
const H: u32 = 320;

/// The palette runs are drawn in.
pub fn colour(i: usize) -> RGBColor {
    const P: [RGBColor; 6] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    P[i % P.len()]
}

fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 1e-3).max(1e-12);
    (
        if from_zero && lo >= 0.0 {
            0.0
        } else {
            lo - pad
        },
        hi + pad,
    )
}

/// `svg` with `extra` elements drawn last (before its closing tag).
fn with_extra(mut svg: String, extra: &str) -> String {
    if let Some(end) = svg.rfind("</svg>") {
        svg.insert_str(end, extra);
    }
    svg
}

/// Bars per category and run with CI whiskers.
pub fn bars(title: &str, unit: &str, categories: &[String], runs: usize, bars: &[Bar]) -> String {
    let mut svg = String::new();
    let extra;
    let labels = short_labels(categories, f64::from(W - 90));
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (_, hi) = range(
            bars.iter()
                .flat_map(|b| [b.value, b.ci.map_or(b.value, |c| c.1)]),
            true,
        );
        let slots = (categories.len() * runs.max(1)) as f64;
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(labels.area())
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..slots, 0.0..hi);
        let Ok(mut chart) = chart else {
            return String::new();
        };
        let per = runs.max(1);
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .x_desc(labels.axis.clone())
            .y_desc(unit)
            .draw();
        extra = category_labels(&chart, &labels, categories, per, 0.0);
        for b in bars {
            let Some(ci) = categories.iter().position(|c| *c == b.category) else {
                continue;
            };
            let x0 = (ci * per + b.series) as f64 + 0.1;
            let c = colour(b.series);
            let _ = chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, 0.0), (x0 + 0.8, b.value)],
                c.filled(),
            )));
            if let Some((lo, hi)) = b.ci {
                let _ = chart.draw_series(std::iter::once(ErrorBar::new_vertical(
                    x0 + 0.4,
                    lo,
                    b.value,
                    hi,
                    BLACK.stroke_width(1),
                    8,
                )));
            }
        }
        let _ = root.present();
    }
    with_extra(svg, &extra)
}

/// Box plots (quartiles, 1.5 IQR whiskers) of each run's samples per
/// category, in the slots [`bars`] uses.
pub fn boxes(
    title: &str,
    unit: &str,
    categories: &[String],
    runs: usize,
    groups: &[(String, usize, Vec<f64>)],
) -> String {
    let mut svg = String::new();
    let extra;
    let labels = short_labels(categories, f64::from(W - 90));
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (lo, hi) = range(groups.iter().flat_map(|g| g.2.iter().copied()), false);
        let per = runs.max(1);
        let slots = (categories.len() * per) as f64;
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(labels.area())
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..slots, lo as f32..hi as f32)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .x_desc(labels.axis.clone())
            .y_desc(unit)
            .draw();
        extra = category_labels(&chart, &labels, categories, per, lo as f32);
        for (cat, series, samples) in groups {
            if samples.is_empty() {
                continue;
            }
            let Some(ci) = categories.iter().position(|c| c == cat) else {
                continue;
            };
            let x = (ci * per + series) as f64 + 0.5;
            let q = Quartiles::new(samples);
            let _ = chart.draw_series(std::iter::once(
                Boxplot::new_vertical(x, &q)
                    .width(20)
                    .style(colour(*series).stroke_width(2)),
            ));
        }
        let _ = root.present();
    }
    with_extra(svg, &extra)
}

/// Lines of y against x, one per series, with a legend.
/// An x spanning two decades or more (cache sizes, problem sizes) is
/// drawn on a log axis.
pub fn lines(title: &str, x_desc: &str, y_desc: &str, lines: &[Line]) -> String {
    let xs = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (lo, hi) = xs().fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    let log = lo > 0.0 && hi / lo >= 100.0;
    if log {
        let logged: Vec<Line> = lines
            .iter()
            .map(|l| Line {
                name: l.name.clone(),
                points: l.points.iter().map(|&(x, y)| (x.log10(), y)).collect(),
            })
            .collect();
        let svg = draw_lines(
            title,
            &format!("{x_desc} (log scale)"),
            y_desc,
            &logged,
            XAxis::Log,
            &[],
        );
        return interactive::figure(svg, &interactive::lines(x_desc, y_desc, lines, true));
    }
    let svg = draw_lines(title, x_desc, y_desc, lines, XAxis::Linear, &[]);
    interactive::figure(svg, &interactive::lines(x_desc, y_desc, lines, false))
}

/// How a line chart's x axis is scaled and labelled.
#[derive(Clone, Copy, PartialEq)]
enum XAxis {
    /// x as given.
    Linear,
    /// x holds log10 of the value; labels show the value.
    Log,
    /// x is a run number from 1: whole-number labels, half a run of margin.
    Runs,
}

/// Lines with a legend, and `marks` (x, label) drawn as labelled dashed
/// vertical lines.
fn draw_lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    axis: XAxis,
    marks: &[(f64, String)],
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (x0, x1) = if axis == XAxis::Runs {
            let n = lines.iter().map(|l| l.points.len()).max().unwrap_or(1) as f64;
            (0.5, n + 0.5)
        } else {
            range(
                lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
                false,
            )
        };
        let (y0, y1) = range(
            lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
            false,
        );
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|x| match axis {
                XAxis::Log => crate::render::num(10f64.powf(*x)),
                XAxis::Linear => crate::render::num(*x),
                XAxis::Runs => format!("{x:.0}"),
            })
            .draw();
        for (i, l) in lines.iter().enumerate() {
            let c = colour(i);
            if let Ok(s) =
                chart.draw_series(LineSeries::new(l.points.iter().copied(), c.stroke_width(2)))
            {
                s.label(l.name.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
            }
            let _ = chart.draw_series(l.points.iter().map(|p| Circle::new(*p, 3, c.filled())));
        }
        for (i, (x, label)) in marks.iter().enumerate() {
            let _ = chart.draw_series(DashedLineSeries::new(
                [(*x, y0), (*x, y1)],
                6,
                4,
                RED.stroke_width(2),
            ));
            // Labels inside the plot (elements on its edge are clipped),
            // stacked when several are drawn.
            let label_y = y1 - (y1 - y0) * (0.05 + 0.07 * (i % 4) as f64);
            let _ = chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                (*x, label_y),
                ("sans-serif", 13).into_font().color(&RED),
            )));
        }
        let _ = chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw();
        let _ = root.present();
    }
    svg
}

/// A metric's history across runs (x = run number from 1), one line per
/// series, with each change point drawn as a dashed vertical line before
/// the first run after it and labelled with its change.
pub fn trend(title: &str, unit: &str, lines: &[Line], steps: &[(f64, String)]) -> String {
    let svg = draw_lines(title, "run", unit, lines, XAxis::Runs, steps);
    interactive::figure(svg, &interactive::trend(unit, lines, steps))
}

/// Latency against throughput: the p50 line with a whisker up to each
/// point's p99, the SLO `bound` as a dashed horizontal line, and the `knee`
/// (x, label) as a dashed vertical one.
pub fn latency_curve(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    curve: &Curve,
    bound: Option<f64>,
    knee: Option<(f64, String)>,
) -> String {
    let spec = interactive::curve(x_desc, y_desc, curve, bound, knee.as_ref());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (x0, x1) = range(curve.points.iter().map(|p| p.0), true);
        let (_, y1) = range(
            curve.points.iter().flat_map(|p| [p.1, p.2]).chain(bound),
            true,
        );
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, 0.0..y1)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|x| crate::render::num(*x))
            .draw();
        let c = colour(0);
        if let Ok(s) = chart.draw_series(LineSeries::new(
            curve.points.iter().map(|p| (p.0, p.1)),
            c.stroke_width(2),
        )) {
            s.label(curve.name.clone()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
            });
        }
        let _ =
            chart.draw_series(curve.points.iter().map(|&(x, p50, p99)| {
                ErrorBar::new_vertical(x, p50, p50, p99, c.stroke_width(1), 8)
            }));
        let _ = chart.draw_series(
            curve
                .points
                .iter()
                .map(|p| Circle::new((p.0, p.1), 3, c.filled())),
        );
        if let Some(b) = bound
            && let Ok(s) = chart.draw_series(DashedLineSeries::new(
                [(x0, b), (x1, b)],
                6,
                4,
                BLACK.stroke_width(1),
            ))
        {
            s.label(format!("SLO {}", crate::render::num(b)))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
        }
        if let Some((x, label)) = knee {
            let _ = chart.draw_series(DashedLineSeries::new(
                [(x, 0.0), (x, y1)],
                6,
                4,
                RED.stroke_width(2),
            ));
            let _ = chart.draw_series(std::iter::once(Text::new(
                label,
                (x, y1 * 0.95),
                ("sans-serif", 13).into_font().color(&RED),
            )));
        }
        let _ = chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw();
        let _ = root.present();
    }
    interactive::figure(svg, &spec)
}
