//! One suite's benchmarks run briefly in this process: how a suite's own
//! tests, or a program that embeds a suite and wants a number, run a
//! benchmark without a worker binary.

use std::time::Duration;

use warpt_model::{BenchmarkRunResult, BenchmarkSuiteRun};

use crate::{
    NoProgress, ParamArg, Plan, PlanError, Registry, RunOptions, Selection, Suite, run_plan,
};

/// A registry of one suite and the options to run its benchmarks with in
/// this process: no warm-up, a short measurement, no worker.
pub struct InProcess {
    registry: Registry,
    suite: &'static str,
    /// How each run goes; [`InProcess::new`] sets the measurement time,
    /// no warm-up and `in_process`. Change the seed or precision here.
    pub options: RunOptions,
}

impl InProcess {
    /// `suite` alone, each benchmark measured for `duration`.
    pub fn new(suite: impl Suite + 'static, duration: Duration) -> Self {
        let name = suite.name();
        let mut registry = Registry::new();
        registry.register(Box::new(suite));
        let mut options = RunOptions::new("test", "test");
        options.duration = Some(duration);
        options.burnin = Duration::ZERO;
        options.in_process = true;
        InProcess {
            registry,
            suite: name,
            options,
        }
    }

    /// The plan for `benchmark` with `params` (`key=value` as `--param`
    /// spells it), or why the plan refuses them.
    pub fn plan(&self, benchmark: &str, params: &[impl AsRef<str>]) -> Result<Plan, PlanError> {
        let params = params
            .iter()
            .map(|p| p.as_ref().parse())
            .collect::<Result<Vec<ParamArg>, _>>()?;
        let selection = Selection {
            suite: Some(self.suite.into()),
            benchmarks: vec![benchmark.into()],
            params,
            ..Selection::default()
        };
        Plan::resolve(&self.registry, &selection)
    }

    /// Every result of `benchmark` with `params` (several where a
    /// parameter sweeps).
    pub fn run_all(
        &self,
        benchmark: &str,
        params: &[impl AsRef<str>],
    ) -> Result<BenchmarkSuiteRun, PlanError> {
        let plan = self.plan(benchmark, params)?;
        Ok(run_plan(&self.registry, &plan, &self.options, &NoProgress))
    }

    /// The first result of `benchmark` with `params`.
    pub fn run(
        &self,
        benchmark: &str,
        params: &[impl AsRef<str>],
    ) -> Result<BenchmarkRunResult, PlanError> {
        let mut run = self.run_all(benchmark, params)?;
        // A resolved plan has at least one entry, and run_plan answers
        // each entry with a result.
        Ok(run.benchmarks.swap_remove(0))
    }
}
