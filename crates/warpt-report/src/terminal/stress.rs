//! `warpt stress`: how a stress run went.

use warpt_model::StressRun;

/// Throughput over time, checks and errors, warnings and telemetry.
pub fn stress(r: &StressRun) -> String {
    let values: Vec<String> = r
        .throughput
        .iter()
        .map(|p| format!("{:.1}", p.value))
        .collect();
    let mut o = format!(
        "stress {}: {:.1} s, throughput per second ({}): {}\n",
        r.target,
        r.duration_s,
        r.unit,
        values.join(" ")
    );
    o += &format!(
        "{}: {} checks, {} errors\n",
        if r.passed { "PASSED" } else { "FAILED" },
        r.checks,
        r.errors
    );
    for e in &r.error_examples {
        o += &format!("  error: {e}\n");
    }
    for w in &r.warnings {
        o += &format!("  warning: {w}\n");
    }
    if let Some(t) = &r.telemetry {
        o += &format!(
            "  telemetry: {} samples, mean CPU {:.0}%, frequency {} MHz, power {}, max temperature {}\n",
            t.samples,
            t.mean_cpu_utilization_percent.unwrap_or(0.0),
            t.mean_freq_mhz.map_or("?".into(), |f| format!("{f:.0}")),
            t.mean_power_w
                .map_or("unreadable".into(), |p| format!("{p:.1} W")),
            t.max_temp_c
                .map_or("unreadable".into(), |c| format!("{c:.0} C"))
        );
    }
    o
}
