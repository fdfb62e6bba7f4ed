//! Which regime probes a comparison reads for one metric:
//!
//! - one run a side: each run's;
//! - unpaired trials (`--repeat`): each side's trials' typical readings
//!   together, so a regime that differed between trials widens the band as
//!   one that moved within a run does (how each trial's probes moved while
//!   it measured is its own quality's business, and a disturbed trial is
//!   left out);
//! - paired trials (`compare --rerun`, `--duet`): each round's two runs'
//!   typical readings, the round whose probes differ most. The pairing
//!   cancels what a round's
//!   two runs shared, so only a named regime (a difference past the probes'
//!   thresholds: the bus busier for one run of the round than the other)
//!   widens the band, not the drift below them.

use warpt_model::{BenchmarkRunResult, BenchmarkSuiteRun, RegimeProbes, RegimeShift};

use super::Key;
use super::evidence::Kind;

/// One side of a metric's comparison, as the regime sees it.
pub(super) struct Side<'a> {
    /// The side's run.
    pub run: &'a BenchmarkSuiteRun,
    /// Its result for the metric's benchmark (the aggregate, with trials).
    pub result: &'a BenchmarkRunResult,
    /// The trials the comparison used: (trial number, value).
    pub used: &'a [(u32, f64)],
}

impl Side<'_> {
    /// The probes of trial `index` of the metric's benchmark.
    fn trial(&self, key: &Key, index: u32) -> Option<&RegimeProbes> {
        self.run
            .trials
            .iter()
            .find(|t| t.index == index)?
            .benchmarks
            .iter()
            .find(|r| r.spec.id.suite == key.0 && r.spec.id.name == key.1)?
            .regime
            .as_ref()
    }

    /// The probes of the side: the run's own, or those of the trials it
    /// used, merged; `None` when none read any.
    fn probes(&self, key: &Key) -> Option<RegimeProbes> {
        if self.run.trials.is_empty() {
            return self.result.regime.clone();
        }
        let probes: Vec<&RegimeProbes> = self
            .used
            .iter()
            .filter_map(|(i, _)| self.trial(key, *i))
            .collect();
        (!probes.is_empty()).then(|| RegimeProbes::merged(&probes))
    }
}

/// What the probes of the two sides say of the metric `key` judged on
/// evidence of `kind` (see [`RegimeProbes::shift`]); `None` for counted
/// metrics, a single run against trials, and sides without probes.
pub(super) fn shift(
    base: &Side<'_>,
    current: &Side<'_>,
    key: &Key,
    kind: Kind,
) -> Option<RegimeShift> {
    let single = base.used.len() <= 1 && current.used.len() <= 1;
    match kind {
        Kind::Counts => None,
        Kind::Paired => per_round(base, current, key),
        Kind::Trials => RegimeProbes::shift(&base.probes(key)?, &current.probes(key)?, &key.3),
        Kind::Samples | Kind::Band if single => {
            RegimeProbes::shift(&base.probes(key)?, &current.probes(key)?, &key.3)
        }
        Kind::Samples | Kind::Band => None,
    }
}

/// Paired trials: the round whose two runs' probes name a regime reaching
/// the metric and explain the most, its reasons prefixed with the round.
/// What a round's regime explains is capped by how far that round's ratio
/// departs from the rounds' centre (the Hodges-Lehmann estimate of their
/// log ratios): a regime that differed between a round's two runs moved
/// that round's ratio, or it did not reach the metric at all. On a loaded
/// 2-vCPU guest a 2.9x speedup whose four rounds agreed to 1% was called
/// `~`: only a round's uncapped regime can widen a band that far.
fn per_round(base: &Side<'_>, current: &Side<'_>, key: &Key) -> Option<RegimeShift> {
    let ratios: Vec<(u32, f64)> = base
        .used
        .iter()
        .filter_map(|(i, b)| {
            let (_, c) = current.used.iter().find(|(j, _)| j == i)?;
            Some((*i, (c / b).ln()))
        })
        .collect();
    let logs: Vec<f64> = ratios.iter().map(|(_, d)| *d).collect();
    let centre = warpt_stats::hodges_lehmann_center(&logs);
    let departure = |i: u32| {
        ratios
            .iter()
            .find(|(j, _)| *j == i)
            .map_or(0.0, |(_, d)| ((d - centre).abs()).exp_m1())
    };
    base.used
        .iter()
        .filter_map(|(i, _)| {
            let (b, c) = (base.trial(key, *i)?, current.trial(key, *i)?);
            let mut s = RegimeProbes::shift(&b.typical(), &c.typical(), &key.3)?;
            s.shift = s.shift.min(departure(*i));
            (!s.reasons.is_empty()).then_some((*i, s))
        })
        .max_by(|a, b| a.1.shift.total_cmp(&b.1.shift))
        .map(|(i, s)| RegimeShift {
            reasons: s
                .reasons
                .into_iter()
                .map(|r| format!("round {i}: {r}"))
                .collect(),
            shift: s.shift,
        })
}
