//! `warpt monitor`: the monitor's samples on the terminal, as NDJSON, or
//! served in the Prometheus text format.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use warpt_model::TelemetrySample;
use warpt_system::monitor::Sampler;

use crate::cli::MonitorArgs;
use crate::{Outcome, UsageError};

/// Samples every `--interval` until `--duration` passes (or forever).
pub fn run(args: &MonitorArgs) -> Result<Outcome> {
    let interval = Duration::from_secs_f64(args.interval);
    let latest: Arc<Mutex<Option<TelemetrySample>>> = Arc::new(Mutex::new(None));
    if let Some(addr) = &args.prometheus {
        let listener = TcpListener::bind(addr)
            .map_err(|e| UsageError(format!("cannot listen on '{addr}' for --prometheus: {e}")))?;
        eprintln!(
            "serving Prometheus metrics on http://{}/metrics",
            listener.local_addr()?
        );
        let latest = Arc::clone(&latest);
        std::thread::spawn(move || serve(listener, latest));
    }
    let mut sampler = Sampler::new();
    for m in sampler.missing() {
        eprintln!("monitor: {m}");
    }
    let start = Instant::now();
    let mut next = start + interval;
    loop {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next += interval;
        let s = sampler.sample();
        if args.json {
            println!("{}", serde_json::to_string(&s)?);
        } else {
            let freq =
                s.per_core_freq_mhz.iter().sum::<f64>() / s.per_core_freq_mhz.len().max(1) as f64;
            let temp = s.temperatures.iter().map(|t| t.celsius).reduce(f64::max);
            eprintln!(
                "cpu {:5.1}%  mem {:5.1}%  {:6.0} MHz  power {}  temp {}  gpus {}",
                s.cpu_utilization_percent,
                s.memory_utilization_percent,
                freq,
                s.package_power_w
                    .map_or("-".into(), |p| format!("{p:.1} W")),
                temp.map_or("-".into(), |t| format!("{t:.0} C")),
                s.gpu_usage.len()
            );
        }
        if let Ok(mut l) = latest.lock() {
            *l = Some(s);
        }
        if args
            .duration
            .is_some_and(|d| start.elapsed().as_secs_f64() >= d)
        {
            return Ok(Outcome::Success);
        }
    }
}

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

fn serve(listener: TcpListener, latest: Arc<Mutex<Option<TelemetrySample>>>) {
    for stream in listener.incoming().flatten() {
        let mut stream = stream;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        // Read the request head; every path gets the metrics.
        let mut reader = BufReader::new(match stream.try_clone() {
            Ok(s) => s,
            Err(_) => continue,
        });
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
            line.clear();
        }
        let body = latest
            .lock()
            .ok()
            .and_then(|l| l.as_ref().map(prometheus))
            .unwrap_or_default();
        let _ = write!(
            stream,
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    }
}
