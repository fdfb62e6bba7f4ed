//! Noise and the result history: a comparison's run-to-run spread per
//! metric read from the store ([`StoreNoise`]), and the A/A repetitions
//! of `warpt noise` that fill it ([`profile`]).

use std::borrow::Borrow;

use anyhow::{Context, Result};
use warpt_harness::Progress;
use warpt_model::BenchmarkSuiteRun;
use warpt_store::{Location, Store};

use warpt_report::compare::noise::{self, MetricRef, Noise, NoiseLookup};

use crate::run::Suites;
use crate::{RunRequest, history};

/// Each metric's run-to-run spread from the store: the latest noise
/// profile of its machine and parameters, else the spread of its last
/// stored runs there (at least [`noise::MIN_HISTORY_RUNS`]),
/// leaving out the runs being compared. Holds the store or a reference
/// to it (`warpt serve` lends one of its pooled connections).
pub struct StoreNoise<S = Store> {
    store: S,
    exclude: Vec<String>,
}

/// Runs read for a history spread.
const HISTORY_RUNS: usize = 30;

impl<S: Borrow<Store>> StoreNoise<S> {
    /// Looks up noise in `store`, ignoring the runs `exclude` in histories.
    pub fn new(store: S, exclude: Vec<String>) -> Self {
        StoreNoise { store, exclude }
    }
}

impl<S: Borrow<Store>> NoiseLookup for StoreNoise<S> {
    fn noise(&self, m: &MetricRef<'_>) -> Option<Noise> {
        let key = warpt_store::NoiseKey {
            fingerprint: m.fingerprint?,
            suite: m.suite,
            benchmark: m.benchmark,
            metric: m.metric,
            tags: m.tags,
            params: m.params,
        };
        if let Ok(Some(p)) = self.store.borrow().noise_profile(&key) {
            return Some(noise::from_profile(&p));
        }
        let exclude: Vec<&str> = self.exclude.iter().map(String::as_str).collect();
        let values = self
            .store
            .borrow()
            .noise_history(&key, &exclude, HISTORY_RUNS)
            .ok()?;
        noise::from_history(&values)
    }
}

/// A `warpt noise` run, recorded.
#[derive(Debug)]
pub struct Profiled {
    /// The repetitions, one suite run (recorded in the store).
    pub run: BenchmarkSuiteRun,
    /// Each metric's spread, and the metrics with too few trials.
    pub profile: noise::Profile,
    /// The store both went to.
    pub store: Location,
    /// Whether the profile was stored, or why not.
    pub stored: ProfileStored,
}

/// Whether [`profile`] stored the machine's profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileStored {
    /// Stored for this machine (its fingerprint).
    Yes(String),
    /// Not stored: the run was interrupted, so its spread is partial.
    Interrupted,
    /// Not stored: the run has no machine snapshot to key it by.
    NoMachine,
}

/// Runs `request` (its `repeat` is the number of A/A trials), records the
/// run and, when it completed, the noise profile of this machine. The store
/// opens before anything is measured.
pub fn profile(
    request: &RunRequest,
    suites: &dyn Suites,
    progress: &dyn Progress,
) -> Result<Profiled> {
    let (plan, mut options) = crate::plan(request, suites)?;
    let path = history::path(request.store.flag(), request.config.as_deref())?;
    let mut store = Store::open(&path).with_context(|| format!("opening the store {path}"))?;
    let run = crate::run::execute(&plan, &mut options, suites, progress)?;
    let profile = noise::profile(&run);
    store
        .record_run(&run, &warpt_store::Source::Run)
        .with_context(|| format!("recording the run in {path}"))?;
    let stored = match (&run.system, run.interrupted) {
        (_, true) => ProfileStored::Interrupted,
        (None, _) => ProfileStored::NoMachine,
        (Some(system), false) => {
            store
                .record_noise(system, &profile.entries)
                .with_context(|| format!("recording the profile in {path}"))?;
            ProfileStored::Yes(system.fingerprint())
        }
    };
    Ok(Profiled {
        run,
        profile,
        store: path,
        stored,
    })
}
