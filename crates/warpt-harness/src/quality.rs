//! Noise diagnostics: how far a result can be trusted given the host's
//! state before and during its measurement.

use warpt_model::{BenchmarkRunResult, Quality, RunStatus};
use warpt_system::procstat::Measured;

use crate::supervisor::FreqTrace;

/// A frequency drop beyond this share of the start makes a result noisy.
const FREQ_DROP_NOISY: f64 = 0.10;
/// A frequency drop beyond this share makes it unreliable.
const FREQ_DROP_UNRELIABLE: f64 = 0.25;
/// Other processes' share of the CPUs, measured just before a run, above
/// which the run warns that it starts on a busy machine.
pub const FOREIGN_AT_START_WARN: f64 = 0.10;
/// How long the start check measures other processes' CPU time.
const START_PROBE: std::time::Duration = std::time::Duration::from_millis(200);

/// The host's state when the run started.
#[derive(Debug, Clone, Default)]
pub struct HostConditions {
    /// cpufreq governor, where there is one.
    pub governor: Option<String>,
    /// 1-minute load average at the start (recorded, not graded: it still
    /// holds the load of whatever ran in the last minutes, warpt included).
    pub load1: Option<f64>,
    /// Share of the machine's CPUs that other processes used just before
    /// the run (measured over 0.2 s).
    pub foreign_share: Option<f64>,
    /// CPUs this process may use.
    pub cores: usize,
    /// `debug` or `release`.
    pub build_profile: String,
}

impl HostConditions {
    /// Reads the host's state now.
    pub fn capture(build_profile: &str) -> Self {
        Self::capture_while(build_profile, || ()).0
    }

    /// Reads the host's state now, doing `meanwhile` (this process's other
    /// start-up work: reading the machine) in the 0.2 s the probe of other
    /// processes' CPU time waits anyway. That work's CPU time, its reaped
    /// children's included, is this process's own, never counted as other
    /// processes'; the probe ends only after it, and no sooner than 0.2 s.
    pub fn capture_while<T>(build_profile: &str, meanwhile: impl FnOnce() -> T) -> (Self, T) {
        let started = std::time::Instant::now();
        let window = warpt_system::procstat::Window::start(Measured::ThisProcess);
        let out = meanwhile();
        std::thread::sleep(START_PROBE.saturating_sub(started.elapsed()));
        let foreign_share = window
            .and_then(|w| w.finish())
            .and_then(|f| f.foreign_cpu_share);
        let host = HostConditions {
            governor: warpt_system::governor(),
            load1: warpt_system::load_average().map(|l| l[0]),
            foreign_share,
            cores: warpt_system::allowed_cpus().len(),
            build_profile: build_profile.to_string(),
        };
        (host, out)
    }

    /// Warnings about the start state: a governor other than `performance`,
    /// other processes busy on the CPUs.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(g) = &self.governor
            && g != "performance"
        {
            w.push(format!(
                "CPU frequency governor is '{g}', not 'performance': clocks may ramp during measurement"
            ));
        }
        if let Some(share) = self.foreign_share
            && share > FOREIGN_AT_START_WARN
        {
            w.push(format!(
                "other processes are using {:.0}% of the CPUs: they compete with the benchmarks \
                 (each result's quality says how much they took while it measured)",
                share * 100.0
            ));
        }
        if self.build_profile == "debug" {
            w.push("this is a debug build of warpt: kernels are not optimised".into());
        }
        w
    }
}

/// A result's grade.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// The grade (a debug build is always `unreliable`).
    pub quality: Quality,
    /// The grade of the measurement conditions alone, leaving out the build
    /// profile and single metrics' precision (see
    /// [`warpt_model::BenchmarkRunResult::measurement_quality`]).
    pub measurement_quality: Quality,
    /// Why the grade is not `good`: the build, then the reasons for
    /// `unreliable` (conditions before single metrics), then the rest.
    pub reasons: Vec<String>,
}

/// Reasons for `noisy` and for `unreliable`, in that order.
#[derive(Default)]
struct Grades {
    noisy: Vec<String>,
    unreliable: Vec<String>,
}

impl Grades {
    fn quality(&self) -> Quality {
        if !self.unreliable.is_empty() {
            Quality::Unreliable
        } else if !self.noisy.is_empty() {
            Quality::Noisy
        } else {
            Quality::Good
        }
    }
}

/// What disturbed the whole measurement: governor, interference, frequency,
/// a host regime the probes saw.
fn conditions(result: &BenchmarkRunResult, host: &HostConditions, freq: FreqTrace) -> Grades {
    let mut g = Grades::default();
    if let Some(gov) = &host.governor
        && gov != "performance"
    {
        g.noisy
            .push(format!("governor '{gov}' is not 'performance'"));
    }
    // The unreliable reasons in the order `compare` reads them: first what
    // holds back a verdict on one run a side (other processes, the clock
    // falling), then what it weighs by its reach instead (the hypervisor's
    // steal, a regime), so the first reason says whether anything of the
    // first kind was seen.
    let mut steal = Vec::new();
    if let Some(i) = &result.interference {
        let (n, u) = crate::interference::grade(i);
        g.noisy.extend(n);
        let (s, rest): (Vec<String>, Vec<String>) = u
            .into_iter()
            .partition(|r| r.starts_with(warpt_model::STEAL_PREFIX));
        g.unreliable.extend(rest);
        steal = s;
    }
    if let (Some(start), Some(min)) = (freq.start_mhz, freq.min_mhz)
        && start > 0.0
    {
        let drop = 1.0 - min / start;
        let msg = format!(
            "CPU frequency fell {:.0}% during measurement ({start:.0} -> {min:.0} MHz)",
            drop * 100.0
        );
        if drop > FREQ_DROP_UNRELIABLE {
            g.unreliable.push(msg);
        } else if drop > FREQ_DROP_NOISY {
            g.noisy.push(msg);
        }
    }
    g.unreliable.extend(steal);
    if let Some(regime) = &result.regime {
        // A clock swing moves every figure; a shortfall of threads or a
        // moved cache canary moves some, and `compare` holds back those.
        g.unreliable.extend(regime.speed_reason());
        g.noisy.extend(regime.scaling_reasons());
        g.noisy.extend(regime.canary_reasons());
        g.noisy.extend(regime.bandwidth_reason());
    }
    if result.status != RunStatus::Passed && result.metrics.is_empty() {
        g.unreliable
            .push(format!("no measurement: the benchmark {}", result.status));
    }
    g
}

/// How well each metric's median is known.
fn precision(result: &BenchmarkRunResult, target_rel_ci: f64) -> Grades {
    let mut g = Grades::default();
    for m in &result.metrics {
        let Some(st) = &m.stats else { continue };
        let half = st.relative_half_width();
        let what = format!("{} {}", m.name, m.tag_label());
        if half > warpt_model::UNRELIABLE_REL_CI {
            g.unreliable.push(format!(
                "{what}: median known only to ±{:.1}%",
                half * 100.0
            ));
        } else if half > target_rel_ci && m.value == st.median {
            g.noisy.push(format!(
                "{what}: precision target missed (±{:.2}% > ±{:.2}%)",
                half * 100.0,
                target_rel_ci * 100.0
            ));
        }
    }
    g
}

/// Grades `result` and lists the reasons, from the build, the frequency and
/// interference (`result.interference`) seen while measuring, and the spread
/// of its samples.
pub fn assess(
    result: &BenchmarkRunResult,
    host: &HostConditions,
    freq: FreqTrace,
    target_rel_ci: f64,
) -> Assessment {
    let cond = conditions(result, host, freq);
    let prec = precision(result, target_rel_ci);
    let measurement_quality = cond.quality();
    let debug = host.build_profile == "debug";
    let mut reasons = Vec::new();
    if debug {
        reasons.push(warpt_model::DEBUG_BUILD_REASON.to_string());
    }
    let worst = measurement_quality.max(prec.quality());
    reasons.extend(cond.unreliable);
    reasons.extend(prec.unreliable);
    reasons.extend(cond.noisy);
    reasons.extend(prec.noisy);
    Assessment {
        quality: if debug { Quality::Unreliable } else { worst },
        measurement_quality,
        reasons,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use warpt_model::BenchmarkSpec;

    /// A passed result of a benchmark `s/b` without metrics (shared by the
    /// harness's tests).
    pub(crate) fn result() -> BenchmarkRunResult {
        let spec = BenchmarkSpec::builder("s", "b").build();
        BenchmarkRunResult::new(
            spec,
            Default::default(),
            RunStatus::Passed,
            jiff::Timestamp::now(),
        )
    }

    fn host() -> HostConditions {
        HostConditions {
            governor: Some("performance".into()),
            load1: Some(0.1),
            foreign_share: Some(0.0),
            cores: 2,
            build_profile: "release".into(),
        }
    }

    #[test]
    fn grades_follow_the_evidence() {
        let mut r = result();
        assert_eq!(
            assess(&r, &host(), FreqTrace::default(), 0.01).quality,
            Quality::Good
        );
        // A high load average alone is no longer evidence: it lags.
        let busy = HostConditions {
            governor: Some("powersave".into()),
            load1: Some(1.5),
            foreign_share: Some(0.6),
            ..host()
        };
        r.interference = Some(warpt_model::Interference {
            window_s: 2.0,
            cpus: 2,
            steal_share: Some(0.03),
            foreign_cpu_s: Some(0.1),
            foreign_cpu_share: Some(0.025),
            ..Default::default()
        });
        let a = assess(&r, &busy, FreqTrace::default(), 0.01);
        let (q, why) = (a.quality, a.reasons);
        assert_eq!(q, Quality::Noisy);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[1].starts_with("steal: "), "{why:?}");
        assert_eq!(busy.warnings().len(), 2);
        r.interference = None;
        let throttled = FreqTrace {
            start_mhz: Some(3000.0),
            min_mhz: Some(2000.0),
        };
        assert_eq!(
            assess(&r, &host(), throttled, 0.01).quality,
            Quality::Unreliable
        );
        let debug = HostConditions {
            build_profile: "debug".into(),
            ..host()
        };
        let a = assess(&r, &debug, FreqTrace::default(), 0.01);
        assert_eq!(a.quality, Quality::Unreliable);
        assert_eq!(
            a.measurement_quality,
            Quality::Good,
            "the build is not noise"
        );
        assert_eq!(a.reasons, vec![warpt_model::DEBUG_BUILD_REASON]);
        // Steal comes after what `compare` holds back on (other processes,
        // a falling clock): its first reason says whether only steal was seen.
        r.interference = Some(warpt_model::Interference {
            window_s: 2.0,
            cpus: 2,
            steal_share: Some(0.14),
            foreign_cpu_s: Some(2.0),
            foreign_cpu_share: Some(0.5),
            ..Default::default()
        });
        let why = assess(&r, &host(), throttled, 0.01).reasons;
        assert!(why[0].starts_with("foreign_cpu: "), "{why:?}");
        assert!(why[1].starts_with("CPU frequency fell"), "{why:?}");
        assert!(why[2].starts_with(warpt_model::STEAL_PREFIX), "{why:?}");
        r.interference = None;
        // A regime the probes saw makes the conditions unreliable.
        r.regime = Some(warpt_model::RegimeProbes {
            clock_mhz: vec![3200.0, 2800.0],
            ..Default::default()
        });
        let a = assess(&r, &host(), FreqTrace::default(), 0.01);
        assert_eq!(a.measurement_quality, Quality::Unreliable);
        assert!(
            a.reasons[0].starts_with(warpt_model::REGIME_PREFIX),
            "{a:?}"
        );
        r.regime = None;
        // A poorly known metric makes the result unreliable, not its
        // conditions: its neighbours stay comparable.
        let samples: Vec<f64> = (0..20).map(|i| [1.0, 2.0, 3.0][i % 3]).collect();
        r.metrics.push(warpt_model::BenchmarkMetric {
            name: "t".into(),
            value: 2.0,
            unit: "s".into(),
            higher_is_better: false,
            tags: Default::default(),
            stats: warpt_model::MetricStats::summarize(&samples),
        });
        let a = assess(&r, &host(), FreqTrace::default(), 0.01);
        assert_eq!(a.quality, Quality::Unreliable);
        assert_eq!(a.measurement_quality, Quality::Good);
        assert!(a.reasons[0].contains("median known only to"), "{a:?}");
    }
}
