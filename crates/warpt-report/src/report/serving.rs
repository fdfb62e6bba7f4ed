//! Latency against throughput for serving sweeps (`llm_serve`, run at
//! several concurrencies or rates): one point per sweep entry at the
//! requests/s it got through, its p50 with a whisker to its p99, the SLO
//! as a dashed line, and the knee — the entry with the most goodput, past
//! which more load only breaks the SLO — marked.

use warpt_model::{BenchmarkRunResult, ParamValue};

use super::Input;
use super::chart_data::Curve;
use super::charts;

/// The latency metrics drawn, with the SLO parameter bounding each.
const LATENCIES: [(&str, &str); 3] = [
    ("ttft_ms", "slo_ttft_ms"),
    ("tpot_ms", "slo_tpot_ms"),
    ("request_latency_ms", "slo_latency_ms"),
];

fn metric(r: &BenchmarkRunResult, name: &str) -> Option<f64> {
    r.value_of(name).filter(|v| v.is_finite())
}

fn slo(r: &BenchmarkRunResult, key: &str) -> Option<f64> {
    r.params
        .get(key)
        .and_then(ParamValue::as_f64)
        .filter(|v| *v > 0.0)
}

/// The charts, one per run and latency metric with two or more entries.
pub(super) fn serving_charts(input: &Input) -> String {
    let mut out = String::new();
    for (label, run) in &input.runs {
        let mut ids: Vec<String> = Vec::new();
        for r in &run.benchmarks {
            let id = r.spec.id.to_string();
            if r.spec.id.name == "llm_serve" && !ids.contains(&id) {
                ids.push(id);
            }
        }
        for id in ids {
            let entries: Vec<&BenchmarkRunResult> = run
                .benchmarks
                .iter()
                .filter(|r| r.spec.id.to_string() == id && metric(r, "requests_per_s").is_some())
                .collect();
            if entries.len() < 2 {
                continue;
            }
            // The knee: the entry with the most goodput, when an SLO was set.
            let knee = entries
                .iter()
                .filter(|r| LATENCIES.iter().any(|(_, s)| slo(r, s).is_some()))
                .filter_map(|r| {
                    Some((
                        metric(r, "requests_per_s")?,
                        metric(r, "goodput_requests_per_s")?,
                    ))
                })
                .filter(|(_, good)| *good > 0.0)
                .max_by(|a, b| a.1.total_cmp(&b.1));
            for (name, slo_key) in LATENCIES {
                let mut points: Vec<(f64, f64, f64)> = entries
                    .iter()
                    .filter_map(|r| {
                        let x = metric(r, "requests_per_s")?;
                        let m = r.metric(name)?;
                        let st = m.stats.as_ref()?;
                        Some((x, st.p50, st.p99))
                    })
                    .collect();
                if points.len() < 2 {
                    continue;
                }
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                let curve = Curve {
                    name: format!("{name} p50 (whisker: p99)"),
                    points,
                };
                let bound = entries.iter().find_map(|r| slo(r, slo_key));
                let knee_mark = knee.map(|(x, good)| {
                    (
                        x,
                        format!("knee: {} good requests/s", crate::render::num(good)),
                    )
                });
                out += &format!(
                    "<figure class=\"serving\">{}</figure>\n",
                    charts::latency_curve(
                        &format!("{label}: {id} {name} against throughput"),
                        "requests/s",
                        "ms",
                        &curve,
                        bound,
                        knee_mark,
                    )
                );
            }
        }
    }
    out
}
