//! `selftest/work`: a fixed amount of dependent integer work per sample,
//! with a test-only `slowdown_pct` that makes each sample do that much more
//! work. It injects a known change for the tests and power checks of
//! `benchmark compare`: an A/B whose true difference is exactly known.

use std::hint::black_box;
use std::time::Instant;

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{Param, Validation};

/// The benchmark's name in the suite.
pub const NAME: &str = "work";

/// The parameters: the chain length and no slowdown.
pub fn params() -> Vec<Param> {
    vec![
        Param::int("iterations", 200_000, 1..).help("dependent integer steps per sample"),
        Param::float("slowdown_pct", 0.0, 0.0..=1000.0)
            .unit("%")
            .help("extra steps, as a share of `iterations` (a slowdown of known size)"),
    ]
}

/// Steps of a 64-bit LCG chain, each depending on the one before.
fn chain(steps: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..steps {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    x
}

/// The benchmark: `iterations x (1 + slowdown_pct / 100)` chain steps per sample.
#[derive(Default)]
pub struct Work {
    steps: u64,
    seed: u64,
    last: Option<u64>,
}

impl Benchmark for Work {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let iterations = ctx.int_param("iterations", 1)?;
        let slowdown = ctx.float_param("slowdown_pct")?;
        self.steps = (iterations as f64 * (1.0 + slowdown / 100.0)).round() as u64;
        self.seed = ctx.seed;
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let policy = MeasurePolicy::share_of(ctx, 1);
        let def = SeriesDef::new("time", "us", false, &[], Convert::Time(1e6));
        let (steps, seed) = (self.steps, self.seed);
        let mut last = None;
        let m = measure.run(&policy, NAME, std::slice::from_ref(&def), |out| {
            let t = Instant::now();
            let x = chain(black_box(steps), black_box(seed));
            out[0] = t.elapsed().as_secs_f64();
            last = Some(black_box(x));
        });
        self.last = last;
        Ok(Measured {
            metrics: m.metrics,
            ..Measured::default()
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let want = chain(self.steps, self.seed);
        match self.last {
            Some(x) if x == want => Validation::pass(format!(
                "the last sample's chain of {} steps ended on {want:#018x}, as recomputed",
                self.steps
            )),
            Some(x) => Validation::fail(format!("chain ended on {x:#018x}, expected {want:#018x}")),
            None => Validation::fail("no sample was taken"),
        }
    }
}
