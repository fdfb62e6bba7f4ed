//! hyperfine's `--export-csv`.

use warpt_exec::JobResult;
use warpt_exec::hyperfine::{mean, stddev, walls};

use crate::format::{Document, Exec, ExportError, Format};

/// hyperfine's CSV: one row per command, a column per parameter
pub struct HyperfineCsv;

impl Format<Exec> for HyperfineCsv {
    fn render(&self, input: &[JobResult]) -> Result<Document, ExportError> {
        Ok(Document::Text(csv(input)))
    }
}

/// `--export-csv`: `command,mean,stddev,median,user,system,min,max` and a
/// `parameter_NAME` column per parameter.
fn csv(results: &[JobResult]) -> String {
    let names: Vec<&String> = results
        .first()
        .map(|r| r.job.params.keys().collect())
        .unwrap_or_default();
    let mut out = String::from("command,mean,stddev,median,user,system,min,max");
    for n in &names {
        out += &format!(",parameter_{n}");
    }
    out.push('\n');
    for r in results.iter().filter(|r| !r.samples.is_empty()) {
        let t = walls(r);
        let cell = |v: f64| format!("{v}");
        let mut line = vec![
            warpt_model::escape::csv(&r.job.name),
            cell(mean(&t)),
            stddev(&t).map_or(String::new(), cell),
            cell(warpt_stats::median(&t)),
            cell(mean(
                &r.samples.iter().map(|s| s.user_s).collect::<Vec<_>>(),
            )),
            cell(mean(&r.samples.iter().map(|s| s.sys_s).collect::<Vec<_>>())),
            cell(t.iter().copied().fold(f64::INFINITY, f64::min)),
            cell(t.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        ];
        for n in &names {
            line.push(warpt_model::escape::csv(
                r.job.params.get(*n).map_or("", String::as_str),
            ));
        }
        out += &line.join(",");
        out.push('\n');
    }
    out
}
