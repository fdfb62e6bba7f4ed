//! From the evidence to a verdict: what makes a side unusable, and the
//! rules that turn a test, a band and a regime into `improved`,
//! `regressed`, `~` or `inconclusive`.

use warpt_model::{BenchmarkMetric, BenchmarkRunResult, Quality, RunStatus};

use super::evidence::{self, Kind};
use super::{MetricComparison, Options, Verdict};

/// How a side's measurement conditions (interference, throttling, a host
/// regime) weigh on a metric's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conditions {
    /// Unreliable conditions leave the metric inconclusive (unpaired
    /// trials a side).
    Held,
    /// As `Held`, except unreliable only for a regime (the core's speed
    /// swung while measuring) or the hypervisor's steal: one run a side,
    /// whose host regimes and difference in steal widen the band instead
    /// (see [`warpt_model::RegimeProbes::shift`] and `steal`). The harness
    /// lists the conditions' unreliable reasons first, steal's and the
    /// regime's last among them (`warpt_harness::quality`), so the first
    /// reason says whether anything else made them unreliable.
    RegimeJudged,
    /// They do not count. Paired rounds (interleaved A/B or duet couples,
    /// judged by the per-round ratios): both runs of a round shared the
    /// host, the pairing cancels what they shared, and a round that one
    /// side's disturbance moved widens the band the ratios' spread gives
    /// (every passed round is kept: see `trial_values`); a cloud host
    /// that steals a steady tenth of every trial (a wake-up from idle
    /// accrues steal on KVM) would otherwise leave every comparison there
    /// inconclusive. Or a figure both sides read exactly alike (a computed
    /// error of zero): what disturbed the host did not move it.
    Waived,
}

/// Why one side's figure cannot be judged, if it cannot: the benchmark did
/// not pass, its measurement conditions were unreliable (interference,
/// throttling; see [`Conditions`]), its build differs from the other
/// side's (one debug build), or this metric's own median is known too
/// poorly within its one run. Another metric's poor precision does not
/// count against this one, and a side with trials is not held to it: its
/// statistics are the spread of the trial medians, which the test across
/// trials already weighs. A counted metric is held to neither:
/// interference slows a program down but does not change what it executes.
pub(super) fn unusable(
    side: &str,
    r: &BenchmarkRunResult,
    m: &BenchmarkMetric,
    trials: usize,
    debug: (bool, bool),
    held: Conditions,
) -> Option<String> {
    let counted = m.is_counted();
    if r.status != RunStatus::Passed {
        return Some(format!(
            "{side} {}: {}",
            r.status.as_str(),
            r.error_message.as_deref().unwrap_or("no message")
        ));
    }
    let (this_debug, other_debug) = debug;
    if this_debug && !other_debug {
        return Some(format!("{side} {}", warpt_model::DEBUG_BUILD_REASON));
    }
    let conditions = r.measurement_quality.or(r.quality);
    if counted {
        return None;
    }
    if conditions == Some(Quality::Unreliable) && held != Conditions::Waived {
        let why = r
            .quality_reasons
            .iter()
            .find(|w| !w.ends_with(warpt_model::DEBUG_BUILD_REASON))
            .map_or("no reason recorded", String::as_str);
        let weighed =
            why.starts_with(warpt_model::REGIME_PREFIX) || super::steal::unreliable_for_steal(r);
        if !(held == Conditions::RegimeJudged && weighed) {
            return Some(format!("{side} unreliable: {why}"));
        }
    }
    if trials > 1 {
        return None;
    }
    let half = m.stats.as_ref().map(|s| s.relative_half_width())?;
    (half > warpt_model::UNRELIABLE_REL_CI)
        .then(|| format!("{side} median known only to ±{:.1}%", half * 100.0))
}

/// The smallest change of a byte count (`B`: a peak RSS, a memory
/// high-water mark) called a change at all: memory is faulted in pages and
/// allocators grow by arenas, so two runs of one program differ by hundreds
/// of KiB (a no-op pull request's 18 MiB command read +3.3%, p = 0.015).
pub const BYTES_RESOLUTION: f64 = 1024.0 * 1024.0;

/// How many times its estimated reach a host regime may move a metric, for
/// holding back the verdict on one run a side: the probes' readings
/// understate a regime's effect (a memory-bus canary read +22% for a run
/// 27% slow), but a clock 5.4% apart does not make a sleep 49.5% longer,
/// which the uncapped rule left inconclusive.
pub const REGIME_REACH_MARGIN: f64 = 3.0;

/// The verdict on one metric whose q-value is set (see the module docs);
/// sets `reason` when it is inconclusive. `reach_pct` is the part of
/// `regime_shift_pct` that can explain a change in the observed direction
/// (a regime's all of it; steal only on the side it slowed).
pub(super) fn judge(
    m: &mut MetricComparison,
    ev: &evidence::Evidence,
    reach_pct: Option<f64>,
    options: &Options,
) -> Verdict {
    if m.reason.is_some() {
        return Verdict::Inconclusive;
    }
    if ev.kind == Kind::Counts && m.change_pct.abs() <= m.band_pct {
        return Verdict::Unchanged;
    }
    if m.unit == "B" && (m.current.median - m.base.median).abs() < BYTES_RESOLUTION {
        return Verdict::Unchanged;
    }
    if !m.change_pct.is_finite() {
        m.reason = Some("the change is not a number (a zero or missing median)".into());
        return Verdict::Inconclusive;
    }
    // The band already holds what the difference between the sides' probes
    // can explain. One run a side: inside it `~`; beyond it, a regime (a
    // difference past the probes' thresholds) still holds the verdict back
    // up to [`REGIME_REACH_MARGIN`] times its estimated reach, as the reach
    // is an estimate and one run has no other evidence; a smaller
    // difference, or a change beyond that, is judged as usual. Trials are
    // judged as usual against the widened band: their test carries the
    // evidence one run lacks, and `~` must still pass their equivalence
    // check (below).
    let trials = matches!(ev.kind, Kind::Trials | Kind::Paired);
    if let (Some(shift), false) = (m.regime_shift_pct, trials) {
        if m.change_pct.abs() <= m.band_pct {
            return Verdict::Unchanged;
        }
        let reach = reach_pct.unwrap_or(shift);
        let within_reach = m.change_pct.abs() <= m.band_pct + (REGIME_REACH_MARGIN - 1.0) * reach;
        if let (Some(regime), true) = (&m.regime, within_reach) {
            m.reason = Some(format!(
                "{regime}; this can move the metric by about ±{shift:.1}%, and the change of \
                 {:+.1}% lies beyond the band it widens to (±{:.1}%) but within {} times that \
                 reach: compare runs made with --repeat 3 or more, or compare --rerun",
                m.change_pct, m.band_pct, REGIME_REACH_MARGIN
            ));
            return Verdict::Inconclusive;
        }
    }
    let known = m.noise_band_pct.is_some();
    let significant = ev.significant(m.q_value, options.alpha, known);
    let beyond_threshold = m.change_pct.abs() >= options.threshold_pct;
    // Trials carry their own evidence of the noise; one run a side does not.
    let needs_band = matches!(ev.kind, Kind::Samples | Kind::Band);
    if needs_band && !known {
        if beyond_threshold && (significant || ev.kind == Kind::Band) {
            m.reason = Some(format!(
                "noise unknown: {} cannot tell a change of {:+.1}% from run-to-run variation \
                 on this machine; run `warpt noise` here, or compare runs made with --repeat 3 or more",
                if ev.kind == Kind::Samples {
                    "one run a side"
                } else {
                    "too few runs a side"
                },
                m.change_pct
            ));
            return Verdict::Inconclusive;
        }
        return Verdict::Unchanged;
    }
    if !(significant && m.change_pct.abs() >= m.band_pct) {
        // Across runs `~` claims the change lies inside the band, so the
        // trials must rule out one beyond it, either way at 5% (the two
        // one-sided tests: the 90% CI inside the band): a side the host
        // disturbed can hide a real change as well as fake one.
        if let (Kind::Trials | Kind::Paired, Some((lo, hi))) = (ev.kind, ev.equivalence_ci) {
            let (lo, hi) = ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0);
            if hi > m.band_pct || lo < -m.band_pct {
                m.reason = Some(format!(
                    "too noisy to tell: the trials' 90% CI of the change, {lo:+.1}% to {hi:+.1}%, \
                     reaches beyond the band of ±{:.1}% (a change beyond it is not ruled out at \
                     5% either way); add trials (--repeat) or rerun when the machine is quiet",
                    m.band_pct
                ));
                return Verdict::Inconclusive;
            }
        }
        return Verdict::Unchanged;
    }
    if (m.change_pct > 0.0) == m.higher_is_better {
        Verdict::Improved
    } else {
        Verdict::Regressed
    }
}
