//! `warpt stress`: sustained load on one component that also checks every
//! result, as burn-in tools do. A fast machine that computes wrong answers
//! under load fails here.
//!
//! Each target runs worker threads until the deadline; every step does a
//! unit of work and checks it against its known answer. Throughput is
//! recorded per second (a throttling machine shows a falling line).
//! `inject_error=1` corrupts one result on purpose: a self-check that the
//! detector catches it.

mod cpu;
mod network;
mod ram;
mod storage;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use warpt_model::{ParamValue, Params, ThroughputPoint};
pub use warpt_model::{StressConfig, StressOutcome};

/// The targets `warpt stress` knows.
pub const TARGETS: [&str; 4] = ["cpu", "ram", "storage", "network"];

/// Errors kept as examples.
const EXAMPLES: usize = 10;

/// The parameters each target accepts, with defaults.
pub fn default_params(target: &str) -> Option<Params> {
    let mut p: Params = [("inject_error".to_string(), ParamValue::Int(0))].into();
    match target {
        "cpu" => {
            p.insert("threads".into(), ParamValue::Int(0));
        }
        "ram" => {
            p.insert("fraction".into(), ParamValue::Float(0.5));
            p.insert("mb".into(), ParamValue::Int(0));
            p.insert("threads".into(), ParamValue::Int(0));
        }
        "storage" => {
            p.insert("path".into(), ParamValue::Str(String::new()));
            p.insert("size_mb".into(), ParamValue::Int(256));
        }
        "network" => {
            p.insert("streams".into(), ParamValue::Int(2));
            p.insert("message_kb".into(), ParamValue::Int(64));
        }
        _ => return None,
    }
    Some(p)
}

/// Checks parameters and resources before anything runs; the message names
/// what is wrong. For `ram`, also says how much memory it will take.
pub fn check(target: &str, cfg: &StressConfig<'_>) -> Result<Vec<String>, String> {
    match target {
        "ram" => ram::plan(cfg).map(|(bytes, available)| {
            vec![format!(
                "stress ram: testing {} MiB of {} MiB available",
                bytes >> 20,
                available >> 20
            )]
        }),
        "storage" => storage::check(cfg).map(|_| Vec::new()),
        "cpu" | "network" => Ok(Vec::new()),
        other => Err(format!(
            "unknown stress target '{other}'; targets: {}",
            TARGETS.join(", ")
        )),
    }
}

/// Runs the stress test on `target`.
pub fn run(target: &str, cfg: &StressConfig<'_>) -> Result<StressOutcome, String> {
    match target {
        "cpu" => cpu::run(cfg),
        "ram" => ram::run(cfg),
        "storage" => storage::run(cfg),
        "network" => network::run(cfg),
        other => Err(format!(
            "unknown stress target '{other}'; targets: {}",
            TARGETS.join(", ")
        )),
    }
}

/// Shared counters of a stress run.
#[derive(Default)]
pub(crate) struct Tally {
    /// Work done, in the unit's numerator (e.g. GFLOP), scaled by 1e6 to stay integral.
    work_micro: AtomicU64,
    checks: AtomicU64,
    errors: AtomicU64,
    examples: Mutex<Vec<String>>,
}

impl Tally {
    pub(crate) fn work(&self, amount: f64) {
        self.work_micro
            .fetch_add((amount * 1e6) as u64, Ordering::Relaxed);
    }
    pub(crate) fn checked(&self, n: u64) {
        self.checks.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn error(&self, what: impl FnOnce() -> String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut e) = self.examples.lock()
            && e.len() < EXAMPLES
        {
            e.push(what());
        }
    }
}

/// Runs `threads` workers, each calling `step` on its own state until burn-in
/// plus duration have passed (or `stop`); records work per second.
pub(crate) fn drive<S: Send>(
    cfg: &StressConfig<'_>,
    threads: usize,
    unit: &str,
    init: impl Fn(usize) -> S + Sync,
    step: impl Fn(usize, &mut S, &Tally) + Sync,
) -> StressOutcome {
    let tally = Tally::default();
    let done = AtomicBool::new(false);
    let stopped = || cfg.stop.is_some_and(|f| f.load(Ordering::Relaxed));
    let mut points = Vec::new();
    let mut recorded = 0.0;
    std::thread::scope(|s| {
        for t in 0..threads {
            let (tally, done, init, step) = (&tally, &done, &init, &step);
            s.spawn(move || {
                let cpus = crate::team::team_cpus(threads);
                warpt_system::pin_current_thread(cpus[t]);
                let mut state = init(t);
                while !done.load(Ordering::Relaxed) {
                    step(t, &mut state, tally);
                }
            });
        }
        let start = Instant::now();
        while start.elapsed() < cfg.burnin && !stopped() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut last = (Instant::now(), tally.work_micro.load(Ordering::Relaxed));
        let t0 = last.0;
        while t0.elapsed() < cfg.duration && !stopped() {
            std::thread::sleep(
                Duration::from_millis(20).min(cfg.duration.saturating_sub(t0.elapsed())),
            );
            if last.0.elapsed() >= Duration::from_secs(1) || t0.elapsed() >= cfg.duration {
                let (now, work) = (Instant::now(), tally.work_micro.load(Ordering::Relaxed));
                let dt = now.duration_since(last.0).as_secs_f64();
                if dt > 0.0 {
                    points.push(ThroughputPoint {
                        t_s: now.duration_since(t0).as_secs_f64(),
                        value: (work - last.1) as f64 / 1e6 / dt,
                    });
                }
                last = (now, work);
            }
        }
        recorded = t0.elapsed().as_secs_f64();
        done.store(true, Ordering::Relaxed);
    });
    StressOutcome {
        unit: unit.to_string(),
        throughput: points,
        checks: tally.checks.load(Ordering::Relaxed),
        errors: tally.errors.load(Ordering::Relaxed),
        examples: tally.examples.into_inner().unwrap_or_default(),
        warnings: Vec::new(),
        duration_s: recorded,
    }
}
