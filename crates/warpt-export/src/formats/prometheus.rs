//! The Prometheus text exposition format: one gauge per reading of a
//! telemetry sample (`warpt monitor --prometheus`).

use warpt_model::TelemetrySample;

use crate::format::{Document, ExportError, Format, Telemetry};

/// The Prometheus text exposition format, version 0.0.4.
pub struct Prometheus;

impl Prometheus {
    /// The HTTP content type of the format.
    pub const CONTENT_TYPE: &'static str = "text/plain; version=0.0.4";

    /// `s` as gauges, `warpt_` before each name.
    pub fn text(&self, s: &TelemetrySample) -> String {
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
}

impl Format<Telemetry> for Prometheus {
    fn render(&self, input: &TelemetrySample) -> Result<Document, ExportError> {
        Ok(Document::Text(self.text(input)))
    }
}
