//! A benchmark file driven through the protocol ([`crate::driver`]) as a
//! warpt [`Benchmark`], so the harness's stages, stopping rule and worker
//! isolation apply to it unchanged: `prepare` loads the file and runs
//! `setup()`, `measure` samples `benchmark_fn()`, `validate` runs
//! `validate_result()` and then `teardown()`.
//!
//! A call of a small function can take less than the clock's resolution,
//! so one sample times a batch of calls ([`crate::batch`]); `latency_ms`
//! is per call.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tempfile::TempDir;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{ClockProbe, ParamValue, StageError, Validation};

use crate::batch;
use crate::counted;
use crate::driver::{Driver, Output};
use crate::sampling::Sampling;
use crate::shared::Lent;

/// Per-request latencies kept whole in a metric's samples.
const KEEP_EVENTS: usize = 10_000;

/// One user benchmark file under the harness.
pub struct ExternalBenchmark {
    run: Option<FileRun>,
    /// A test of the pytest plugin's, by node id: its [`FileRun`] comes
    /// from the run's `socket` parameter at `prepare`.
    test: Option<String>,
    /// Where `measure=instructions` counts come from (found in `prepare`).
    counts: Option<warpt_counts::Source>,
    driver: Option<Driver>,
    /// A pytest test's shared series, started behind `load` and `setup`
    /// ([`Driver::connect_sharing`]) and taken up by `measure`.
    sharing: Option<Sharing>,
    /// Errors met that did not stop the stages (see [`Benchmark::take_errors`]).
    errors: Vec<StageError>,
    caches: Vec<TempDir>,
    /// `driver` holds the file loaded and not set up: read by
    /// [`Benchmark::own_config`], or torn down after a trial, ready for
    /// the next trial's `setup()` in the same adapter.
    idle: bool,
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
            test: None,
            counts: None,
            driver: None,
            sharing: None,
            errors: Vec::new(),
            caches: Vec::new(),
            idle: false,
        }
    }

    /// A benchmark that takes its file and settings from the run's
    /// parameters (see [`crate::suite`]).
    pub fn from_params() -> Self {
        ExternalBenchmark {
            run: None,
            test: None,
            counts: None,
            driver: None,
            sharing: None,
            errors: Vec::new(),
            caches: Vec::new(),
            idle: false,
        }
    }

    /// The pytest test `nodeid`, measured through the plugin's socket (the
    /// run's `socket` parameter, see [`crate::pytest`]).
    pub fn pytest(nodeid: &str) -> Self {
        ExternalBenchmark {
            test: Some(nodeid.to_string()),
            ..Self::from_params()
        }
    }

    /// Ends a socket adapter's connection once its benchmark is done (a
    /// process adapter ends when the driver drops).
    fn release(&mut self) {
        if self.run.as_ref().is_some_and(|r| r.connect.is_some())
            && let Some(driver) = self.driver.take()
            && let Err(e) = driver.finish()
        {
            self.errors.push(failed(e).at_stage("teardown"));
        }
    }

    /// `e` stopped the measurement before its first sample: nothing to
    /// keep, but teardown still runs (its error kept) before `e` is
    /// reported.
    fn nothing_measured(&mut self, e: BenchmarkError) -> BenchmarkError {
        if let Some(s) = self.sharing.take() {
            s.halt();
        }
        if let Some(Err(t)) = self.driver.as_mut().map(Driver::teardown) {
            self.errors.push(failed(t).at_stage("teardown"));
        }
        self.release();
        e
    }

    /// The run its parameters (or its pytest test) describe, found once.
    fn file_run(&mut self, ctx: &RunContext) -> Result<&FileRun, BenchmarkError> {
        if self.run.is_none() {
            self.run = Some(match &self.test {
                Some(nodeid) => crate::pytest::file_run(nodeid)?,
                None => FileRun::from_context(ctx)?,
            });
        }
        warpt_harness::prepared(&self.run)
    }

    fn driver(&mut self) -> Result<&mut Driver, BenchmarkError> {
        self.driver
            .as_mut()
            .ok_or_else(BenchmarkError::not_prepared)
    }
}

/// A sample's slots: the seconds per call, and the same seconds for the
/// throughput series where there is one (its conversion inverts them).
fn fill(out: &mut [f64], seconds: f64) {
    for slot in out.iter_mut().take(2) {
        *slot = seconds;
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

mod failure;
mod file_run;
mod reported;
mod series;
mod sharing;
use failure::failed;
pub use file_run::FileRun;
use reported::{latency_metrics, ops_per_call, output_details, timer_text};
use series::{SHARED_RING, end_series, next_ahead, send_rounds};
use sharing::Sharing;

impl Benchmark for ExternalBenchmark {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let run = self.file_run(ctx)?.clone();
        if std::mem::take(&mut self.idle)
            && let Some(driver) = self.driver.as_mut()
        {
            // Loaded already (by the probe, or for an earlier trial): the
            // generators seeded afresh, as after a load, then set up.
            return driver.setup_again(run.load.reproducible).map_err(failed);
        }
        if run.count {
            // Times alone are not what was asked for: no counts, a skip.
            self.counts = Some(warpt_counts::detect().map_err(|why| {
                BenchmarkError::Skipped(format!("--measure instructions: {why}"))
            })?);
        }
        // A pytest test's first call goes with its load: the adapter need
        // not wait for warpt to read the reply and ask.
        let first = match self.test {
            Some(_) => Lent::take(SHARED_RING).ok(),
            None => None,
        };
        let driver = run.start(&mut self.caches, first.as_deref())?;
        if let Some(samples) = first
            && driver.shares_samples()
        {
            self.sharing = Some(Sharing::under_way(samples));
        }
        self.driver = Some(driver);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let run = self.run.clone().ok_or_else(BenchmarkError::not_prepared)?;
        let mut caches = std::mem::take(&mut self.caches);
        let driver = warpt_harness::prepared_mut(&mut self.driver)?;
        let sampling = match Sampling::from_config(driver.config()) {
            Ok(s) => s,
            Err(why) => {
                let e = BenchmarkError::Failed(format!("the benchmark's config: {why}"));
                return Err(self.nothing_measured(e));
            }
        };
        let ops = match ops_per_call(driver.config(), &run.load.defaults) {
            Ok(ops) => ops,
            Err(why) => {
                let e = BenchmarkError::Failed(format!("the benchmark's config: {why}"));
                return Err(self.nothing_measured(e));
            }
        };
        let mut policy = sampling.policy(MeasurePolicy::share_of(ctx, 1));
        if run.connect.is_some() {
            // A test suite's benchmarks: warm-up is at most half the
            // measurement (pytest-benchmark warms up not at all).
            policy.warmup = policy.warmup.min(policy.min_time / 2);
        }
        let calibrating = std::time::Instant::now();
        let mut warnings = Vec::new();
        // The calibrated batch, where calls are batched by warpt: its
        // warm-up goes in requests of many batches.
        let mut calibrated = None;
        // An adapter that shares its samples through a file takes one
        // request for the whole series, calibration and warm-up included,
        // warpt growing the batch and then raising the limit as the rule
        // wants more ([`sharing`]); others get the requests below.
        let mut sharing = self.sharing.take();
        let calls = if run.cold_start {
            1
        } else if let Some(calls) = sampling.fixed_calls() {
            // Pedantic: its warm-up rounds, the one Measure discards and
            // its rounds go at once, so the adapter times them back to
            // back as pytest-benchmark does (a request a round timed each
            // right after the adapter woke for it); the clock probe runs
            // first, while the adapter waits.
            measure.regime().first_clock();
            if let Err(e) = send_rounds(driver, calls, &sampling, policy.max_samples) {
                return Err(self.nothing_measured(failed(e)));
            }
            calls
        } else if driver.self_batching() || driver.cold_cache() {
            // The adapter's own timer picks its batches, or a cache flush
            // before every call makes each call its own sample.
            1
        } else {
            let target = batch::batch_ns(ctx.duration.min(policy.max_time));
            match series::calibrate(driver, &mut sharing, target, &mut warnings) {
                Ok(c) => {
                    calibrated = Some(c);
                    c.calls
                }
                Err(e) => return Err(self.nothing_measured(failed(e))),
            }
        };
        if calibrated.is_none()
            && let Some(s) = sharing.take()
        {
            // Started with the load, but not how this one is measured.
            s.halt();
        }
        // Calibration ran the function: it counts towards the warm-up.
        policy.warmup = policy.warmup.saturating_sub(calibrating.elapsed());
        // Each sample is one call's share of a timed batch (or one call);
        // a harness file's throughput is the same seconds as ops per second
        // (a pytest test's is left out: pytest-benchmark's users judge the
        // time per call, and every comparison would say it twice).
        let mut defs = vec![SeriesDef::new(
            "latency_ms",
            "ms",
            false,
            &[],
            Convert::Time(1e3),
        )];
        if run.connect.is_none() {
            defs.push(SeriesDef::rate("throughput_ops_per_sec", "ops/s", ops));
        }
        let mut drop_cache = run.cold_start;
        let mut cold: Option<Driver> = None;
        let measuring = measure.measuring_flag();
        // A request can bring several samples (a cold-cache batch, a
        // blocked_autorange); warm-up's leftovers are not measured ones.
        let queue = std::cell::RefCell::new(std::collections::VecDeque::new());
        let mut queued_measuring = false;
        let mut batch_calls = std::collections::BTreeSet::new();
        let warmup = policy.warmup;
        let mut warm_since: Option<std::time::Instant> = None;
        // While measuring, calibrated batches are asked for while the ones
        // before run ([`Driver::send_ahead`]): first as many as the
        // stopping rule will surely take, then a growing share
        // ([`batch::Requests`]). The adapter goes from one batch to the
        // next without waiting for warpt, few replies wake warpt (which
        // sleeps until each is due, [`Driver::take_ahead_due`]), and the
        // samples under way when the rule ends the series count in it. Not
        // for a fixed count of samples (pedantic rounds, each after its own
        // setup), nor a fresh interpreter per sample: neither is calibrated.
        let requests = calibrated.map(|c| batch::Requests {
            sure: batch::sure_samples(policy.min_time, policy.min_samples, c.ns),
            most: batch::samples_per_request(c.ns),
            cap: policy.max_samples as u64,
        });
        let ahead = requests.is_some();
        let mut taken = 0usize;
        // A sample's time at the pace of the latest reply, and the fastest
        // sample yet: warpt sleeps until a request could be done at that
        // speed, since waking early costs the adapter a wake-up while waking
        // late (the host's noise can halve a batch's time from one request
        // to the next) may leave it idle.
        let mut pace = Duration::from_nanos(calibrated.map_or(0, |c| c.ns));
        let mut fastest = pace;
        let mut measuring_since: Option<std::time::Instant> = None;
        if sharing.is_some() {
            // The series is under way: Measure's warm-up takes its samples
            // (and discards them) until what is left of the warm-up is
            // spent; the brief clock probe runs meanwhile.
            if ctx.clock_probe == Some(ClockProbe::Brief) {
                measure.regime().first_clock();
            }
        } else if let (Some(c), Some(r)) = (calibrated, requests) {
            // The warm-up is one request, and the first measuring one waits
            // behind it, so the adapter goes straight from one to the other;
            // a brief clock probe (pytest's tests) reads the core meanwhile,
            // the adapter busy with its own warm-up rather than waiting for
            // warpt. (A full probe also reads the FP pipes, which the
            // adapter's calls on a sibling thread would slow: it waits for
            // the end of the warm-up.)
            warm_since = Some(std::time::Instant::now());
            let sent = driver
                .send_ahead(c.warmup_calls(warmup), 1, false)
                .and_then(|()| driver.send_ahead(calls, r.next(0, u64::MAX), true));
            if let Err(e) = sent {
                return Err(self.nothing_measured(failed(e)));
            }
            if ctx.clock_probe == Some(ClockProbe::Brief) {
                measure.regime().first_clock();
            }
            // Measure's warm-up is that request's one sample.
            policy.warmup = Duration::ZERO;
        }
        let driver = std::cell::RefCell::new(driver);
        let shared = sharing.is_some();
        let sharing = std::cell::RefCell::new(sharing);
        let mut stopped = false;
        let (m, error) = measure.run_fallible_ahead(
            &policy,
            "latency_ms",
            &defs,
            |out| -> Result<(), BenchmarkError> {
                let now_measuring = measuring.load(Ordering::Relaxed);
                let mut queue = queue.borrow_mut();
                if now_measuring != queued_measuring {
                    queue.clear();
                    queued_measuring = now_measuring;
                }
                if queue.is_empty() {
                    let timed = if run.cold_start {
                        if drop_cache && let Err(why) = drop_page_cache() {
                            warnings.push(why);
                            drop_cache = false;
                        }
                        let mut fresh = run.start(&mut caches, None)?;
                        let t = fresh.timed(1, true);
                        cold = Some(fresh);
                        t
                    } else if let (false, Some(c), false) = (now_measuring, calibrated, shared) {
                        // Warm-up: the batches that fit in what is left of
                        // it, in one request (its one sample is discarded);
                        // the first was sent before sampling began.
                        let since = *warm_since.get_or_insert_with(std::time::Instant::now);
                        let mut d = driver.borrow_mut();
                        match d.take_ahead() {
                            Some(t) => t,
                            None => d.timed(
                                c.warmup_calls(warmup.saturating_sub(since.elapsed())),
                                false,
                            ),
                        }
                    } else if let (true, Some(r)) = (now_measuring || shared, requests) {
                        // Measuring, or a shared series' warm-up.
                        let mut d = driver.borrow_mut();
                        let left = if now_measuring {
                            let since =
                                *measuring_since.get_or_insert_with(std::time::Instant::now);
                            policy.max_time.saturating_sub(since.elapsed())
                        } else {
                            policy.max_time + warmup
                        };
                        // Samples that fit before the time cap after those
                        // asked for.
                        let fit = |asked: u64| {
                            let fit = left.as_nanos() / pace.as_nanos().max(1);
                            u64::try_from(fit).unwrap_or(u64::MAX).saturating_sub(asked)
                        };
                        let t = if let Some(s) = sharing.borrow_mut().as_mut() {
                            // The adapter may go on to the samples that
                            // fit before the time cap (within the sample
                            // cap), at least two past those it took, so it
                            // never waits for warpt to raise the limit: the
                            // series' end stops it after the batch under way.
                            s.timed(&mut d, taken as u64, fastest, |planned| {
                                fit(0).min(r.cap.saturating_sub(planned)).max(2)
                            })
                        } else {
                            next_ahead(&mut d, calls, r, taken as u64, fit, fastest)
                        }
                        .map_err(failed)?;
                        let n = t.samples_ns.len().max(1) as u64;
                        pace = Duration::from_nanos(t.total_ns() / n);
                        let least = t.samples_ns.iter().copied().min().unwrap_or(0);
                        fastest = fastest.min(Duration::from_nanos(least));
                        Ok(t)
                    } else {
                        // Pedantic's rounds sent at once, else a request.
                        let mut d = driver.borrow_mut();
                        match d.take_ahead() {
                            Some(t) => t,
                            None => d.timed(calls, now_measuring),
                        }
                    }
                    .map_err(failed)?;
                    if now_measuring {
                        batch_calls.insert(timed.calls);
                    }
                    queue.extend(timed.seconds_per_call());
                }
                // Driver::timed refuses a reply without samples.
                let seconds = queue.pop_front().ok_or_else(|| {
                    BenchmarkError::Failed("the adapter returned no samples".into())
                })?;
                taken += usize::from(now_measuring);
                fill(out, seconds);
                Ok(())
            },
            |out| {
                // The samples measured or under way when the series stopped.
                if !ahead {
                    return None;
                }
                if !stopped {
                    stopped = true;
                    end_series(sharing.borrow().as_ref(), &mut driver.borrow_mut(), &run);
                }
                let mut queue = queue.borrow_mut();
                if queue.is_empty() {
                    let mut d = driver.borrow_mut();
                    let taken = match sharing.borrow_mut().as_mut() {
                        Some(s) => s.stop(&mut d)?,
                        None => d.take_ahead()?,
                    };
                    match taken {
                        Ok(t) => queue.extend(t.seconds_per_call()),
                        Err(e) => return Some(Err(failed(e))),
                    }
                }
                fill(out, queue.pop_front()?);
                Some(Ok(()))
            },
        );
        // Stopped another way (the sample cap, an error, a fixed count).
        if !stopped {
            end_series(sharing.borrow().as_ref(), &mut driver.borrow_mut(), &run);
        }
        self.caches = caches;
        let samples = m.metrics[0].stats.as_ref().map_or(0, |s| s.n);
        if let Some(e) = error {
            if samples == 0 {
                return Err(self.nothing_measured(e));
            }
            warnings.push(format!(
                "measurement stopped by an error after {samples} samples: they are kept, the \
                 result failed"
            ));
            self.errors.push(e.at_stage("measure"));
        }
        // The last cold interpreter holds the last call's output and
        // state: it is the one validated.
        if let Some(last) = cold {
            self.driver = Some(last);
        }
        let driver = self.driver()?;
        let output = match driver.output(run.output_file.as_deref()) {
            Ok(o) => o,
            Err(e) => {
                let e = failed(e).at_stage("output");
                self.errors.push(e);
                Output::default()
            }
        };
        let mut metrics = m.metrics;
        metrics.extend(latency_metrics(&output));
        let per_sample = match (batch_calls.first(), batch_calls.last()) {
            (Some(a), Some(b)) if a == b => ParamValue::Int(*a as i64),
            (Some(a), Some(b)) => ParamValue::Str(format!("{a}..{b}")),
            _ => ParamValue::Int(calls as i64),
        };
        let mut details = vec![
            (
                if run.connect.is_some() {
                    "test"
                } else {
                    "file"
                }
                .into(),
                ParamValue::Str(run.file.display().to_string()),
            ),
            ("calls_per_sample".into(), per_sample),
            (
                "timer".into(),
                ParamValue::from(timer_text(output.timing.as_deref())),
            ),
        ];
        if run.cold_start {
            details.push((
                "cold_start".into(),
                ParamValue::from(
                    "a fresh interpreter per sample (empty TORCHINDUCTOR_CACHE_DIR and \
                     TRITON_CACHE_DIR); load and setup not timed",
                ),
            ));
        }
        details.extend(output_details(&output));
        if let Some(source) = &self.counts {
            let latency_s = metrics[0].value / 1e3;
            match counted::measure(source, &run.session(), &run.file, &run.load, latency_s) {
                Ok((m, d)) => {
                    metrics.extend(m);
                    details.extend(d);
                }
                Err(why) => {
                    let e = BenchmarkError::Failed(format!("counting instructions: {why}"));
                    return Err(self.nothing_measured(e));
                }
            }
        }
        Ok(Measured {
            metrics,
            details,
            warnings,
        })
    }

    fn validate(&mut self, _ctx: &RunContext) -> Validation {
        let Some(driver) = self.driver.as_mut() else {
            return Validation::fail("nothing was run");
        };
        let connected = self.run.as_ref().is_some_and(|r| r.connect.is_some());
        let (problem, closed) = driver.validate_and_teardown(connected);
        // Torn down cleanly: the adapter can serve the next trial.
        self.idle = closed.is_ok() && self.run.as_ref().is_some_and(FileRun::serves_trials);
        let verdict = match problem {
            Ok(None) => {
                Validation::pass("validate_result() found nothing wrong (or is not defined)")
            }
            Ok(Some(problem)) => Validation::fail(format!("validate_result(): {problem}")),
            Err(e) => {
                let e = failed(e).at_stage("validate");
                let v = Validation::fail(format!("validate_result() raised: {}", e.message));
                self.errors.push(e);
                v
            }
        };
        if let Err(e) = closed {
            self.errors.push(failed(e).at_stage("teardown"));
        }
        if connected {
            // The connection is ended.
            self.driver = None;
        }
        verdict
    }

    fn take_errors(&mut self) -> Vec<StageError> {
        std::mem::take(&mut self.errors)
    }

    fn runs_again(&self) -> bool {
        self.idle && self.driver.is_some()
    }

    fn own_config(
        &mut self,
        ctx: &RunContext,
    ) -> Result<Option<serde_json::Value>, BenchmarkError> {
        let run = self.file_run(ctx)?.clone();
        let driver = run.open(&mut self.caches, None)?;
        let config = driver.config().clone();
        if run.serves_trials() {
            self.driver = Some(driver);
            self.idle = true;
        }
        Ok(Some(config))
    }

    fn measured_in(&self) -> warpt_system::procstat::Measured {
        // A pytest test runs in the process that started warpt.
        match self.test {
            Some(_) => warpt_system::procstat::Measured::WithParent,
            None => warpt_system::procstat::Measured::ThisProcess,
        }
    }
}

#[cfg(test)]
mod tests;
