//! The registry of suites: how a suite name becomes runnable benchmarks.

use warpt_model::{BenchmarkId, BenchmarkSpec};

use crate::{Benchmark, Suite};

/// Every suite this build of warpt offers, in registration order.
#[derive(Default)]
pub struct Registry {
    suites: Vec<Box<dyn Suite>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a suite. A second suite with the same name is a programming
    /// error and panics: the name is how users address it.
    pub fn register(&mut self, suite: Box<dyn Suite>) -> &mut Self {
        assert!(
            self.suite(suite.name()).is_none(),
            "suite '{}' registered twice",
            suite.name()
        );
        self.suites.push(suite);
        self
    }

    /// The suite called `name`.
    pub fn suite(&self, name: &str) -> Option<&dyn Suite> {
        self.suites
            .iter()
            .find(|s| s.name() == name)
            .map(|s| s.as_ref())
    }

    /// Every registered suite.
    pub fn suites(&self) -> impl Iterator<Item = &dyn Suite> {
        self.suites.iter().map(|s| s.as_ref())
    }

    /// Names of every registered suite, comma-separated, for error messages.
    pub fn suite_names(&self) -> String {
        self.suites
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The spec of the benchmark `id`, if it exists.
    pub fn spec(&self, id: &BenchmarkId) -> Option<BenchmarkSpec> {
        self.suite(&id.suite)?
            .specs()
            .into_iter()
            .find(|s| s.id == *id)
    }

    /// Every spec of every suite.
    pub fn all_specs(&self) -> Vec<BenchmarkSpec> {
        self.suites.iter().flat_map(|s| s.specs()).collect()
    }

    /// A fresh instance of benchmark `id`.
    pub fn create(&self, id: &BenchmarkId) -> Option<Box<dyn Benchmark>> {
        self.suite(&id.suite)?.create(&id.name)
    }
}
