//! Noise read from the result history: a comparison's run-to-run
//! spread per metric, from the store `warpt noise` and past runs fill.

use std::borrow::Borrow;

use warpt_store::Store;

use warpt_report::compare::noise::{self, MetricRef, Noise, NoiseLookup};

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
