//! `warpt monitor --prometheus`: the latest telemetry sample in the
//! Prometheus text exposition format, served on axum at every path.

use std::sync::{Arc, Mutex};

use warpt_model::TelemetrySample;

/// The latest sample in the Prometheus text exposition format.
pub fn prometheus(s: &TelemetrySample) -> String {
    let mut o = String::new();
    let mut gauge = |name: &str, help: &str, lines: Vec<(String, f64)>| {
        o += &format!("# HELP warpt_{name} {help}\n# TYPE warpt_{name} gauge\n");
        for (labels, v) in lines {
            o += &format!("warpt_{name}{labels} {v}\n");
        }
    };
    gauge(
        "cpu_utilization_percent",
        "CPU busy time, all CPUs.",
        vec![(String::new(), s.cpu_utilization_percent)],
    );
    gauge(
        "cpu_core_utilization_percent",
        "CPU busy time per CPU.",
        s.per_core_utilization_percent
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{{cpu=\"{i}\"}}"), *v))
            .collect(),
    );
    gauge(
        "cpu_core_frequency_mhz",
        "Current frequency per CPU.",
        s.per_core_freq_mhz
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{{cpu=\"{i}\"}}"), *v))
            .collect(),
    );
    gauge(
        "memory_total_bytes",
        "Installed memory.",
        vec![(String::new(), s.total_memory_bytes as f64)],
    );
    gauge(
        "memory_used_bytes",
        "Memory in use.",
        vec![(String::new(), s.used_memory_bytes as f64)],
    );
    if let Some(p) = s.package_power_w {
        gauge(
            "package_power_watts",
            "CPU package power (RAPL).",
            vec![(String::new(), p)],
        );
    }
    gauge(
        "temperature_celsius",
        "Temperature sensors.",
        s.temperatures
            .iter()
            .map(|t| {
                (
                    format!("{{sensor=\"{}\"}}", t.sensor.replace('"', "'")),
                    t.celsius,
                )
            })
            .collect(),
    );
    gauge(
        "gpu_utilization_percent",
        "GPU busy (NVML).",
        s.gpu_usage
            .iter()
            .map(|g| {
                (
                    format!("{{gpu=\"{}\",uuid=\"{}\"}}", g.index, g.guid),
                    g.utilization_percent,
                )
            })
            .collect(),
    );
    o
}

/// Serves `latest` (rendered by [`prometheus`]) on `listener` from a
/// background thread, until the process ends.
pub fn serve_prometheus(
    listener: std::net::TcpListener,
    latest: Arc<Mutex<Option<TelemetrySample>>>,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let app = axum::Router::new().fallback(move || {
                let latest = Arc::clone(&latest);
                async move {
                    let body = latest
                        .lock()
                        .ok()
                        .and_then(|l| l.as_ref().map(prometheus))
                        .unwrap_or_default();
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4",
                        )],
                        body,
                    )
                }
            });
            crate::listen::serve(listener, app, crate::listen::LIMITS, std::future::pending())
                .await;
        });
    });
    Ok(())
}
