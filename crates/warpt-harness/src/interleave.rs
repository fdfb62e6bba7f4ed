//! Randomized multiple interleaved trials (RMIT; Abedi and Brecht, 2017):
//! the way to compare two things on a machine whose speed drifts.
//!
//! Running all of A, then all of B puts any drift (another tenant, a
//! thermal ramp, a noisy neighbour leaving) between them. Instead each
//! round runs A and B once each, in a random order (A B, B A, ...), so
//! drift hits both sides alike and the per-round difference cancels it.
//! This module is the engine: the order, the loop, and the assembly of
//! each side's trials into one suite run. What a trial *is* (a warpt
//! binary, a configuration, a command) belongs to the caller's
//! [`TrialSource`].

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_model::{BenchmarkSuiteRun, ParamValue, Trial};

use crate::manifest::random_suffix;
use crate::trials::aggregate_trials;

/// One side of an interleaved comparison.
pub trait TrialSource {
    /// What this side is, for messages.
    fn label(&self) -> &str;
    /// Runs one whole trial of this side.
    fn run_trial(&mut self) -> Result<BenchmarkSuiteRun, String>;
}

/// Which side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The baseline (A).
    Base,
    /// The candidate (B).
    Current,
}

impl Side {
    /// `base` or `current`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Current => "current",
        }
    }
}

/// The order of each of `rounds` rounds: which side runs first, drawn
/// from a generator seeded with `seed`.
pub fn rmit_order(rounds: u32, seed: u64) -> Vec<[Side; 2]> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x726d_6974);
    (0..rounds)
        .map(|_| {
            if rng.next_u64() & 1 == 0 {
                [Side::Base, Side::Current]
            } else {
                [Side::Current, Side::Base]
            }
        })
        .collect()
}

/// What happened to one trial, for progress reports.
#[derive(Debug)]
pub struct TrialEvent<'a> {
    /// 1-based round.
    pub round: u32,
    /// Of how many.
    pub rounds: u32,
    /// Which side ran.
    pub side: Side,
    /// Whether the other side of this round already ran.
    pub second: bool,
    /// The trial's outcome, once it ran (`None` when it is about to start).
    pub outcome: Option<&'a Result<BenchmarkSuiteRun, String>>,
}

/// What [`run_interleaved`] leaves: each side's trials of the complete
/// rounds (round r is trial r on both sides), and why it stopped early if
/// a trial failed.
#[derive(Debug, Default)]
pub struct Interleaved {
    /// The baseline's trials.
    pub base: Vec<BenchmarkSuiteRun>,
    /// The candidate's trials.
    pub current: Vec<BenchmarkSuiteRun>,
    /// The failed trial: `round R, SIDE (LABEL): why`.
    pub failure: Option<String>,
}

/// Runs `rounds` rounds of `base` and `current` in RMIT order. Stops at
/// the first failed trial, or before a round when `stop` says so; either
/// way the complete rounds so far are kept.
pub fn run_interleaved(
    base: &mut dyn TrialSource,
    current: &mut dyn TrialSource,
    rounds: u32,
    seed: u64,
    on_event: &mut dyn FnMut(&TrialEvent<'_>),
    stop: &dyn Fn() -> bool,
) -> Interleaved {
    let mut out = Interleaved::default();
    for (i, order) in rmit_order(rounds, seed).into_iter().enumerate() {
        if stop() {
            break;
        }
        let round = i as u32 + 1;
        let mut pair = (None, None);
        for (k, side) in order.into_iter().enumerate() {
            let mut event = TrialEvent {
                round,
                rounds,
                side,
                second: k == 1,
                outcome: None,
            };
            on_event(&event);
            let source: &mut dyn TrialSource = match side {
                Side::Base => &mut *base,
                Side::Current => &mut *current,
            };
            let label = source.label().to_string();
            let outcome = source.run_trial();
            event.outcome = Some(&outcome);
            on_event(&event);
            match (outcome, side) {
                (Ok(run), Side::Base) => pair.0 = Some(run),
                (Ok(run), Side::Current) => pair.1 = Some(run),
                (Err(e), _) => {
                    out.failure = Some(format!("round {round}, {} ({label}): {e}", side.as_str()));
                    return out;
                }
            }
        }
        if let (Some(b), Some(c)) = pair {
            out.base.push(b);
            out.current.push(c);
        }
    }
    out
}

/// One suite run from single runs of the same plan, each a trial (numbered
/// in order): their results become the trials and `benchmarks` the
/// aggregates; the manifest and machine are the first run's, with
/// `trials` set in the manifest's configuration. `None` for no runs.
pub fn combine(runs: Vec<BenchmarkSuiteRun>, label: &str) -> Option<BenchmarkSuiteRun> {
    let first = runs.first()?.clone();
    let planned = runs.iter().map(|r| r.benchmarks.len()).max().unwrap_or(0);
    let trials: Vec<Trial> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| Trial {
            index: i as u32 + 1,
            start_time: r.start_time,
            end_time: r.end_time,
            order: (0..r.benchmarks.len()).collect(),
            benchmarks: r.benchmarks.clone(),
        })
        .collect();
    let start = runs.iter().filter_map(|r| r.start_time).min();
    let mut manifest = first.manifest.clone();
    if let Some(m) = manifest.as_mut() {
        m.config.repeat = trials.len() as u32;
        m.extra
            .insert("trials_of".into(), ParamValue::Str(label.to_string()));
        m.extra.insert(
            "trial_runs".into(),
            ParamValue::Str(
                runs.iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        );
    }
    Some(BenchmarkSuiteRun {
        id: start.map_or_else(|| format!("unknown-{}", random_suffix()), crate::new_run_id),
        suite: first.suite.clone(),
        components: first.components.clone(),
        benchmarks: aggregate_trials(&trials, planned),
        metadata: first.metadata.clone(),
        start_time: start,
        end_time: runs.iter().filter_map(|r| r.end_time).max(),
        interrupted: runs.iter().any(|r| r.interrupted),
        manifest,
        system: first.system.clone(),
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_mix_both_orders() {
        let o = rmit_order(20, 42);
        let base_first = o.iter().filter(|r| r[0] == Side::Base).count();
        assert!((4..=16).contains(&base_first), "{base_first}");
        assert_eq!(o, rmit_order(20, 42));
        assert!(o.iter().all(|r| r[0] != r[1]));
    }
}
