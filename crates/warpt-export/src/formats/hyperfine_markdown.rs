//! hyperfine's `--export-markdown`: its table of mean ± σ, min, max and
//! relative speed.

use warpt_exec::JobResult;
use warpt_exec::hyperfine::{mean, stddev, walls};

use crate::format::{Document, Exec, ExportError, Format};

/// hyperfine's Markdown table
pub struct HyperfineMarkdown;

impl Format<Exec> for HyperfineMarkdown {
    fn render(&self, input: &[JobResult]) -> Result<Document, ExportError> {
        Ok(Document::Text(markdown(input)))
    }
}

/// The unit a table of these means reads best in: (name, seconds per unit).
fn unit(results: &[JobResult]) -> (&'static str, f64) {
    let smallest = results
        .iter()
        .filter(|r| !r.samples.is_empty())
        .map(|r| mean(&walls(r)))
        .fold(f64::INFINITY, f64::min);
    if smallest < 1.0 {
        ("ms", 1e-3)
    } else {
        ("s", 1.0)
    }
}

/// `--export-markdown`: hyperfine's table (mean ± σ, min, max, relative).
fn markdown(results: &[JobResult]) -> String {
    let (u, scale) = unit(results);
    let done: Vec<&JobResult> = results.iter().filter(|r| !r.samples.is_empty()).collect();
    let fastest = done
        .iter()
        .map(|r| mean(&walls(r)))
        .fold(f64::INFINITY, f64::min);
    let mut out = format!(
        "| Command | Mean [{u}] | Min [{u}] | Max [{u}] | Relative |\n|:---|---:|---:|---:|---:|\n"
    );
    for r in done {
        let t = walls(r);
        let m = mean(&t);
        let sd = stddev(&t).map_or(String::new(), |s| format!(" ± {:.1}", s / scale));
        out += &format!(
            "| `{}` | {:.1}{sd} | {:.1} | {:.1} | {:.2} |\n",
            r.job.name.replace('|', "\\|").replace('`', "'"),
            m / scale,
            t.iter().copied().fold(f64::INFINITY, f64::min) / scale,
            t.iter().copied().fold(f64::NEG_INFINITY, f64::max) / scale,
            m / fastest
        );
    }
    out
}
