//! `synthetic`: a system under test whose service time is known, so the
//! scenario engine can be held against queueing theory and against the
//! official LoadGen driving the same SUT (`scripts/bench-mlperf`).
//!
//! `workers` threads each take one sample at a time and spend `service_us`
//! on it, sleeping (`work=sleep`, the default: the threads do not compete
//! for the cores, as a remote accelerator would not) or spinning
//! (`work=busy`). The response is the sample's index as 8 little-endian
//! bytes, so every answer can be checked.

use std::time::{Duration, Instant};

use warpt_harness::{Benchmark, BenchmarkError, Measure, MeasureResult, RunContext};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

use crate::bench::{self, ModelRules, Outcome, SpecParts};
use crate::loadgen::{QuerySample, Responder, Response, Scenario, SystemUnderTest};

/// Benchmark name within the suite.
pub const NAME: &str = "synthetic";

/// ResNet-50's counts, a tighter Server bound.
const MODEL: ModelRules = ModelRules {
    name: "synthetic",
    server_latency_ms: 10.0,
    ..crate::resnet50_infer::MODEL
};

/// The spec of `synthetic`.
pub fn spec() -> BenchmarkSpec {
    bench::scenario_spec(SpecParts {
        name: NAME,
        scenario: Scenario::SingleStream,
        batch: None,
        devices: &[],
        components: vec![BenchmarkComponent::System],
        description: "The MLPerf scenario engine on a SUT of known service time (`service_us`, `workers`): \
             SingleStream p90, MultiStream p99, Server QPS (or its peak with find_peak=true) and Offline samples/s, \
             with LoadGen's validity rules and logs. Validation: every sample answered exactly once, with its own index.",
        params: vec![
            Param::float("service_us", 1000.0, 1.0..=1e7)
                .unit("µs")
                .help("time each sample takes, µs"),
            Param::int("workers", 1, 1..=1024).help("samples served at once"),
            Param::choice("work", "sleep", &["sleep", "busy"])
                .help("sleep (default) or busy (spin on a core)"),
        ],
        check: bench::check_common,
        metrics: &[],
    })
}

/// The synthetic system under test.
#[derive(Debug, Clone)]
pub struct SyntheticSut {
    /// Time per sample.
    pub service: Duration,
    /// Worker threads.
    pub workers: usize,
    /// Spin instead of sleeping.
    pub busy: bool,
}

impl SystemUnderTest for SyntheticSut {
    fn name(&self) -> String {
        format!(
            "warpt synthetic ({} µs, {} workers, {})",
            self.service.as_secs_f64() * 1e6,
            self.workers,
            if self.busy { "busy" } else { "sleep" }
        )
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn max_batch(&self) -> usize {
        1
    }

    fn process(&self, batch: &[QuerySample], responder: &Responder) -> Result<(), String> {
        for sample in batch {
            if self.busy {
                let start = Instant::now();
                while start.elapsed() < self.service {
                    std::hint::spin_loop();
                }
            } else {
                std::thread::sleep(self.service);
            }
            responder.complete(
                sample,
                Response {
                    data: (sample.index as u64).to_le_bytes().to_vec(),
                    tokens: None,
                },
            );
        }
        Ok(())
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct Synthetic {
    sut: Option<SyntheticSut>,
    outcome: Option<Outcome>,
}

impl Benchmark for Synthetic {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        self.sut = Some(SyntheticSut {
            service: Duration::from_secs_f64(ctx.float_param("service_us")? / 1e6),
            workers: ctx.int_param("workers", 1)? as usize,
            busy: ctx.str_param("work")? == "busy",
        });
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let sut = warpt_harness::prepared(&self.sut)?;
        let (mut m, outcome) = bench::measure_sut(ctx, measure, sut, &MODEL, NAME)?;
        let ideal = sut.workers as f64 / sut.service.as_secs_f64();
        m.details
            .push(("capacity_samples_per_s".into(), ParamValue::Float(ideal)));
        self.outcome = Some(outcome);
        Ok(m)
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(outcome) = &self.outcome else {
            return Validation::fail("nothing was measured");
        };
        crate::check_answers(&outcome.summary, |r| {
            r.data == (r.index as u64).to_le_bytes()
        })
        .map_or_else(Validation::fail, Validation::pass)
    }
}
