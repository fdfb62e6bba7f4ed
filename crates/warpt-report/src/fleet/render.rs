//! `report --by machine` for people: Markdown, and one self-contained HTML
//! file with the bars (CI whiskers) and scaling lines as inline SVG.

use super::machines::{MachineReport, Pick};
use crate::render::num;
use crate::report::chart_data::{Bar, Line};
use crate::report::charts;
use crate::report::html::{STYLE, table};
use warpt_model::escape::{markdown as md, xml as esc};

fn ci_text(value: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) if value != 0.0 => {
            format!("±{:.1}%", (hi - lo) / 2.0 / value.abs() * 100.0)
        }
        _ => "-".into(),
    }
}

fn pick_text(p: &Pick) -> String {
    let margin = match (&p.runner_up, p.margin) {
        (Some(r), Some(m)) => format!(" (+{:.1}% over {r}", m * 100.0),
        _ => return p.winner.clone(),
    };
    let pv = |v: f64| {
        if v < 0.001 {
            "p < 0.001".to_string()
        } else {
            format!("p = {v:.3}")
        }
    };
    let verdict = match (p.significant, p.p_value) {
        (true, Some(v)) => format!(", significant: {}, {}", pv(v), p.basis),
        (false, Some(v)) => format!(", not significant: {}, {}", pv(v), p.basis),
        (true, None) => format!(", significant: {}", p.basis),
        (false, None) => format!(", not significant: {}", p.basis),
    };
    format!("{}{margin}{verdict})", p.winner)
}

fn picks_row(r: &super::machines::Recommendation) -> Vec<String> {
    let by = |c: super::machines::Criterion| {
        r.picks
            .iter()
            .find(|p| p.criterion == c)
            .map_or_else(|| "-".to_string(), pick_text)
    };
    vec![
        r.workload.clone(),
        r.unit.clone(),
        by(super::machines::Criterion::Throughput),
        by(super::machines::Criterion::PerWatt),
        by(super::machines::Criterion::PerCost),
    ]
}

const PICK_HEADER: [&str; 5] = ["workload", "unit", "best", "best per watt", "best per cost"];

fn machine_rows(report: &MachineReport) -> Vec<Vec<String>> {
    report
        .machines
        .iter()
        .map(|m| {
            vec![
                m.hostname.clone(),
                m.class.clone().unwrap_or_else(|| "-".into()),
                m.runs.to_string(),
                m.cost_per_hour.map_or_else(|| "-".into(), num),
                m.fingerprint.clone(),
            ]
        })
        .collect()
}

const MACHINE_HEADER: [&str; 5] = ["machine", "hardware class", "runs", "cost/h", "fingerprint"];

fn figure_rows(w: &super::machines::Workload) -> Vec<Vec<String>> {
    w.figures
        .iter()
        .map(|f| {
            vec![
                f.hostname.clone(),
                num(f.value),
                ci_text(f.value, f.ci95),
                f.runs.to_string(),
                f.per_watt.map_or_else(|| "-".into(), num),
                f.per_cost.map_or_else(|| "-".into(), num),
            ]
        })
        .collect()
}

const FIGURE_HEADER: [&str; 6] = ["machine", "median", "±CI95", "runs", "per W", "per cost/h"];

fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n", header.join(" | "));
    s += &format!("|{}\n", "---|".repeat(header.len()));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| md(c)).collect();
        s += &format!("| {} |\n", cells.join(" | "));
    }
    s
}

/// The report as Markdown.
pub fn markdown(report: &MachineReport) -> String {
    let mut s = String::from("# warpt report by machine\n\n## Machines\n\n");
    s += &md_table(&MACHINE_HEADER, &machine_rows(report));
    s += "\n## Recommendations\n\nThe best machine per workload, its margin over the runner-up and whether \
          that margin is significant (p < 0.05: Welch's t on the runs' figures when both ran twice or \
          more, else Mann-Whitney on the raw samples, else CI overlap).\n\n";
    let rows: Vec<Vec<String>> = report.recommendations.iter().map(picks_row).collect();
    s += &md_table(&PICK_HEADER, &rows);
    s += "\n## Workloads\n";
    for w in &report.workloads {
        s += &format!("\n### {} ({})\n\n", md(&w.label()), md(&w.unit));
        s += &md_table(&FIGURE_HEADER, &figure_rows(w));
    }
    if !report.scaling.is_empty() {
        s += "\n## Scaling\n";
        for sc in &report.scaling {
            s += &format!(
                "\n### {} against {}{} ({})\n\n",
                md(&sc.title),
                md(&sc.axis),
                if sc.fixed.is_empty() {
                    String::new()
                } else {
                    format!(", {}", md(&sc.fixed))
                },
                md(&sc.unit)
            );
            let mut xs: Vec<f64> = sc
                .lines
                .iter()
                .flat_map(|(_, p)| p.iter().map(|q| q.0))
                .collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            let mut header = vec!["machine".to_string()];
            header.extend(xs.iter().map(|x| format!("{}={x}", sc.axis)));
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            let rows: Vec<Vec<String>> = sc
                .lines
                .iter()
                .map(|(host, pts)| {
                    std::iter::once(host.clone())
                        .chain(xs.iter().map(|x| {
                            pts.iter()
                                .find(|p| p.0 == *x)
                                .map_or_else(|| "-".into(), |p| num(p.1))
                        }))
                        .collect()
                })
                .collect();
            s += &md_table(&header, &rows);
        }
    }
    s
}

/// The report as one HTML file.
pub fn html(report: &MachineReport) -> String {
    let strings = |h: &[&str]| -> Vec<String> { h.iter().map(|x| x.to_string()).collect() };
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>warpt report by machine</title>\
         <style>{STYLE}</style></head><body>\n<h1>warpt report by machine</h1>\n<h2>Machines</h2>\n"
    );
    s += &table(&strings(&MACHINE_HEADER), &machine_rows(report));
    s += "<h2>Recommendations</h2>\n<p>The best machine per workload, its margin over the runner-up and \
          whether that margin is significant (p &lt; 0.05: Welch's t on the runs' figures when both ran \
          twice or more, else Mann-Whitney on the raw samples, else CI overlap).</p>\n";
    let rows: Vec<Vec<String>> = report.recommendations.iter().map(picks_row).collect();
    s += &table(&strings(&PICK_HEADER), &rows);
    s += "<h2>Workloads</h2>\n";
    for w in &report.workloads {
        s += &format!(
            "<section class=\"chart\"><h3>{} ({})</h3>\n",
            esc(&w.label()),
            esc(&w.unit)
        );
        let hosts: Vec<String> = w.figures.iter().map(|f| f.hostname.clone()).collect();
        let bars: Vec<Bar> = w
            .figures
            .iter()
            .map(|f| Bar {
                category: f.hostname.clone(),
                series: 0,
                value: f.value,
                ci: f.ci95,
            })
            .collect();
        s += "<figure>";
        s += &charts::bars(&w.label(), &w.unit, &hosts, 1, &bars);
        s += "</figure>\n";
        s += &table(&strings(&FIGURE_HEADER), &figure_rows(w));
        s += "</section>\n";
    }
    if !report.scaling.is_empty() {
        s += "<h2>Scaling</h2>\n";
        for sc in &report.scaling {
            let lines: Vec<Line> = sc
                .lines
                .iter()
                .map(|(h, pts)| Line {
                    name: h.clone(),
                    points: pts.clone(),
                })
                .collect();
            let title = if sc.fixed.is_empty() {
                sc.title.clone()
            } else {
                format!("{} ({})", sc.title, sc.fixed)
            };
            s += "<section class=\"chart\"><figure>";
            s += &charts::lines(&title, &sc.axis, &sc.unit, &lines);
            s += "</figure></section>\n";
        }
    }
    let scripts = crate::report::interactive::scripts(&s);
    s + &scripts + "</body></html>\n"
}
