//! `warpt monitor`: the monitor's samples on the terminal, as NDJSON, or
//! served in the Prometheus text format (by `warpt_server::exporter`).

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
        warpt_server::exporter::serve_prometheus(listener, Arc::clone(&latest))?;
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
