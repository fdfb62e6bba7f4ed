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
use std::sync::atomic::Ordering;

use warpt_harness::SeriesMetrics;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, Measured, RunContext, SeriesDef,
};
use warpt_model::{BenchmarkMetric, ParamValue, Validation};

use crate::driver::{Driver, DriverError, LoadOptions, Output};

/// Shortest batch one sample times: 10 ms, so the clock's resolution, the
/// adapter's loop and the disturbance of the request between batches
/// (caches, branch predictors, a sleeping CPU waking) are a small part of
/// every sample, while a 2 s measurement still holds ~200 samples for the
/// stopping rule. `timeit` times 0.2 s batches and takes no median.
pub const MIN_BATCH_NS: u64 = 10_000_000;

/// Most calls in one sample's batch.
const MAX_CALLS: u64 = 1 << 24;

/// Per-request latencies kept whole in a metric's samples.
const KEEP_EVENTS: usize = 10_000;

/// What one benchmark file runs with: the harness suite's parameters.
#[derive(Debug, Clone, Default)]
pub struct FileRun {
    /// The benchmark file.
    pub file: PathBuf,
    /// The interpreter.
    pub python: String,
    /// How the adapter loads it.
    pub load: LoadOptions,
    /// Where the last call's output goes (a JSON array), if anywhere.
    pub output_file: Option<PathBuf>,
    /// A fresh interpreter (load and setup untimed) for every sample.
    pub cold_start: bool,
}

impl FileRun {
    /// The run the parameters of a `harness` benchmark describe.
    pub fn from_context(ctx: &RunContext) -> Result<Self, BenchmarkError> {
        let kwargs = match ctx.str_param("kwargs")? {
            "" => serde_json::Map::new(),
            text => serde_json::from_str(text).map_err(|e| BenchmarkError::InvalidParam {
                key: "kwargs".into(),
                reason: format!("not a JSON object: {e}"),
            })?,
        };
        let output = ctx.str_param("output_file")?;
        Ok(FileRun {
            file: PathBuf::from(ctx.str_param("file")?),
            python: ctx.str_param("python")?.to_string(),
            load: LoadOptions {
                kwargs,
                reproducible: ctx.bool_param("reproducible")?.then_some(ctx.seed),
            },
            output_file: (!output.is_empty()).then(|| PathBuf::from(output)),
            cold_start: ctx.bool_param("cold_start")?,
        })
    }

    fn start(&self) -> Result<Driver, BenchmarkError> {
        let mut driver =
            Driver::python_with(&self.python, &self.file, &self.load).map_err(failed)?;
        driver.setup().map_err(failed)?;
        Ok(driver)
    }
}

/// One user benchmark file under the harness.
pub struct ExternalBenchmark {
    run: Option<FileRun>,
    driver: Option<Driver>,
}

impl ExternalBenchmark {
    /// The Python benchmark in `file`, run by the interpreter `python`.
    pub fn python(file: &Path, python: &str) -> Self {
        ExternalBenchmark {
            run: Some(FileRun {
                file: file.to_path_buf(),
                python: python.to_string(),
                ..FileRun::default()
            }),
            driver: None,
        }
    }

    /// A benchmark that takes its file and settings from the run's
    /// parameters (see [`crate::suite`]).
    pub fn from_params() -> Self {
        ExternalBenchmark {
            run: None,
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

/// The smallest batch of calls that takes at least [`MIN_BATCH_NS`].
fn calibrate(driver: &mut Driver) -> Result<u64, BenchmarkError> {
    let mut calls = 1u64;
    loop {
        let ns = driver.warm(calls).map_err(failed)?;
        if ns >= MIN_BATCH_NS || calls >= MAX_CALLS {
            return Ok(calls);
        }
        calls *= 2;
    }
}

/// Best effort: write back dirty pages and drop the page cache (needs
/// root); the error says why not.
fn drop_page_cache() -> Result<(), String> {
    // SAFETY: sync() has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "1")
        .map_err(|e| format!("the page cache was not dropped between samples: {e}"))
}

/// `ttft_ms` / `tpot_ms` from what the calls returned.
fn latency_metrics(out: &Output) -> Vec<BenchmarkMetric> {
    [
        ("ttft_ms", &out.ttft_times_ms),
        ("tpot_ms", &out.tpot_times_ms),
    ]
    .into_iter()
    .filter_map(|(name, values)| {
        SeriesDef::new(name, "ms", false, &[], Convert::Time(1e3)).metric_of_events(
            values,
            KEEP_EVENTS,
            None,
        )
    })
    .collect()
}

/// What the adapter reported after the timed calls, as details.
fn output_details(out: &Output) -> Vec<(String, ParamValue)> {
    let mut d = Vec::new();
    let mut int = |k: &str, v: Option<u64>| {
        if let Some(v) = v {
            d.push((k.to_string(), ParamValue::Int(v as i64)));
        }
    };
    int("peak_rss_bytes", out.peak_rss_bytes);
    int("cuda_peak_allocated_bytes", out.cuda_peak_allocated_bytes);
    int("cuda_allocated_bytes", out.cuda_allocated_bytes);
    int("cuda_reserved_bytes", out.cuda_reserved_bytes);
    int("output_count", out.output_count.map(|n| n as u64));
    int("timer_resolution_ns", out.timer_resolution_ns);
    if let Some(timing) = &out.timing {
        d.push(("timing".into(), ParamValue::Str(timing.clone())));
    }
    if let Some(note) = &out.output_note {
        d.push(("output_note".into(), ParamValue::Str(note.clone())));
    }
    d
}

impl Benchmark for ExternalBenchmark {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        if self.run.is_none() {
            self.run = Some(FileRun::from_context(ctx)?);
        }
        let run = self.run.as_ref().ok_or_else(BenchmarkError::not_prepared)?;
        self.driver = Some(run.start()?);
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let run = self.run.clone().ok_or_else(BenchmarkError::not_prepared)?;
        let driver = self.driver()?;
        let calls = if run.cold_start {
            1
        } else {
            calibrate(driver)?
        };
        let defs = [SeriesDef::new(
            "latency_ms",
            "ms",
            false,
            &[],
            Convert::Time(1e3 / calls as f64),
        )];
        let mut failure = None;
        let mut warnings = Vec::new();
        let mut drop_cache = run.cold_start;
        let mut cold: Option<Driver> = None;
        let measuring = measure.measuring_flag();
        let m = measure.run(
            &MeasurePolicy::share_of(ctx, 1),
            "latency_ms",
            &defs,
            |out| {
                // After a failure, samples are placeholders: the run fails.
                let sample = if failure.is_some() {
                    None
                } else if run.cold_start {
                    if drop_cache && let Err(why) = drop_page_cache() {
                        warnings.push(why);
                        drop_cache = false;
                    }
                    match run.start() {
                        Ok(mut fresh) => {
                            let r = fresh.run(1).map_err(failed);
                            cold = Some(fresh);
                            Some(r)
                        }
                        Err(e) => Some(Err(e)),
                    }
                } else if measuring.load(Ordering::Relaxed) {
                    Some(driver.run(calls).map_err(failed))
                } else {
                    Some(driver.warm(calls).map_err(failed))
                };
                out[0] = match sample {
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
            return Err(e);
        }
        // The last cold interpreter holds the last call's output and
        // state: it is the one validated.
        if let Some(last) = cold {
            *driver = last;
        }
        let output = driver.output(run.output_file.as_deref()).map_err(failed)?;
        let mut metrics = m.metrics;
        metrics.extend(latency_metrics(&output));
        let mut details = vec![
            (
                "file".into(),
                ParamValue::Str(run.file.display().to_string()),
            ),
            ("calls_per_sample".into(), ParamValue::Int(calls as i64)),
            (
                "timer".into(),
                ParamValue::from("time.perf_counter_ns around the batch, in the adapter"),
            ),
        ];
        if run.cold_start {
            details.push((
                "cold_start".into(),
                ParamValue::from("a fresh interpreter per sample; load and setup not timed"),
            ));
        }
        details.extend(output_details(&output));
        Ok(Measured {
            metrics,
            details,
            warnings,
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
            clock_probe: false,
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
