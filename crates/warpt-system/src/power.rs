//! Energy over a window from the monitor's power samples: each source's
//! readings integrated by trapezoids over the samples' timestamps.
//!
//! A RAPL reading is the mean power since the previous sample (the counter's
//! difference over the interval) and an NVML reading the board's power at
//! that moment; both are taken as the power at the sample's time. Between
//! two samples the power moves linearly; before the window's first sample
//! and after its last, it is held at that sample's value, so a window that
//! caught one sample still gets `power x length`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use warpt_model::{SourceEnergy, TelemetrySample};

/// The integral of `points` (seconds since the window's start, watts; in
/// time order) over `[0, length]`, joules. `None` without a point.
pub fn trapezoid(points: &[(f64, f64)], length: f64) -> Option<f64> {
    let (first, last) = (points.first()?, points.last()?);
    let mut joules = first.1 * first.0.clamp(0.0, length);
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        joules += (a.1 + b.1) / 2.0 * (b.0 - a.0).max(0.0);
    }
    joules += last.1 * (length - last.0.clamp(0.0, length));
    Some(joules)
}

/// A source's power in one sample, watts, if the sample read it.
fn reading(source: &str, s: &TelemetrySample) -> Option<f64> {
    match source {
        "cpu_package" => s.package_power_w,
        "dram" => s.dram_power_w,
        "gpu" => {
            let w: Vec<f64> = s.gpu_usage.iter().filter_map(|g| g.power_watts).collect();
            (!w.is_empty()).then(|| w.iter().sum())
        }
        _ => None,
    }
}

/// Each source's energy over the window that began at `start` (the first
/// sample's time when unknown) and lasted `seconds`: only the sources some
/// sample read, by name ([`warpt_model::ENERGY_SOURCES`]).
pub fn by_source(
    samples: &[TelemetrySample],
    start: Option<Timestamp>,
    seconds: f64,
) -> BTreeMap<String, SourceEnergy> {
    let mut out = BTreeMap::new();
    let Some(t0) = start.or_else(|| samples.iter().find_map(|s| s.timestamp)) else {
        return out;
    };
    let at = |s: &TelemetrySample| {
        s.timestamp
            .and_then(|t| (t - t0).total(jiff::Unit::Second).ok())
    };
    for source in warpt_model::ENERGY_SOURCES {
        let points: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|s| Some((at(s)?, reading(source, s)?)))
            .collect();
        let Some(energy_j) = trapezoid(&points, seconds) else {
            continue;
        };
        let mean_power_w = if seconds > 0.0 {
            energy_j / seconds
        } else {
            points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64
        };
        out.insert(
            source.to_string(),
            SourceEnergy {
                energy_j,
                mean_power_w,
                samples: points.len(),
            },
        );
    }
    out
}

/// The highest power of one sample, every source it read summed.
pub fn max_power(samples: &[TelemetrySample]) -> Option<f64> {
    samples
        .iter()
        .filter_map(|s| {
            let w: Vec<f64> = warpt_model::ENERGY_SOURCES
                .iter()
                .filter_map(|src| reading(src, s))
                .collect();
            (!w.is_empty()).then(|| w.iter().sum::<f64>())
        })
        .reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_model::GpuSample;

    #[test]
    fn trapezoids_with_the_edges_held() {
        // 100 W at 1 s rising to 300 W at 3 s, window 0..4 s: 100 W held for
        // the first second, 400 J between the samples, 300 W for the last.
        let e = trapezoid(&[(1.0, 100.0), (3.0, 300.0)], 4.0).unwrap();
        assert!((e - (100.0 + 400.0 + 300.0)).abs() < 1e-9, "{e}");
        // One sample: its power over the whole window.
        assert_eq!(trapezoid(&[(0.5, 50.0)], 2.0), Some(100.0));
        assert_eq!(trapezoid(&[], 2.0), None);
    }

    #[test]
    fn each_source_over_the_samples_timestamps() {
        let t0: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
        let at = |ms: i64| t0 + jiff::SignedDuration::from_millis(ms);
        let gpu = |w: f64| GpuSample {
            power_watts: Some(w),
            ..GpuSample::default()
        };
        // Uneven timestamps (0.5, 1.0, 2.5 s): a mean of the readings would
        // weigh the short interval like the long one.
        let samples = vec![
            TelemetrySample {
                timestamp: Some(at(500)),
                package_power_w: Some(60.0),
                gpu_usage: vec![gpu(300.0), gpu(100.0)],
                ..TelemetrySample::default()
            },
            TelemetrySample {
                timestamp: Some(at(1000)),
                package_power_w: Some(80.0),
                dram_power_w: Some(10.0),
                // An NVML read that failed is no reading, not 0 W.
                gpu_usage: vec![GpuSample::default()],
                ..TelemetrySample::default()
            },
            TelemetrySample {
                timestamp: Some(at(2500)),
                package_power_w: Some(40.0),
                dram_power_w: Some(10.0),
                gpu_usage: vec![gpu(500.0), gpu(100.0)],
                ..TelemetrySample::default()
            },
        ];
        let e = by_source(&samples, Some(t0), 3.0);
        // Package: 60x0.5 + (60+80)/2x0.5 + (80+40)/2x1.5 + 40x0.5.
        let pkg = 30.0 + 35.0 + 90.0 + 20.0;
        assert!((e["cpu_package"].energy_j - pkg).abs() < 1e-9);
        assert!((e["cpu_package"].mean_power_w - pkg / 3.0).abs() < 1e-9);
        // DRAM from its first reading at 1 s: held back to 0 s.
        assert!((e["dram"].energy_j - 30.0).abs() < 1e-9);
        // Two GPUs summed per sample (400 W, then 600 W), the middle sample
        // skipped: 400x0.5 + 500x2.0 + 600x0.5.
        assert!((e["gpu"].energy_j - 1500.0).abs() < 1e-9);
        assert_eq!(e["gpu"].samples, 2);
        assert_eq!(max_power(&samples), Some(650.0));
        assert!(by_source(&[], Some(t0), 3.0).is_empty());
    }
}
