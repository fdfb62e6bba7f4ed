//! Where a run's files go: the export's default name, and the monitor's
//! timeline. Writing them is warpt-export's [`ExportTarget`].

use anyhow::Result;
use warpt_export::ExportTarget;

/// The default export file name for a plan label, e.g.
/// `warpt_benchmark_micro_20261122_013000_a1b2c3.json`.
pub fn default_file_name(label: &str) -> String {
    let now = jiff::Timestamp::now();
    format!(
        "warpt_benchmark_{}_{}_{}.json",
        sanitize(label),
        now.strftime("%Y%m%d_%H%M%S"),
        warpt_harness::random_suffix()
    )
}

fn sanitize(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Says what the monitor cost (its own CPU time, `overhead`, a share of
/// one core) and writes its `timeline` to `target` (`--monitor-output`),
/// if one was given.
pub fn finish_timeline(
    timeline: &[warpt_model::TelemetrySample],
    overhead: f64,
    target: Option<ExportTarget>,
) -> Result<()> {
    eprintln!(
        "monitor: {} samples; its own CPU time was {:.3}% of one core",
        timeline.len(),
        overhead * 100.0
    );
    if let Some(target) = target {
        let shown = target.path().display().to_string();
        target.write_json(&timeline)?;
        eprintln!("monitor timeline written to {shown}");
    }
    Ok(())
}
