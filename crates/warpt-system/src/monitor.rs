//! The background monitor (`--monitor`): samples CPU, memory, temperatures,
//! RAPL power and NVIDIA GPUs at a fixed interval, and summarises a window.

use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use warpt_model::{GpuSample, MemoryPoint, TelemetrySample, TelemetrySummary, TemperatureReading};

use crate::EnergySnapshot;

/// Shortest interval the monitor accepts.
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// Takes samples; keeps what it needs between them (CPU counters, energy).
pub struct Sampler {
    prev_cpu: Vec<(u64, u64)>,
    prev_energy: Option<(EnergySnapshot, Instant)>,
    prev_dram: Option<(EnergySnapshot, Instant)>,
    nvml: Option<nvml_wrapper::Nvml>,
    missing: Vec<String>,
}

impl Default for Sampler {
    fn default() -> Self {
        Sampler::new()
    }
}

impl Sampler {
    /// A sampler; sources that cannot be read are listed in [`Sampler::missing`].
    pub fn new() -> Self {
        let mut missing = Vec::new();
        let nvml = match nvml_wrapper::Nvml::init() {
            Ok(n) => Some(n),
            Err(e) => {
                missing.push(format!("GPU: NVML unavailable ({e})"));
                None
            }
        };
        let prev_energy = match EnergySnapshot::read() {
            Ok(s) => Some((s, Instant::now())),
            Err(e) => {
                missing.push(format!("power: {e}"));
                None
            }
        };
        let prev_dram = EnergySnapshot::read_dram()
            .ok()
            .map(|s| (s, Instant::now()));
        if temperatures().is_empty() {
            missing.push("temperature: no hwmon or thermal zone sensor".into());
        }
        Sampler {
            prev_cpu: cpu_counters(),
            prev_energy,
            prev_dram,
            nvml,
            missing,
        }
    }

    /// Sources that could not be read, each named once.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// One sample; utilisation and power are averages since the previous one.
    pub fn sample(&mut self) -> TelemetrySample {
        let cpu = cpu_counters();
        let per_core: Vec<f64> = cpu
            .iter()
            .zip(self.prev_cpu.iter())
            .map(|(&(busy, total), &(pb, pt))| {
                let dt = total.saturating_sub(pt);
                if dt == 0 {
                    0.0
                } else {
                    busy.saturating_sub(pb) as f64 * 100.0 / dt as f64
                }
            })
            .collect();
        let (busy, total) = cpu
            .iter()
            .zip(&self.prev_cpu)
            .fold((0u64, 0u64), |(b, t), (&(cb, ct), &(pb, pt))| {
                (b + cb.saturating_sub(pb), t + ct.saturating_sub(pt))
            });
        self.prev_cpu = cpu;
        let mem = crate::memory_quick();
        let (swap_total, swap_free) = swap();
        let package_power_w = power_since(&mut self.prev_energy, EnergySnapshot::read);
        let dram_power_w = power_since(&mut self.prev_dram, EnergySnapshot::read_dram);
        let used = mem.total_bytes.saturating_sub(mem.available_bytes);
        TelemetrySample {
            timestamp: Some(Timestamp::now()),
            cpu_utilization_percent: if total == 0 {
                0.0
            } else {
                busy as f64 * 100.0 / total as f64
            },
            total_memory_bytes: mem.total_bytes,
            memory_utilization_percent: if mem.total_bytes == 0 {
                0.0
            } else {
                used as f64 * 100.0 / mem.total_bytes as f64
            },
            gpu_usage: self.gpus(),
            per_core_utilization_percent: per_core,
            per_core_freq_mhz: per_core_mhz(),
            used_memory_bytes: used,
            available_memory_bytes: mem.available_bytes,
            swap_used_bytes: swap_total.saturating_sub(swap_free),
            temperatures: temperatures(),
            package_power_w,
            dram_power_w,
            process_rss_bytes: crate::rss::tree_rss_bytes(),
        }
    }

    fn gpus(&self) -> Vec<GpuSample> {
        let Some(nvml) = &self.nvml else {
            return Vec::new();
        };
        let count = nvml.device_count().unwrap_or(0);
        (0..count)
            .filter_map(|i| {
                let d = nvml.device_by_index(i).ok()?;
                let util = d.utilization_rates().ok();
                let mem = d.memory_info().ok();
                Some(GpuSample {
                    index: i,
                    model: d.name().unwrap_or_default(),
                    utilization_percent: util.as_ref().map_or(0.0, |u| u.gpu as f64),
                    memory_utilization_percent: util.as_ref().map_or(0.0, |u| u.memory as f64),
                    memory_used_bytes: mem.map(|m| m.used),
                    power_watts: d.power_usage().ok().map(|mw| mw as f64 / 1000.0),
                    temperature_c: d
                        .temperature(nvml_wrapper::enum_wrappers::device::TemperatureSensor::Gpu)
                        .ok()
                        .map(f64::from),
                    sm_clock_mhz: d
                        .clock_info(nvml_wrapper::enum_wrappers::device::Clock::SM)
                        .ok(),
                    throttle_reasons: d
                        .current_throttle_reasons()
                        .map(|r| {
                            r.iter_names()
                                .map(|(n, _)| n.to_string())
                                .filter(|n| n != "GPU_IDLE" && n != "NONE")
                                .collect()
                        })
                        .unwrap_or_default(),
                    guid: d.uuid().unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// The mean power since `prev` (its snapshot and when it was read), from a
/// fresh `read`, which becomes `prev`. A read that fails (a counter being
/// rewritten) gives no figure this time and keeps `prev`, so the next
/// sample covers both intervals.
fn power_since(
    prev: &mut Option<(EnergySnapshot, Instant)>,
    read: fn() -> Result<EnergySnapshot, crate::EnergyUnavailable>,
) -> Option<f64> {
    let (before, at) = prev.as_ref()?;
    let now = read().ok()?;
    let secs = at.elapsed().as_secs_f64();
    let joules = before.joules_until(&now);
    *prev = Some((now, Instant::now()));
    joules.filter(|_| secs > 0.0).map(|j| j / secs)
}

/// (busy, total) jiffies per CPU from /proc/stat.
fn cpu_counters() -> Vec<(u64, u64)> {
    crate::procstat::ProcStat::read()
        .map(|s| s.per_cpu.iter().map(|c| (c.busy(), c.total())).collect())
        .unwrap_or_default()
}

fn swap() -> (u64, u64) {
    let m = crate::host::MemInfo::read();
    (m.get("SwapTotal") * 1024, m.get("SwapFree") * 1024)
}

/// Current MHz of each CPU: cpufreq where present, else /proc/cpuinfo.
fn per_core_mhz() -> Vec<f64> {
    let cpus = crate::allowed_cpus();
    let sys: Vec<f64> = cpus
        .iter()
        .filter_map(|c| {
            fs::read_to_string(format!(
                "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq"
            ))
            .ok()
        })
        .filter_map(|s| s.trim().parse::<f64>().ok().map(|k| k / 1000.0))
        .collect();
    if !sys.is_empty() {
        return sys;
    }
    fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split_once(':')?.1.trim().parse().ok())
        .collect()
}

/// Every hwmon temperature input and thermal zone, in Celsius.
fn temperatures() -> Vec<TemperatureReading> {
    let mut out = Vec::new();
    if let Ok(dirs) = fs::read_dir("/sys/class/hwmon") {
        for dir in dirs.flatten().map(|d| d.path()) {
            let chip = fs::read_to_string(dir.join("name"))
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            let Ok(files) = fs::read_dir(&dir) else {
                continue;
            };
            for f in files.flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                let Some(stem) = name
                    .strip_suffix("_input")
                    .filter(|s| s.starts_with("temp"))
                else {
                    continue;
                };
                let Some(milli) = fs::read_to_string(f.path())
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                else {
                    continue;
                };
                let label = fs::read_to_string(dir.join(format!("{stem}_label")))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| stem.to_string());
                out.push(TemperatureReading {
                    sensor: format!("{chip}/{label}"),
                    celsius: milli / 1000.0,
                });
            }
        }
    }
    if let Ok(zones) = fs::read_dir("/sys/class/thermal") {
        for z in zones.flatten().map(|z| z.path()) {
            let Some(milli) = fs::read_to_string(z.join("temp"))
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
            else {
                continue;
            };
            let kind = fs::read_to_string(z.join("type"))
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            let zone = z
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push(TemperatureReading {
                sensor: format!("{zone}/{kind}"),
                celsius: milli / 1000.0,
            });
        }
    }
    out
}

/// A sampler running on its own thread.
#[derive(Debug)]
pub struct Monitor {
    samples: Arc<Mutex<Vec<TelemetrySample>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Duration>>,
    missing: Vec<String>,
    started: Instant,
}

impl Monitor {
    /// Starts sampling every `interval` (at least [`MIN_INTERVAL`]).
    pub fn start(interval: Duration) -> Monitor {
        let interval = interval.max(MIN_INTERVAL);
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut sampler = Sampler::new();
        let missing = sampler.missing().to_vec();
        let (s2, stop2) = (Arc::clone(&samples), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut cpu = Duration::ZERO;
            let mut next = Instant::now() + interval;
            while !stop2.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now < next {
                    std::thread::park_timeout(next - now);
                    continue;
                }
                next += interval;
                let before = thread_cpu_time();
                let sample = sampler.sample();
                cpu += thread_cpu_time().saturating_sub(before);
                if let Ok(mut v) = s2.lock() {
                    v.push(sample);
                }
            }
            cpu
        });
        Monitor {
            samples,
            stop,
            thread: Some(thread),
            missing,
            started: Instant::now(),
        }
    }

    /// Samples taken so far within `[from, to]`.
    pub fn window(&self, from: Timestamp, to: Timestamp) -> Vec<TelemetrySample> {
        self.samples
            .lock()
            .map(|v| {
                v.iter()
                    .filter(|s| s.timestamp.is_some_and(|t| t >= from && t <= to))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Sources that could not be read.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// Samples taken after the first `from` (for a live feed: pass the
    /// number already seen).
    pub fn since(&self, from: usize) -> Vec<TelemetrySample> {
        self.samples
            .lock()
            .map(|v| v.get(from..).map(<[_]>::to_vec).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Stops sampling; returns every sample and the monitor's own CPU time
    /// as a share of the wall time it ran (its overhead).
    pub fn finish(mut self) -> (Vec<TelemetrySample>, f64) {
        self.stop.store(true, Ordering::Relaxed);
        let cpu = self.thread.take().map(|t| {
            t.thread().unpark();
            t.join().unwrap_or_default()
        });
        let wall = self.started.elapsed().as_secs_f64();
        let samples = self.samples.lock().map(|v| v.clone()).unwrap_or_default();
        (
            samples,
            cpu.map_or(0.0, |c| c.as_secs_f64() / wall.max(1e-9)),
        )
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// CPU time of the calling thread.
fn thread_cpu_time() -> Duration {
    // SAFETY: clock_gettime fills the zeroed timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Summarises the samples of one window of `seconds` that began at
/// `start` (the memory timeline counts from there).
pub fn summarize(
    samples: &[TelemetrySample],
    start: Option<Timestamp>,
    seconds: f64,
    missing: &[String],
) -> TelemetrySummary {
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let energy_sources = crate::power::by_source(samples, start, seconds);
    let energy_j = (!energy_sources.is_empty())
        .then(|| energy_sources.values().map(|e| e.energy_j).sum::<f64>());
    let mean_power_w = (!energy_sources.is_empty())
        .then(|| energy_sources.values().map(|e| e.mean_power_w).sum::<f64>());
    let freqs: Vec<f64> = samples
        .iter()
        .filter_map(|s| mean(&s.per_core_freq_mhz))
        .collect();
    let min_freq = samples
        .iter()
        .flat_map(|s| s.per_core_freq_mhz.iter().copied())
        .reduce(f64::min);
    let first_freq = freqs.first().copied();
    let gpu_throttled = samples
        .iter()
        .any(|s| s.gpu_usage.iter().any(|g| !g.throttle_reasons.is_empty()));
    let cpu_throttled =
        matches!((first_freq, min_freq), (Some(f), Some(m)) if f > 0.0 && m < 0.9 * f);
    let rss: Vec<(Option<Timestamp>, u64)> = samples
        .iter()
        .filter_map(|s| s.process_rss_bytes.map(|r| (s.timestamp, r)))
        .collect();
    let gpu_memory = samples
        .iter()
        .filter_map(|s| {
            let used: Vec<u64> = s
                .gpu_usage
                .iter()
                .filter_map(|g| g.memory_used_bytes)
                .collect();
            (!used.is_empty()).then(|| used.iter().sum::<u64>())
        })
        .max();
    TelemetrySummary {
        samples: samples.len(),
        mean_power_w,
        max_power_w: crate::power::max_power(samples),
        energy_j,
        energy_sources,
        max_temp_c: samples
            .iter()
            .flat_map(|s| s.temperatures.iter().map(|t| t.celsius))
            .reduce(f64::max),
        min_freq_mhz: min_freq,
        mean_freq_mhz: mean(&freqs),
        throttled: gpu_throttled || cpu_throttled,
        energy_per_unit: Default::default(),
        mean_cpu_utilization_percent: mean(
            &samples
                .iter()
                .map(|s| s.cpu_utilization_percent)
                .collect::<Vec<_>>(),
        ),
        notes: missing.to_vec(),
        peak_rss_bytes: rss.iter().map(|&(_, r)| r).max(),
        mean_rss_bytes: (!rss.is_empty())
            .then(|| (rss.iter().map(|&(_, r)| r as f64).sum::<f64>() / rss.len() as f64) as u64),
        peak_gpu_memory_bytes: gpu_memory,
        memory_timeline: memory_timeline(&rss, start),
    }
}

/// Most points a result's memory timeline keeps.
const TIMELINE_POINTS: usize = 200;

/// The resident memory samples as points since `start` (the first
/// sample's time when unknown), thinned to [`TIMELINE_POINTS`] by keeping
/// each stretch's highest sample (a peak is never thinned away).
fn memory_timeline(rss: &[(Option<Timestamp>, u64)], start: Option<Timestamp>) -> Vec<MemoryPoint> {
    let Some(t0) = start.or_else(|| rss.first().and_then(|p| p.0)) else {
        return Vec::new();
    };
    let points: Vec<MemoryPoint> = rss
        .iter()
        .filter_map(|&(t, rss_bytes)| {
            let seconds = (t? - t0).total(jiff::Unit::Second).ok()?;
            Some(MemoryPoint { seconds, rss_bytes })
        })
        .collect();
    let stretch = points.len().div_ceil(TIMELINE_POINTS).max(1);
    points
        .chunks(stretch)
        .filter_map(|c| c.iter().copied().max_by_key(|p| p.rss_bytes))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_at_the_interval_with_plausible_fields() {
        let m = Monitor::start(Duration::from_millis(50));
        let busy = Instant::now();
        while busy.elapsed() < Duration::from_millis(400) {
            std::hint::black_box(0u64);
        }
        let (samples, overhead) = m.finish();
        assert!(
            (5..=10).contains(&samples.len()),
            "{} samples",
            samples.len()
        );
        let s = samples.last().unwrap();
        assert!(s.total_memory_bytes > 0 && s.memory_utilization_percent > 0.0);
        assert!((0.0..=100.0).contains(&s.cpu_utilization_percent));
        assert!(!s.per_core_utilization_percent.is_empty() && !s.per_core_freq_mhz.is_empty());
        assert!(overhead < 0.5, "overhead {overhead}");
        let summary = summarize(&samples, None, 0.4, &[]);
        assert_eq!(summary.samples, samples.len());
        assert!(summary.mean_cpu_utilization_percent.is_some());
        // This process's memory, every sample, and a timeline from the
        // first sample on.
        let peak = summary.peak_rss_bytes.unwrap();
        assert!(
            peak >= summary.mean_rss_bytes.unwrap() && peak > 1 << 20,
            "{peak}"
        );
        assert_eq!(summary.memory_timeline.len(), samples.len());
        assert_eq!(summary.memory_timeline[0].seconds, 0.0);
        assert!(summary.memory_timeline.iter().all(|p| p.rss_bytes <= peak));
    }

    #[test]
    fn every_source_is_summed_and_a_missing_one_is_absent() {
        let t0: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
        let gpu = |w: f64| GpuSample {
            power_watts: Some(w),
            ..GpuSample::default()
        };
        let samples: Vec<TelemetrySample> = [(0, 300.0, 100.0), (1000, 500.0, 100.0)]
            .into_iter()
            .map(|(ms, a, b)| TelemetrySample {
                timestamp: Some(t0 + jiff::SignedDuration::from_millis(ms)),
                package_power_w: Some(50.0),
                gpu_usage: vec![gpu(a), gpu(b)],
                ..TelemetrySample::default()
            })
            .collect();
        let s = summarize(&samples, Some(t0), 2.0, &[]);
        // GPUs 400 W then 600 W over 0..1 s, 600 W held to 2 s: 1100 J;
        // the package 50 W throughout: 100 J. No DRAM reading: no entry.
        assert_eq!(s.energy_sources["gpu"].energy_j, 1100.0);
        assert_eq!(s.energy_sources["cpu_package"].energy_j, 100.0);
        assert!(!s.energy_sources.contains_key("dram"));
        assert_eq!(s.energy_j, Some(1200.0));
        assert_eq!(s.mean_power_w, Some(600.0));
        assert_eq!(s.max_power_w, Some(650.0));
        let none = summarize(&[], None, 2.0, &[]);
        assert_eq!((none.energy_j, none.mean_power_w), (None, None));
    }
}
