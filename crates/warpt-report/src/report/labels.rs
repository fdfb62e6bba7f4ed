//! The category labels under the report's bar and box charts: only what
//! tells the categories apart, one line per tag key that differs (the
//! shared tags and the keys go to the axis name), each line cut to its
//! slot, the full tags as the hover title — so no label runs into the next
//! however many series a benchmark has.

use plotters::prelude::*;

use warpt_model::escape::xml;

/// Pixels a character of the labels' 11 px font takes, about.
const CHAR_PX: f64 = 6.5;
/// Pixels between label lines.
const LINE_PX: u32 = 13;

/// Each category's label lines and the axis name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Labels {
    /// Per category, its lines (the same count for every category).
    pub lines: Vec<Vec<String>>,
    /// What the lines are: the differing keys, then the shared tags.
    pub axis: String,
}

impl Labels {
    /// The height of the label area the lines and the axis name need.
    pub fn area(&self) -> u32 {
        let rows = self.lines.iter().map(Vec::len).max().unwrap_or(1).max(1) as u32;
        40 + LINE_PX * (rows - 1)
    }
}

/// The labels of `categories` (tag strings `k=v,k=v`, or plain names) in a
/// plot `width_px` wide.
pub(crate) fn short_labels(categories: &[String], width_px: f64) -> Labels {
    let (lines, axis) = split(categories);
    let slot_px = width_px / categories.len().max(1) as f64;
    let room = ((slot_px / CHAR_PX).floor() as usize).max(3);
    let cut = |l: String| {
        if l.chars().count() <= room {
            l
        } else {
            l.chars().take(room - 1).collect::<String>() + "…"
        }
    };
    Labels {
        lines: lines
            .into_iter()
            .map(|ls| ls.into_iter().map(cut).collect())
            .collect(),
        axis,
    }
}

fn split(categories: &[String]) -> (Vec<Vec<String>>, String) {
    let plain = || {
        (
            categories.iter().map(|c| vec![c.clone()]).collect(),
            String::new(),
        )
    };
    let parsed: Option<Vec<Vec<(&str, &str)>>> = categories
        .iter()
        .map(|c| c.split(',').map(|p| p.split_once('=')).collect())
        .collect();
    let Some(pairs) = parsed.filter(|p| !p.is_empty()) else {
        return plain();
    };
    let common: Vec<(&str, &str)> = pairs[0]
        .iter()
        .copied()
        .filter(|p| pairs.iter().all(|c| c.contains(p)))
        .collect();
    let shared = common
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let keys: std::collections::BTreeSet<&str> = pairs
        .iter()
        .flatten()
        .filter(|p| !common.contains(p))
        .map(|(k, _)| *k)
        .collect();
    if keys.is_empty() {
        return plain();
    }
    let lines = pairs
        .iter()
        .map(|c| {
            keys.iter()
                .map(|k| {
                    c.iter()
                        .find(|(ck, _)| ck == k)
                        .map_or("–".to_string(), |(_, v)| v.to_string())
                })
                .collect()
        })
        .collect();
    let names = keys.into_iter().collect::<Vec<_>>().join(" / ");
    let axis = if shared.is_empty() {
        names
    } else {
        format!("{names} ({shared})")
    };
    (lines, axis)
}

/// Each category's label centred under its group of `per` slots, as SVG
/// text (a line per tspan) whose hover title is the category's full tag
/// string (plotters draws text without titles, so these are added after
/// it has drawn).
pub(crate) fn category_labels<DB: DrawingBackend, Y: Ranged>(
    chart: &ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    labels: &Labels,
    categories: &[String],
    per: usize,
    y: Y::ValueType,
) -> String
where
    Y::ValueType: Clone,
{
    let mut out = String::new();
    for (i, (lines, full)) in labels.lines.iter().zip(categories).enumerate() {
        let centre = (i * per) as f64 + per as f64 / 2.0;
        let (px, py) = chart.backend_coord(&(centre, y.clone()));
        let spans: String = lines
            .iter()
            .enumerate()
            .map(|(n, l)| {
                let dy = if n == 0 { "0.76em" } else { "1.2em" };
                format!("<tspan x=\"{px}\" dy=\"{dy}\">{}</tspan>", xml(l))
            })
            .collect();
        out.push_str(&format!(
            "<text class=\"category\" x=\"{px}\" y=\"{}\" text-anchor=\"middle\" \
             font-family=\"sans-serif\" font-size=\"11\"><title>{}</title>{spans}</text>\n",
            py + 6,
            xml(full),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn lines(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter().map(|l| c(l)).collect()
    }

    #[test]
    fn one_differing_key_gives_its_values_and_names_the_axis() {
        let l = short_labels(
            &c(&["precision=fp64,threads=1", "precision=fp64,threads=all"]),
            670.0,
        );
        assert_eq!(l.lines, lines(&[&["1"], &["all"]]));
        assert_eq!(l.axis, "threads (precision=fp64)");
        assert_eq!(l.area(), 40);
    }

    #[test]
    fn several_differing_keys_give_a_line_each_and_a_dash_where_one_is_missing() {
        let l = short_labels(
            &c(&["isa=avx2,precision=fp32", "isa=avx512,precision=fp64"]),
            670.0,
        );
        assert_eq!(l.lines, lines(&[&["avx2", "fp32"], &["avx512", "fp64"]]));
        assert_eq!(l.axis, "isa / precision");
        assert_eq!(l.area(), 53);
        // A sweep of cpu_flops' threads: the swept value beside its own tag.
        let l = short_labels(
            &c(&[
                "precision=fp64,threads=1",
                "param.threads=1,precision=fp64,threads=all",
            ]),
            670.0,
        );
        assert_eq!(l.lines, lines(&[&["–", "1"], &["1", "all"]]));
        assert_eq!(l.axis, "param.threads / threads (precision=fp64)");
    }

    #[test]
    fn every_line_fits_its_slot() {
        let ten: Vec<String> = (0..10)
            .map(|i| format!("isa=avx512_{i},precision=bf16_long_name_{i},threads=all"))
            .collect();
        let l = short_labels(&ten, 670.0);
        for line in l.lines.iter().flatten() {
            assert!(line.chars().count() as f64 * CHAR_PX <= 67.0, "{line}");
        }
        assert!(l.lines[0][1].ends_with('…'), "{:?}", l.lines);
        assert_eq!(l.axis, "isa / precision (threads=all)");
    }

    #[test]
    fn names_without_tags_are_kept_whole() {
        let l = short_labels(&c(&["cpu_flops gflops", "mem"]), 670.0);
        assert_eq!(l.lines, lines(&[&["cpu_flops gflops"], &["mem"]]));
        assert_eq!(l.axis, "");
    }
}
