//! The registry of suites: how a suite name becomes runnable benchmarks.

use warpt_model::{BenchmarkComponent, BenchmarkId, BenchmarkSpec};

use crate::{Benchmark, Suite};

/// Every suite this build of warpt offers, in registration order, and the
/// benchmarks that stand for each component.
#[derive(Default)]
pub struct Registry {
    suites: Vec<Box<dyn Suite>>,
    stand_ins: Vec<(BenchmarkComponent, BenchmarkId)>,
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

    /// Adds `part`'s benchmarks to the registered suite of the same name
    /// (or registers it when there is none): how a crate with heavy
    /// dependencies (the GPU benchmarks of `micro`) joins a suite whose
    /// crate should not depend on it.
    pub fn extend(&mut self, part: Box<dyn Suite>) -> &mut Self {
        match self.suites.iter().position(|s| s.name() == part.name()) {
            Some(i) => {
                let base = self.suites.remove(i);
                self.suites.insert(
                    i,
                    Box::new(Combined {
                        parts: vec![base, part],
                    }),
                );
            }
            None => self.suites.push(part),
        }
        self
    }

    /// Declares that benchmark `id` stands for `component` when a run is
    /// chosen by component (`--component`, or nothing named: all of them),
    /// whether or not this build has it: an id the registry cannot find is
    /// reported by the plan as unavailable, with the reason, not faked.
    pub fn stands_for(&mut self, component: BenchmarkComponent, id: BenchmarkId) -> &mut Self {
        self.stand_ins.push((component, id));
        self
    }

    /// The benchmarks declared to stand for `component`, in declaration order.
    pub fn component_defaults(&self, component: BenchmarkComponent) -> Vec<BenchmarkId> {
        self.stand_ins
            .iter()
            .filter(|(c, _)| *c == component)
            .map(|(_, id)| id.clone())
            .collect()
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
            .spec_of(&id.name)
            .filter(|s| s.id == *id)
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

/// Several suites of one name seen as one: the first gives the name and
/// description, each benchmark is created and checked by the part that
/// declares it.
struct Combined {
    parts: Vec<Box<dyn Suite>>,
}

impl Combined {
    fn part_of(&self, name: &str) -> Option<&dyn Suite> {
        self.parts
            .iter()
            .find(|p| p.specs().iter().any(|s| s.id.name == name))
            .map(|p| p.as_ref())
    }
}

impl Suite for Combined {
    fn name(&self) -> &'static str {
        self.parts[0].name()
    }

    fn description(&self) -> &'static str {
        self.parts[0].description()
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        self.parts.iter().flat_map(|p| p.specs()).collect()
    }

    fn spec_of(&self, name: &str) -> Option<BenchmarkSpec> {
        self.parts.iter().find_map(|p| p.spec_of(name))
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        self.parts.iter().find_map(|p| p.create(name))
    }

    fn matrix(&self, name: &str) -> std::collections::BTreeMap<String, String> {
        self.part_of(name)
            .map(|p| p.matrix(name))
            .unwrap_or_default()
    }
}
