//! Noise diagnostics: how far a result can be trusted given the host's
//! state before and during its measurement.

use warpt_model::{BenchmarkRunResult, Quality, RunStatus};

use crate::supervisor::FreqTrace;

/// A frequency drop beyond this share of the start makes a result noisy.
const FREQ_DROP_NOISY: f64 = 0.10;
/// A frequency drop beyond this share makes it unreliable.
const FREQ_DROP_UNRELIABLE: f64 = 0.25;
/// A median CI half-width beyond this makes a result unreliable.
const CI_UNRELIABLE: f64 = 0.10;
/// Load average per core above which a run starts on a busy machine.
pub const LOAD_PER_CORE_NOISY: f64 = 0.5;

/// The host's state when the run started.
#[derive(Debug, Clone, Default)]
pub struct HostConditions {
    /// cpufreq governor, where there is one.
    pub governor: Option<String>,
    /// 1-minute load average at the start.
    pub load1: Option<f64>,
    /// CPUs this process may use.
    pub cores: usize,
    /// `debug` or `release`.
    pub build_profile: String,
}

impl HostConditions {
    /// Reads the host's state now.
    pub fn capture(build_profile: &str) -> Self {
        HostConditions {
            governor: warpt_system::governor(),
            load1: warpt_system::load_average().map(|l| l[0]),
            cores: warpt_system::allowed_cpus().len(),
            build_profile: build_profile.to_string(),
        }
    }

    /// Warnings about the start state: a governor other than `performance`,
    /// a 1-minute load average above half the cores.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(g) = &self.governor
            && g != "performance"
        {
            w.push(format!(
                "CPU frequency governor is '{g}', not 'performance': clocks may ramp during measurement"
            ));
        }
        if let Some(load) = self.load1
            && load > LOAD_PER_CORE_NOISY * self.cores as f64
        {
            w.push(format!(
                "1-minute load average {load:.2} exceeds {:.1} ({} CPUs x {LOAD_PER_CORE_NOISY}): other work competes for the CPUs",
                LOAD_PER_CORE_NOISY * self.cores as f64,
                self.cores
            ));
        }
        if self.build_profile == "debug" {
            w.push("this is a debug build of warpt: kernels are not optimised".into());
        }
        w
    }
}

/// Grades `result` and lists the reasons, from the start conditions, the
/// frequency seen while measuring and the spread of its samples.
pub fn assess(
    result: &BenchmarkRunResult,
    host: &HostConditions,
    freq: FreqTrace,
    target_rel_ci: f64,
) -> (Quality, Vec<String>) {
    let mut noisy = Vec::new();
    let mut unreliable = Vec::new();
    if host.build_profile == "debug" {
        unreliable.push("debug build: the figures measure unoptimised code".to_string());
    }
    if let Some(g) = &host.governor
        && g != "performance"
    {
        noisy.push(format!("governor '{g}' is not 'performance'"));
    }
    if let Some(load) = host.load1
        && load > LOAD_PER_CORE_NOISY * host.cores as f64
    {
        noisy.push(format!(
            "load average {load:.2} at start on {} CPUs",
            host.cores
        ));
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
            unreliable.push(msg);
        } else if drop > FREQ_DROP_NOISY {
            noisy.push(msg);
        }
    }
    for m in &result.metrics {
        let Some(st) = &m.stats else { continue };
        let half = st.relative_half_width();
        let what = format!("{} {}", m.name, m.tag_label());
        if half > CI_UNRELIABLE {
            unreliable.push(format!(
                "{what}: median known only to ±{:.1}%",
                half * 100.0
            ));
        } else if half > target_rel_ci && m.value == st.median {
            noisy.push(format!(
                "{what}: precision target missed (±{:.2}% > ±{:.2}%)",
                half * 100.0,
                target_rel_ci * 100.0
            ));
        }
    }
    if result.status != RunStatus::Passed && result.metrics.is_empty() {
        unreliable.push(format!("no measurement: the benchmark {}", result.status));
    }
    if !unreliable.is_empty() {
        unreliable.extend(noisy);
        (Quality::Unreliable, unreliable)
    } else if !noisy.is_empty() {
        (Quality::Noisy, noisy)
    } else {
        (Quality::Good, Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_model::{BenchmarkId, BenchmarkKind, BenchmarkSpec};

    fn result() -> BenchmarkRunResult {
        let spec = BenchmarkSpec {
            id: BenchmarkId::new("s", "b"),
            components: vec![],
            kind: BenchmarkKind::Synthetic,
            description: None,
            default_duration_seconds: None,
            external_tool: None,
            params: Default::default(),
            param_help: Default::default(),
            timeouts: Default::default(),
            metrics: vec![],
        };
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
            cores: 2,
            build_profile: "release".into(),
        }
    }

    #[test]
    fn grades_follow_the_evidence() {
        let r = result();
        assert_eq!(
            assess(&r, &host(), FreqTrace::default(), 0.01).0,
            Quality::Good
        );
        let busy = HostConditions {
            governor: Some("powersave".into()),
            load1: Some(1.5),
            ..host()
        };
        let (q, why) = assess(&r, &busy, FreqTrace::default(), 0.01);
        assert_eq!(q, Quality::Noisy);
        assert_eq!(why.len(), 2, "{why:?}");
        assert_eq!(busy.warnings().len(), 2);
        let throttled = FreqTrace {
            start_mhz: Some(3000.0),
            min_mhz: Some(2000.0),
        };
        assert_eq!(assess(&r, &host(), throttled, 0.01).0, Quality::Unreliable);
        let debug = HostConditions {
            build_profile: "debug".into(),
            ..host()
        };
        assert_eq!(
            assess(&r, &debug, FreqTrace::default(), 0.01).0,
            Quality::Unreliable
        );
    }
}
