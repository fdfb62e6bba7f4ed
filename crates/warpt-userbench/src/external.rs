//! A benchmark file driven through the protocol ([`crate::driver`]) as a
//! warpt [`Benchmark`], so the harness's stages, stopping rule and worker
//! isolation apply to it unchanged: `prepare` loads the file and runs
//! `setup()`, `measure` samples `benchmark_fn()`, `validate` runs
//! `validate_result()` and then `teardown()`.
//!
//! A call of a small function can take less than the clock's resolution,
//! so one sample times a batch of calls,
//! doubled until the batch takes at least [`MIN_BATCH_NS`] (as `timeit`
//! does); `latency_ms` is per call.

use std::path::{Path, PathBuf};

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, Measured, RunContext, SeriesDef,
};
use warpt_model::{ParamValue, Validation};

use crate::driver::{Driver, DriverError};

/// Shortest batch one sample times: 1 ms, so the clock's resolution and
/// the adapter's loop are a small part of every sample.
pub const MIN_BATCH_NS: u64 = 1_000_000;

/// Most calls in one sample's batch.
const MAX_CALLS: u64 = 1 << 24;

/// One user benchmark file under the harness.
pub struct ExternalBenchmark {
    file: PathBuf,
    python: String,
    driver: Option<Driver>,
}

impl ExternalBenchmark {
    /// The Python benchmark in `file`, run by the interpreter `python`.
    pub fn python(file: &Path, python: &str) -> Self {
        ExternalBenchmark {
            file: file.to_path_buf(),
            python: python.to_string(),
            driver: None,
        }
    }

    fn driver(&mut self) -> Result<&mut Driver, BenchmarkError> {
        self.driver
            .as_mut()
            .ok_or_else(BenchmarkError::not_prepared)
    }
}

/// A protocol failure as the harness reports it, the user's traceback
/// included.
fn failed(e: DriverError) -> BenchmarkError {
    match e {
        DriverError::User {
            op,
            message,
            traceback: Some(tb),
        } => BenchmarkError::Failed(format!("{op}: {message}\n{tb}")),
        DriverError::Spawn { program, source } if source.kind() == std::io::ErrorKind::NotFound => {
            BenchmarkError::Skipped(format!(
                "no {program} on this machine to run Python benchmarks"
            ))
        }
        other => BenchmarkError::Failed(other.to_string()),
    }
}

impl Benchmark for ExternalBenchmark {
    fn prepare(&mut self, _ctx: &RunContext) -> Result<(), BenchmarkError> {
        let mut driver = Driver::python(&self.python, &self.file).map_err(failed)?;
        driver.setup().map_err(failed)?;
        self.driver = Some(driver);
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let file = self.file.display().to_string();
        let driver = self.driver()?;
        let mut calls = 1u64;
        loop {
            let ns = driver.run(calls).map_err(failed)?;
            if ns >= MIN_BATCH_NS || calls >= MAX_CALLS {
                break;
            }
            calls *= 2;
        }
        let defs = [SeriesDef::new(
            "latency_ms",
            "ms",
            false,
            &[],
            Convert::Time(1e3 / calls as f64),
        )];
        let mut failure = None;
        let m = measure.run(
            &MeasurePolicy::share_of(ctx, 1),
            "latency_ms",
            &defs,
            |out| {
                // After a failure, samples are placeholders: the run fails.
                out[0] = match failure.is_none().then(|| driver.run(calls)) {
                    Some(Ok(ns)) => ns.max(1) as f64 / 1e9,
                    Some(Err(e)) => {
                        failure = Some(e);
                        1e-9
                    }
                    None => 1e-9,
                };
            },
        );
        if let Some(e) = failure {
            return Err(failed(e));
        }
        Ok(Measured {
            metrics: m.metrics,
            details: vec![
                ("file".into(), ParamValue::Str(file)),
                ("calls_per_sample".into(), ParamValue::Int(calls as i64)),
                (
                    "timer".into(),
                    ParamValue::from("time.perf_counter_ns around the batch, in the adapter"),
                ),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _ctx: &RunContext) -> Validation {
        let Ok(driver) = self.driver() else {
            return Validation::fail("nothing was run");
        };
        let verdict = match driver.validate() {
            Ok(None) => {
                Validation::pass("validate_result() found nothing wrong (or is not defined)")
            }
            Ok(Some(problem)) => Validation::fail(format!("validate_result(): {problem}")),
            Err(e) => Validation::fail(failed(e).to_string()),
        };
        if let Err(e) = driver.teardown() {
            return Validation::fail(format!("teardown: {}", failed(e)));
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use warpt_harness::NoProgress;

    fn ctx() -> RunContext {
        RunContext {
            params: Default::default(),
            seed: 1,
            duration: Duration::from_millis(200),
            burnin: Duration::from_millis(20),
            target_rel_ci: 0.05,
        }
    }

    fn run(text: &str) -> (Result<Measured, BenchmarkError>, Option<Validation>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("baseline_x.py");
        std::fs::write(&file, text).expect("write");
        let mut b = ExternalBenchmark::python(&file, "python3");
        let ctx = ctx();
        if let Err(e) = b.prepare(&ctx) {
            return (Err(e), None);
        }
        let progress = NoProgress;
        let mut measure = Measure::new(&progress);
        let measured = b.measure(&ctx, &mut measure);
        let v = measured.is_ok().then(|| b.validate(&ctx));
        (measured, v)
    }

    #[test]
    fn a_fast_function_is_timed_in_batches_per_call() {
        let (m, v) = run(
            "class B:\n    def setup(self): self.n = 0\n    def benchmark_fn(self): self.n += 1\n    def teardown(self): pass\n",
        );
        let m = m.expect("measured");
        let calls = m
            .details
            .iter()
            .find(|(k, _)| k == "calls_per_sample")
            .and_then(|(_, v)| v.as_i64())
            .expect("calls in the details");
        assert!(calls > 100, "a trivial call is batched: {calls} per sample");
        let latency = m.metrics[0].value;
        assert!(
            latency > 0.0 && latency < 0.01,
            "{latency} ms per trivial call"
        );
        assert!(v.expect("validated").passed);
    }

    #[test]
    fn a_crash_fails_and_a_wrong_result_fails_validation() {
        let (m, _) = run(
            "class B:\n    def setup(self): pass\n    def benchmark_fn(self): 1 / 0\n    def teardown(self): pass\n",
        );
        match m {
            Err(BenchmarkError::Failed(msg)) => {
                assert!(msg.contains("ZeroDivisionError"), "{msg}");
                assert!(msg.contains("Traceback"), "{msg}");
            }
            other => panic!("expected a failure, got {:?}", other.map(|m| m.metrics)),
        }
        let (m, v) = run(
            "class B:\n    def setup(self): pass\n    def benchmark_fn(self): pass\n    def validate_result(self): return 'off by one'\n    def teardown(self): pass\n",
        );
        assert!(m.is_ok());
        let v = v.expect("validated");
        assert!(!v.passed && v.message.contains("off by one"), "{v:?}");
    }

    #[test]
    fn no_interpreter_is_a_skip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("b.py");
        std::fs::write(&file, "").expect("write");
        let mut b = ExternalBenchmark::python(&file, "no-such-python3");
        match b.prepare(&ctx()) {
            Err(BenchmarkError::Skipped(why)) => assert!(why.contains("no-such-python3"), "{why}"),
            other => panic!("expected a skip, got {other:?}"),
        }
    }
}
