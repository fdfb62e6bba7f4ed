//! The runner turns every way a benchmark can end into a structured result,
//! and one benchmark's failure never stops the others.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use warpt_harness::*;
use warpt_model::*;

/// A benchmark whose behaviour is chosen by its name.
struct Scripted(&'static str);

impl Benchmark for Scripted {
    fn prepare(&mut self, _: &RunContext) -> Result<(), BenchmarkError> {
        match self.0 {
            "skip" => Err(BenchmarkError::Skipped("no GPU here".into())),
            "broken" => Err(BenchmarkError::Failed("setup failed".into())),
            _ => Ok(()),
        }
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        if self.0 == "panic" {
            panic!("kernel bug");
        }
        let policy = MeasurePolicy::share_of(ctx, 1);
        let def = SeriesDef::new("ops", "op/s", true, &[], Convert::Rate(1.0));
        let m = measure.run(&policy, "x", &[def], |out| out[0] = 0.001);
        Ok(Measured {
            metrics: m.metrics,
            ..Measured::default()
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        if self.0 == "wrong" {
            Validation::fail("answer 41, expected 42")
        } else {
            Validation::pass("answer 42")
        }
    }
}

const NAMES: [&str; 5] = ["ok", "skip", "broken", "panic", "wrong"];

struct ScriptedSuite;

impl Suite for ScriptedSuite {
    fn name(&self) -> &'static str {
        "scripted"
    }
    fn description(&self) -> &'static str {
        "benchmarks that end in each possible way"
    }
    fn specs(&self) -> Vec<BenchmarkSpec> {
        NAMES
            .iter()
            .map(|n| {
                BenchmarkSpec::builder("scripted", n)
                    .component(BenchmarkComponent::Cpu)
                    .duration(0.01)
                    .param(Param::int("k", 1, 0..))
                    .build()
            })
            .collect()
    }
    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        NAMES
            .iter()
            .find(|n| **n == name)
            .map(|n| Box::new(Scripted(n)) as Box<dyn Benchmark>)
    }
}

fn options() -> RunOptions {
    // In-process: the test binary is not warpt and cannot be a worker.
    let mut o = RunOptions::new("test", "debug");
    o.burnin = Duration::ZERO;
    o.seed = 1;
    o.in_process = true;
    o
}

#[test]
fn each_ending_becomes_a_status_and_the_suite_goes_on() {
    let mut registry = Registry::new();
    registry.register(Box::new(ScriptedSuite));
    let selection = Selection {
        suite: Some("scripted".into()),
        params: vec!["k=5".parse().unwrap()],
        ..Selection::default()
    };
    let plan = Plan::resolve(&registry, &selection).unwrap();
    // The panicking benchmark prints its panic message; that is expected.
    let run = run_plan(&registry, &plan, &options(), &NoProgress);
    let statuses: Vec<RunStatus> = run.benchmarks.iter().map(|b| b.status).collect();
    assert_eq!(
        statuses,
        [
            RunStatus::Passed,
            RunStatus::Skipped,
            RunStatus::Failed,
            RunStatus::Crashed,
            RunStatus::Failed
        ]
    );
    let [ok, skip, broken, panic, wrong] = &run.benchmarks[..] else {
        unreachable!()
    };
    assert!(ok.success && ok.metrics[0].stats.is_some() && ok.stop_reason.is_some());
    assert_eq!(ok.params["k"], ParamValue::Int(5));
    assert!(ok.watchdog.as_ref().unwrap().measure.is_some());
    assert_eq!(skip.error_message.as_deref(), Some("no GPU here"));
    assert!(!skip.status.is_failure());
    assert_eq!(broken.error_message.as_deref(), Some("setup failed"));
    assert!(
        panic
            .error_message
            .as_deref()
            .unwrap()
            .contains("kernel bug")
    );
    assert!(
        wrong
            .error_message
            .as_deref()
            .unwrap()
            .contains("expected 42")
    );
    assert!(!wrong.validation.as_ref().unwrap().passed);
    assert!(run.has_failures());
    let manifest = run.manifest.unwrap();
    assert_eq!(manifest.seed, 1);
    assert_eq!(manifest.config.plan.len(), 5);
    assert_eq!(manifest.config.param_overrides["k"], "5");
}

#[test]
fn duplicate_selections_run_once_and_bad_params_are_refused() {
    let mut registry = Registry::new();
    registry.register(Box::new(ScriptedSuite));
    let sel = |benchmarks: &[&str], params: &[&str]| Selection {
        suite: Some("scripted".into()),
        benchmarks: benchmarks.iter().map(|s| s.to_string()).collect(),
        params: params.iter().map(|p| p.parse().unwrap()).collect(),
        ..Selection::default()
    };
    let plan = Plan::resolve(&registry, &sel(&["ok", "ok", "wrong"], &[])).unwrap();
    assert_eq!(plan.entries.len(), 2);
    assert!(matches!(
        Plan::resolve(&registry, &sel(&[], &["k=x"])),
        Err(PlanError::BadParamValue(_))
    ));
    assert!(matches!(
        Plan::resolve(&registry, &sel(&[], &["nope=1"])),
        Err(PlanError::UnknownParam { .. })
    ));
    let err = Plan::resolve(
        &registry,
        &Selection {
            benchmarks: vec!["ok".into()],
            components: vec![BenchmarkComponent::Gpu],
            ..Selection::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::NothingToRun(_)), "{err}");
}
