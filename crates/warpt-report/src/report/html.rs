//! The HTML report: one file, styles and SVG charts inline, no scripts.

use std::collections::BTreeMap;

use warpt_model::Params;

use super::chart_data::{Bar, Line};
use super::charts;
use super::{Input, RESULT_HEADER, environment, result_notes, result_rows, tag_label};
use crate::compare::Verdict;
use crate::render::num;

use warpt_model::escape::xml as esc;

/// One metric of one run, for the charts.
struct Entry {
    run: usize,
    tags: BTreeMap<String, String>,
    value: f64,
    ci: Option<(f64, f64)>,
    samples: Vec<f64>,
    params: Params,
}

/// (suite/benchmark, metric, unit) and its entries, in order of appearance.
type Group = ((String, String, String), Vec<Entry>);

fn groups(input: &Input) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (run, (_, r)) in input.runs.iter().enumerate() {
        for b in &r.benchmarks {
            for m in &b.metrics {
                if !m.value.is_finite() {
                    continue;
                }
                let key = (b.spec.id.to_string(), m.name.clone(), m.unit.clone());
                let st = m.stats.as_ref();
                let entry = Entry {
                    run,
                    tags: m.tags.clone(),
                    value: m.value,
                    ci: st
                        .filter(|s| s.median == m.value)
                        .map(|s| (s.ci95_low, s.ci95_high)),
                    samples: st.map(|s| s.samples.clone()).unwrap_or_default(),
                    params: b.params.clone(),
                };
                match out.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.push(entry),
                    None => out.push((key, vec![entry])),
                }
            }
        }
    }
    out
}

/// The tag to draw a line against: numeric everywhere, and a swept
/// parameter with two or more values or any tag with three or more.
fn scaling_axis(entries: &[Entry]) -> Option<String> {
    let first = entries.first()?;
    first.tags.keys().find_map(|k| {
        let mut values: Vec<f64> = Vec::new();
        for e in entries {
            let v: f64 = e.tags.get(k)?.parse().ok()?;
            if !values.contains(&v) {
                values.push(v);
            }
        }
        let swept = entries.iter().all(|e| e.params.contains_key(k));
        ((swept && values.len() >= 2) || values.len() >= 3).then(|| k.clone())
    })
}

/// Runs at least this many, all of one machine, get a trend chart.
const TREND_MIN_RUNS: usize = 2 * crate::trend::MIN_SEGMENT;

/// The metric over the runs in time order with its change points marked,
/// when the report holds enough runs of one machine.
fn trend_chart(
    input: &Input,
    title: &str,
    unit: &str,
    entries: &[Entry],
    label_of: &dyn Fn(&Entry) -> String,
) -> Option<String> {
    let runs = &input.runs;
    let machines: Vec<Option<String>> = runs
        .iter()
        .map(|(_, r)| r.system.as_ref().map(|s| s.fingerprint()))
        .collect();
    if runs.len() < TREND_MIN_RUNS || machines.iter().any(|m| m.is_none() || *m != machines[0]) {
        return None;
    }
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| runs[i].1.start_time);
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (x, &run) in order.iter().enumerate() {
        for e in entries.iter().filter(|e| e.run == run) {
            series
                .entry(label_of(e))
                .or_default()
                .push((x as f64 + 1.0, e.value));
        }
    }
    let mut steps = Vec::new();
    let lines: Vec<Line> = series
        .into_iter()
        .filter(|(_, points)| points.len() >= TREND_MIN_RUNS)
        .map(|(name, points)| {
            let values: Vec<f64> = points.iter().map(|p| p.1).collect();
            for st in crate::trend::change_points(&values) {
                let x = points[st.index].0 - 0.5;
                steps.push((x, format!("{name} {:+.1}%", st.change_pct)));
            }
            Line { name, points }
        })
        .collect();
    (!lines.is_empty()).then(|| charts::trend(&format!("{title}: trend"), unit, &lines, &steps))
}

fn metric_charts(input: &Input) -> String {
    let runs = input.runs.len();
    let mut s = String::new();
    for ((bench, metric, unit), entries) in groups(input) {
        let title = format!("{bench} {metric}");
        let mut categories: Vec<String> = Vec::new();
        for e in &entries {
            let c = tag_label(&e.tags);
            if !categories.contains(&c) {
                categories.push(c);
            }
        }
        let categories: Vec<String> = categories
            .into_iter()
            .map(|c| if c.is_empty() { metric.clone() } else { c })
            .collect();
        let label_of = |e: &Entry| {
            let c = tag_label(&e.tags);
            if c.is_empty() { metric.clone() } else { c }
        };
        s += &format!("<section class=\"chart\"><h3>{}</h3>\n", esc(&title));
        if let Some(axis) = scaling_axis(&entries) {
            let mut lines: BTreeMap<(usize, String), Vec<(f64, f64)>> = BTreeMap::new();
            for e in &entries {
                let mut rest = e.tags.clone();
                let x: f64 = rest
                    .remove(&axis)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(f64::NAN);
                lines
                    .entry((e.run, tag_label(&rest)))
                    .or_default()
                    .push((x, e.value));
            }
            let lines: Vec<Line> = lines
                .into_iter()
                .map(|((run, rest), mut points)| {
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let mut name = input.runs[run].0.clone();
                    if !rest.is_empty() {
                        name += &format!(" {rest}");
                    }
                    Line { name, points }
                })
                .collect();
            s += &format!(
                "<figure class=\"scaling\">{}</figure>\n",
                charts::lines(&format!("{title} against {axis}"), &axis, &unit, &lines)
            );
        }
        if let Some(svg) = trend_chart(input, &title, &unit, &entries, &label_of) {
            s += &format!("<figure class=\"trend\">{svg}</figure>\n");
        }
        let bars: Vec<Bar> = entries
            .iter()
            .map(|e| Bar {
                category: label_of(e),
                series: e.run,
                value: e.value,
                ci: e.ci,
            })
            .collect();
        s += &format!(
            "<figure class=\"bars\">{}</figure>\n",
            charts::bars(&title, &unit, &categories, runs, &bars)
        );
        let boxes: Vec<(String, usize, Vec<f64>)> = entries
            .iter()
            .filter(|e| e.samples.len() >= 2)
            .map(|e| (label_of(e), e.run, e.samples.clone()))
            .collect();
        if !boxes.is_empty() {
            s += &format!(
                "<figure class=\"boxes\">{}</figure>\n",
                charts::boxes(
                    &format!("{title}: samples"),
                    &unit,
                    &categories,
                    runs,
                    &boxes
                )
            );
        }
        s += "</section>\n";
    }
    s
}

fn telemetry_charts(input: &Input) -> String {
    let t = &input.telemetry;
    let Some(t0) = t.first().and_then(|s| s.timestamp) else {
        return String::new();
    };
    let secs = |s: &warpt_model::TelemetrySample| {
        s.timestamp.map_or(f64::NAN, |ts| {
            (ts - t0).total(jiff::Unit::Second).unwrap_or(f64::NAN)
        })
    };
    type Pick = fn(&warpt_model::TelemetrySample) -> Option<f64>;
    let series: [(&str, &str, Pick); 5] = [
        ("CPU utilisation", "%", |s| Some(s.cpu_utilization_percent)),
        ("mean CPU frequency", "MHz", |s| {
            let v = &s.per_core_freq_mhz;
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        }),
        ("hottest sensor", "°C", |s| {
            s.temperatures.iter().map(|t| t.celsius).reduce(f64::max)
        }),
        ("package power", "W", |s| s.package_power_w),
        ("warpt's resident memory", "GiB", |s| {
            s.process_rss_bytes.map(|b| b as f64 / (1u64 << 30) as f64)
        }),
    ];
    let mut out = String::new();
    for (name, unit, pick) in series {
        let points: Vec<(f64, f64)> = t
            .iter()
            .filter_map(|s| pick(s).map(|v| (secs(s), v)))
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        if points.len() < 2 {
            continue;
        }
        let line = Line {
            name: name.to_string(),
            points,
        };
        out += &format!(
            "<figure class=\"telemetry\">{}</figure>\n",
            charts::lines(name, "seconds", unit, &[line])
        );
    }
    out
}

pub(crate) fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in header {
        s += &format!("<th>{}</th>", esc(h));
    }
    s += "</tr></thead><tbody>\n";
    for r in rows {
        s += "<tr>";
        for c in r {
            s += &format!("<td>{}</td>", esc(c));
        }
        s += "</tr>\n";
    }
    s + "</tbody></table>\n"
}

pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}\
.improved{color:#1a7f37;font-weight:bold}.regressed{color:#cf222e;font-weight:bold}\
figure{margin:0.5em 0}section.chart{margin-bottom:2em}.legend span{margin-right:1.5em}";

/// The HTML report.
pub fn html(input: &Input) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>warpt report</title>\
         <style>{STYLE}</style></head><body>\n<h1>warpt report</h1>\n<h2>Environment</h2>\n"
    );
    let mut header = vec![String::new()];
    header.extend(input.runs.iter().map(|(l, _)| l.clone()));
    let rows: Vec<Vec<String>> = environment(input)
        .into_iter()
        .map(|(f, v)| std::iter::once(f.to_string()).chain(v).collect())
        .collect();
    s += &table(&header, &rows);
    s += "<p class=\"legend\">";
    for (i, (label, _)) in input.runs.iter().enumerate() {
        let c = charts::colour(i);
        s += &format!(
            "<span><svg width=\"12\" height=\"12\"><rect width=\"12\" height=\"12\" fill=\"rgb({},{},{})\"/></svg> {}</span>",
            c.0,
            c.1,
            c.2,
            esc(label)
        );
    }
    s += "</p>\n";
    for (label, run) in &input.runs {
        s += &format!("<h2>Results: {}</h2>\n", esc(label));
        let header: Vec<String> = RESULT_HEADER.iter().map(|h| h.to_string()).collect();
        let rows: Vec<Vec<String>> = result_rows(run).into_iter().map(Vec::from).collect();
        s += &table(&header, &rows);
        let notes = result_notes(run);
        if !notes.is_empty() {
            s += "<ul>";
            for n in notes {
                s += &format!("<li>{}</li>", esc(&n));
            }
            s += "</ul>\n";
        }
    }
    for c in &input.comparisons {
        s += &format!(
            "<h2>Comparison: {} against {}</h2>\n<table><thead><tr><th>metric</th><th>base</th><th>current</th>\
             <th>change</th><th>speedup</th><th>p / q</th><th>verdict</th></tr></thead><tbody>\n",
            esc(&c.current),
            esc(&c.base)
        );
        for m in &c.metrics {
            let class = match m.verdict {
                Verdict::Improved => "improved",
                Verdict::Regressed => "regressed",
                Verdict::Unchanged => "same",
                Verdict::Inconclusive => "inconclusive",
            };
            let pq = match (m.p_value, m.q_value) {
                (Some(p), Some(q)) => format!("{p:.3} / {q:.3}"),
                _ => m.method.clone(),
            };
            s += &format!(
                "<tr><td>{}</td><td>{} {}</td><td>{} {}</td><td>{:+.2}%</td><td>x{:.3}</td><td>{}</td>\
                 <td class=\"{class}\">{}</td></tr>\n",
                esc(&m.label()),
                num(m.base.median),
                esc(&m.unit),
                num(m.current.median),
                esc(&m.unit),
                m.change_pct,
                m.speedup,
                esc(&pq),
                m.verdict.as_str()
            );
        }
        s += "</tbody></table>\n";
        for w in &c.warnings {
            s += &format!("<p>warning: the runs differ: {}</p>\n", esc(w));
        }
    }
    s += "<h2>Charts</h2>\n";
    s += &metric_charts(input);
    let l = super::serving::serving_charts(input);
    if !l.is_empty() {
        s += "<h2>Latency against throughput</h2>\n";
        s += &l;
    }
    let m = memory_charts(input);
    if !m.is_empty() {
        s += "<h2>Memory over time</h2>\n";
        s += &m;
    }
    let t = telemetry_charts(input);
    if !t.is_empty() {
        s += "<h2>Telemetry</h2>\n";
        s += &t;
    }
    let scripts = super::interactive::scripts(&s);
    s + &scripts + "</body></html>\n"
}

/// One chart per run recorded with `--monitor`: the resident memory of
/// warpt's processes against seconds since the run began, a line per
/// result (each from its setup to its validation).
fn memory_charts(input: &Input) -> String {
    let mut out = String::new();
    for (label, run) in &input.runs {
        let Some(t0) = run.start_time else {
            continue;
        };
        let lines: Vec<Line> = run
            .benchmarks
            .iter()
            .filter_map(|r| {
                let timeline = &r.telemetry.as_ref()?.memory_timeline;
                let offset = (r.start_time - t0).total(jiff::Unit::Second).ok()?;
                let points: Vec<(f64, f64)> = timeline
                    .iter()
                    .map(|p| (offset + p.seconds, p.rss_bytes as f64 / (1u64 << 30) as f64))
                    .collect();
                // A swept entry's parameters are its metrics' tags.
                let tags = r.metrics.first().map(|m| m.tag_label()).unwrap_or_default();
                let name = format!("{} {tags}", r.spec.id).trim().to_string();
                (!points.is_empty()).then_some(Line { name, points })
            })
            .collect();
        if lines.is_empty() {
            continue;
        }
        let title = format!("{label}: resident memory");
        out += &format!(
            "<figure class=\"telemetry\">{}</figure>\n",
            charts::lines(&title, "seconds since the run began", "GiB", &lines)
        );
    }
    out
}
