//! Text for the terminal: warpt's table style, byte counts, a suite
//! run's results, the benchmark list and one benchmark's description.

mod machine;
mod noise;
mod query;
mod runs;
mod stress;

pub use machine::machine;
pub use noise::{noise_profile, noise_report};
pub use query::{query_csv, query_table};
pub use runs::runs;
pub use stress::stress;

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use warpt_model::{BenchmarkSpec, BenchmarkSuiteRun};

/// Narrowest `COLUMNS` honoured: below it a table cannot hold its borders.
const MIN_COLUMNS: u16 = 20;

/// The width tables and prose fit: `COLUMNS` when it holds a number (a
/// script's, a pager's or CI's choice), else the terminal's; `None` for a
/// file or a pipe without `COLUMNS`.
pub fn width() -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|w| *w >= MIN_COLUMNS)
        .or_else(|| Table::new().width())
}

/// A table in warpt's style with `header`, as wide as [`width`] allows
/// (long cells wrap inside their column).
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().map(Cell::new));
    if let Some(w) = width() {
        t.set_width(w);
    }
    t
}

/// A byte count in binary units, e.g. `32.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The results of a suite run: one row per metric, then one line per
/// benchmark that did not pass or carries warnings.
pub fn results(run: &BenchmarkSuiteRun) -> String {
    let header = &crate::report::RESULT_HEADER;
    let mut t = table(&header[..8]);
    for row in crate::report::result_rows(run) {
        t.add_row(
            row.into_iter()
                .take(8)
                .enumerate()
                .map(|(i, c)| {
                    let cell = Cell::new(c);
                    if matches!(i, 3 | 4 | 6) {
                        cell.set_alignment(CellAlignment::Right)
                    } else {
                        cell
                    }
                })
                .collect::<Vec<_>>(),
        );
    }
    let mut out = t.to_string();
    out.push('\n');
    out.push_str(&asked_percentiles(run));
    if !run.trials.is_empty() {
        out.push_str(&format!(
            "{} trials: each value is the median of the trial medians, n the trials, ±CI95 the \
             spread of the trial medians (the run-to-run spread, not one run's precision)\n",
            run.trials.len()
        ));
    }
    for r in &run.benchmarks {
        let verdict = match (&r.validation, &r.error_message) {
            (_, Some(e)) => e.clone(),
            (Some(v), None) => format!("validation: {}", v.message),
            (None, None) => String::new(),
        };
        out.push_str(&format!("{} {}: {verdict}\n", r.spec.id, r.status));
        for w in &r.warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
        if let Some(t) = &r.telemetry
            && let (Some(peak), Some(mean)) = (t.peak_rss_bytes, t.mean_rss_bytes)
        {
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            out.push_str(&format!(
                "  memory: peak {:.2} GiB, mean {:.2} GiB resident (warpt and its worker, {} samples)\n",
                gib(peak),
                gib(mean),
                t.samples
            ));
        }
        if let Some(q) = r.quality.filter(|q| *q != warpt_model::Quality::Good) {
            out.push_str(&format!(
                "  quality: {}: {}\n",
                q.as_str(),
                r.quality_reasons.join("; ")
            ));
        }
    }
    out
}

/// A table of the percentiles asked for with `--percentiles` beyond the
/// standard ones (`p99.9`, `p10`), one row per metric that has them; empty
/// when none was asked for.
fn asked_percentiles(run: &BenchmarkSuiteRun) -> String {
    let keys = warpt_model::Percentiles::ordered_keys(
        run.benchmarks
            .iter()
            .flat_map(|r| &r.metrics)
            .filter_map(|m| m.stats.as_ref())
            .flat_map(|s| s.percentiles.keys()),
    );
    if keys.is_empty() {
        return String::new();
    }
    let mut header = vec!["benchmark", "metric", "tags"];
    header.extend(keys.iter().map(String::as_str));
    header.push("unit");
    let mut t = table(&header);
    for r in &run.benchmarks {
        for m in &r.metrics {
            let Some(st) = m.stats.as_ref().filter(|s| !s.percentiles.is_empty()) else {
                continue;
            };
            let mut row = vec![r.spec.id.to_string(), m.name.clone(), m.tag_label()];
            row.extend(keys.iter().map(|k| {
                st.percentiles
                    .get(k)
                    .map_or("-".into(), |v| crate::render::num(*v))
            }));
            row.push(m.unit.clone());
            t.add_row(row);
        }
    }
    format!("percentiles asked for (--percentiles):\n{t}\n")
}

/// The benchmark listing.
pub fn spec_list(specs: &[BenchmarkSpec]) -> String {
    let mut t = table(&[
        "suite",
        "benchmark",
        "components",
        "kind",
        "duration",
        "metrics",
    ]);
    for s in specs {
        t.add_row(vec![
            s.id.suite.clone(),
            s.id.name.clone(),
            s.components
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(","),
            s.kind.to_string(),
            s.default_duration_seconds
                .map(|d| format!("{d} s"))
                .unwrap_or_default(),
            s.metrics.join(","),
        ]);
    }
    t.to_string()
}

/// Columns prose is wrapped to where the terminal's width is unknown (a
/// pager, a file).
const PROSE_WIDTH: u16 = 100;

/// `text` wrapped on spaces to lines of at most `width` characters (a
/// longer word stays whole on its own line).
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

/// Everything about one benchmark, its prose and parameter table as wide
/// as the terminal (or [`PROSE_WIDTH`] columns when that is unknown).
pub fn describe(spec: &BenchmarkSpec) -> String {
    let width = width().unwrap_or(PROSE_WIDTH);
    let mut out = format!("{}\n\n", spec.id);
    if let Some(d) = &spec.description {
        out.push_str(&wrap(d, usize::from(width)));
        out.push_str("\n\n");
    }
    out.push_str(&format!(
        "components: {}\nkind: {}\ndefault duration: {}\nexternal tool: {}\nmetrics: {}\n",
        spec.components
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        spec.kind,
        spec.default_duration_seconds
            .map(|d| format!("{d} s"))
            .unwrap_or_else(|| "-".into()),
        spec.external_tool.as_deref().unwrap_or("none"),
        spec.metrics.join(", "),
    ));
    if !spec.params.is_empty() {
        out.push_str("\nparameters (--param key=value):\n");
        let mut t = table(&["name", "default", "meaning"]);
        t.set_width(width);
        for (k, v) in &spec.params {
            // What the plan checks, and what a remote caller may not set.
            let mut meaning = spec.param_help.get(k).cloned().unwrap_or_default();
            if let Some(r) = spec.param_ranges.get(k) {
                match spec.param_units.get(k) {
                    Some(u) => meaning.push_str(&format!(" (range {r}, {u})")),
                    None => meaning.push_str(&format!(" (range {r})")),
                }
            }
            if let Some(c) = spec.param_choices.get(k) {
                meaning.push_str(&format!(" (one of {})", c.join(", ")));
            }
            if let Some(kind) = spec.param_kinds.get(k) {
                meaning.push_str(&format!(" [{}]", kind.as_str()));
            }
            t.add_row(vec![k.clone(), v.to_string(), meaning]);
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_model::Param;

    #[test]
    fn wrap_breaks_on_spaces_within_the_width() {
        assert_eq!(wrap("aa bb cc", 5), "aa bb\ncc");
        assert_eq!(wrap("a  b\nc", 80), "a b c");
        assert_eq!(wrap("averylongword b", 4), "averylongword\nb");
        assert_eq!(wrap("", 10), "");
    }

    #[test]
    fn describe_stays_within_the_width_off_a_terminal() {
        let long = "word ".repeat(80);
        let spec = BenchmarkSpec::builder("s", "b")
            .description(long.clone())
            .params(vec![Param::int("n", 1, 0..).help(long)])
            .build();
        let text = describe(&spec);
        // Tests run without a terminal: the fallback width holds.
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        let limit = width().unwrap_or(PROSE_WIDTH);
        assert!(widest <= usize::from(limit), "{widest} columns:\n{text}");
        assert!(text.contains("(range 0..)"), "{text}");
    }
}
