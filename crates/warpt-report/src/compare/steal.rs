//! The hypervisor's steal on one run a side: how far the difference
//! between the two runs' steal can move a figure.
//!
//! A cloud guest can lose a steady tenth of its CPU time to other guests
//! (KVM accounts a vCPU's wait after each wake-up as steal), which grades
//! every short run there `unreliable`; holding back every verdict on such
//! a host would leave a 1.5x regression uncalled. Steal only slows what it
//! hits, and steal the two runs saw alike slowed both alike: what can move
//! the comparison is the difference. Each side's steal share `s` is taken
//! to slow its figure by `s / (1 - s)` (the share spread evenly over its
//! samples); the band widens by the difference, and a change beyond the
//! band but within [`super::REGIME_REACH_MARGIN`] times that reach stays
//! inconclusive, as for a host regime (steal concentrated on the measured
//! samples, or on the benchmark's one vCPU of several, moves a median
//! more than the even estimate).

use warpt_model::{BenchmarkRunResult, Quality, STEAL_PREFIX};

/// Steal shares above this are clamped: past it the estimate of the slowdown
/// (`s / (1 - s)`) grows without bound and says nothing useful.
const MAX_SHARE: f64 = 0.5;

/// Whether the first reason that made `r`'s conditions unreliable is the
/// hypervisor's steal, and its share was recorded: nothing that holds a
/// verdict back (other processes, the clock falling) was seen, as the
/// harness lists those first, and the steal can be weighed.
pub(super) fn unreliable_for_steal(r: &BenchmarkRunResult) -> bool {
    r.measurement_quality.or(r.quality) == Some(Quality::Unreliable)
        && recorded(r).is_some()
        && r.quality_reasons
            .iter()
            .find(|w| !w.ends_with(warpt_model::DEBUG_BUILD_REASON))
            .is_some_and(|w| w.starts_with(STEAL_PREFIX))
}

/// The side's recorded steal share.
fn recorded(r: &BenchmarkRunResult) -> Option<f64> {
    r.interference.as_ref().and_then(|i| i.steal_share)
}

/// The side's steal share, 0 where none was read (a side not graded for it).
fn share(r: &BenchmarkRunResult) -> f64 {
    recorded(r).unwrap_or(0.0).clamp(0.0, MAX_SHARE)
}

/// What the two runs' difference in steal can do to a figure, when either
/// side's conditions were unreliable for it (below that the noise band
/// holds it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Stolen {
    /// Both sides' shares, starting with [`STEAL_PREFIX`].
    pub reason: String,
    /// How much more the current side's steal slowed its figure than the
    /// base's did (0.12 = 12%; negative when the base's slowed more).
    pub current_slower: f64,
}

impl Stolen {
    /// How far the difference can move the figure either way: the band
    /// widens by it, as a change it hides is as possible as one it fakes.
    pub fn reach(&self) -> f64 {
        self.current_slower.abs()
    }

    /// The part of the reach that can explain a change in its direction
    /// (`current_worse`: the current side's figure is the worse one):
    /// steal only slows, so steal the base saw more of cannot make the
    /// current side look worse, and the reverse.
    pub fn toward(&self, current_worse: bool) -> f64 {
        if current_worse {
            self.current_slower.max(0.0)
        } else {
            (-self.current_slower).max(0.0)
        }
    }
}

/// The difference in steal between one run a side, when either side's
/// conditions were unreliable for it; `None` otherwise.
pub(super) fn shift(base: &BenchmarkRunResult, current: &BenchmarkRunResult) -> Option<Stolen> {
    if !(unreliable_for_steal(base) || unreliable_for_steal(current)) {
        return None;
    }
    let (sb, sc) = (share(base), share(current));
    let slowdown = |s: f64| s / (1.0 - s);
    Some(Stolen {
        reason: format!(
            "{STEAL_PREFIX}the hypervisor took {:.1}% of CPU time while the base measured, \
             {:.1}% while the current did",
            sb * 100.0,
            sc * 100.0
        ),
        current_slower: slowdown(sc) - slowdown(sb),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_model::{BenchmarkSpec, Interference, RunStatus};

    fn stolen(share: f64, unreliable: bool) -> BenchmarkRunResult {
        let spec = BenchmarkSpec::builder("s", "b").build();
        let mut r = BenchmarkRunResult::new(
            spec,
            Default::default(),
            RunStatus::Passed,
            jiff::Timestamp::now(),
        );
        r.interference = Some(Interference {
            window_s: 1.0,
            cpus: 2,
            steal_share: Some(share),
            ..Default::default()
        });
        if unreliable {
            r.measurement_quality = Some(Quality::Unreliable);
            r.quality_reasons.push(format!(
                "{STEAL_PREFIX}the hypervisor took {:.1}%",
                share * 100.0
            ));
        }
        r
    }

    #[test]
    fn only_the_difference_in_steal_reaches_the_figure() {
        let alike = shift(&stolen(0.12, true), &stolen(0.12, true)).unwrap();
        assert_eq!(alike.reach(), 0.0);
        let one = shift(&stolen(0.0, false), &stolen(0.2, true)).unwrap();
        assert!((one.reach() - 0.25).abs() < 1e-12, "{one:?}");
        assert!(one.reason.contains("0.0%") && one.reason.contains("20.0%"));
        // Only the current side's steal can make it look worse.
        assert_eq!(one.toward(true), one.reach());
        assert_eq!(one.toward(false), 0.0);
        let base = shift(&stolen(0.2, true), &stolen(0.0, false)).unwrap();
        assert_eq!((base.toward(true), base.toward(false)), (0.0, base.reach()));
        // Below the unreliable grade the noise band holds it.
        assert!(shift(&stolen(0.05, false), &stolen(0.08, false)).is_none());
    }

    #[test]
    fn another_unreliable_reason_first_is_not_steal() {
        let mut r = stolen(0.12, true);
        r.quality_reasons.insert(
            0,
            "foreign_cpu: other processes used 48% of the 2 CPUs".into(),
        );
        assert!(!unreliable_for_steal(&r));
        assert!(shift(&stolen(0.0, false), &r).is_none());
        // Graded for steal with no share recorded: nothing to weigh.
        let mut r = stolen(0.12, true);
        r.interference = None;
        assert!(!unreliable_for_steal(&r));
    }
}
