//! The `selftest` suite: benchmarks that fail on purpose, each in one of
//! the ways a real benchmark can, so the harness's isolation, watchdog and
//! crash reporting are tested against the real thing. The CLI registers it
//! only when `WARPT_SELFTEST=1`.
//!
//! | benchmark | what it does |
//! |---|---|
//! | `ok` | measures a short spin and passes |
//! | `hang_setup` | never finishes `prepare` |
//! | `hang_measure` | calls its sampling closure `samples` times (warm-up included), then hangs |
//! | `segfault` | dies of SIGSEGV while measuring |
//! | `abort` | aborts (SIGABRT) while measuring |
//! | `alloc` | allocates and touches `mb` MiB, measures, passes |
//! | `oom` | allocates until `limit_mb` (a data-segment limit) or the OS stops it |
//! | `garbage` | prints non-protocol text on stdout |
//! | `no_result` | exits 0 without reporting a result |
//! | `work` | a fixed chain of integer steps per sample; `slowdown_pct` adds that much work (a known change for compare) |

mod work;

use std::hint::black_box;
use std::time::{Duration, Instant};

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef, Suite,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, Validation};

/// The suite's name.
pub const SUITE: &str = "selftest";

/// Every benchmark name, in listing order.
pub const NAMES: [&str; 10] = [
    "ok",
    "hang_setup",
    "hang_measure",
    "segfault",
    "abort",
    "alloc",
    "oom",
    "garbage",
    "no_result",
    work::NAME,
];

/// The fault-injection suite.
pub struct SelftestSuite;

fn params(name: &str) -> Vec<Param> {
    match name {
        "hang_measure" => vec![Param::int("samples", 5, 1..)],
        "alloc" => vec![Param::int("mb", 256, 1..).unit("MiB")],
        "oom" => vec![Param::int("limit_mb", 512, 0..).unit("MiB")],
        work::NAME => work::params(),
        _ => Vec::new(),
    }
}

fn description(name: &str) -> &'static str {
    match name {
        "ok" => "measures a short spin loop and passes",
        "hang_setup" => "never finishes its setup stage",
        "hang_measure" => {
            "takes `samples` samples (the warm-up one included), then hangs in the measurement stage"
        }
        "segfault" => "dies of SIGSEGV in the measurement stage",
        "abort" => "aborts (SIGABRT) in the measurement stage",
        "alloc" => "allocates and touches `mb` MiB, then measures a pass over it and passes",
        "oom" => {
            "allocates until its data-segment limit of `limit_mb` MiB (0: none) or the OS stops it"
        }
        "garbage" => "writes text that is not a protocol event on stdout",
        work::NAME => {
            "times a chain of `iterations` dependent integer steps; `slowdown_pct` (test-only) \
             adds that share of steps, a slowdown of known size for checking `benchmark compare`"
        }
        _ => "exits with status 0 without reporting a result",
    }
}

impl Suite for SelftestSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "fault injection for the harness (shown with WARPT_SELFTEST=1)"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        NAMES
            .iter()
            .map(|n| {
                BenchmarkSpec::builder(SUITE, n)
                    // `work` is a chain of dependent integer steps: CPU work,
                    // probed for the clock regime like the other CPU benchmarks.
                    .component(if *n == work::NAME {
                        BenchmarkComponent::Cpu
                    } else {
                        BenchmarkComponent::System
                    })
                    .description(description(n))
                    .duration(0.2)
                    .params(params(n))
                    .metric(if *n == work::NAME { "time" } else { "spin" })
                    .build()
            })
            .collect()
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        if name == work::NAME {
            return Some(Box::new(work::Work::default()));
        }
        NAMES.iter().find(|n| **n == name).map(|n| {
            Box::new(Faulty {
                name: n,
                buffer: Vec::new(),
            }) as Box<dyn Benchmark>
        })
    }
}

/// One fault-injecting benchmark.
struct Faulty {
    name: &'static str,
    buffer: Vec<u8>,
}

/// Spins for about 100 µs: the unit of work every measurement samples.
fn spin() -> f64 {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < Duration::from_micros(100) {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    start.elapsed().as_secs_f64()
}

/// Caps this process's private writable memory (RLIMIT_DATA) at its current
/// size plus `mb` MiB.
///
/// Not RLIMIT_AS: glibc reserves 64 MiB of address space (transiently 128) for
/// the malloc arena of each new thread, and the worker's event flusher may do
/// that while the limit is computed, moving the budget by more than the limit
/// itself. Those reservations are `PROT_NONE`, which RLIMIT_DATA (Linux 4.7+)
/// does not count, so the budget is what it says.
fn limit_data_segment(mb: u64) -> Result<(), BenchmarkError> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let data_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmData:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let limit = data_kib * 1024 + (mb << 20);
    let rl = libc::rlimit {
        rlim_cur: limit as libc::rlim_t,
        rlim_max: limit as libc::rlim_t,
    };
    // SAFETY: setrlimit reads a valid rlimit struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_DATA, &rl) } != 0 {
        return Err(BenchmarkError::Failed(format!(
            "setrlimit(RLIMIT_DATA): {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

impl Benchmark for Faulty {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        match self.name {
            "hang_setup" => loop {
                std::thread::sleep(Duration::from_secs(1));
            },
            "alloc" => {
                let mb = ctx.int_param("mb", 1)? as usize;
                let mut v = vec![0u8; mb << 20];
                // Touch every page so it is resident, not just reserved.
                for page in v.chunks_mut(4096) {
                    page[0] = 1;
                }
                self.buffer = v;
            }
            "oom" => {
                let limit = ctx.int_param("limit_mb", 0)? as u64;
                if limit > 0 {
                    limit_data_segment(limit)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let policy = MeasurePolicy::share_of(ctx, 1);
        let def = SeriesDef::new("spin", "us", false, &[], Convert::Time(1e6));
        let hang_after = match self.name {
            "hang_measure" => Some(ctx.int_param("samples", 1)? as usize),
            _ => None,
        };
        match self.name {
            "segfault" => {
                // A real invalid access, not raise(): Rust's runtime handles a
                // raised SIGSEGV (for stack overflows) and would return.
                let bad = std::hint::black_box(8usize) as *mut u8;
                // SAFETY: not safe at all, on purpose: this write faults.
                unsafe { bad.write_volatile(1) };
            }
            "abort" => std::process::abort(),
            "garbage" => println!("this line is not a protocol event"),
            "no_result" => std::process::exit(0),
            "oom" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    let mut chunk = vec![0u8; 16 << 20];
                    for page in chunk.chunks_mut(4096) {
                        page[0] = 1;
                    }
                    hoard.push(chunk);
                }
            }
            _ => {}
        }
        // Counts measured samples only: warm-up calls do not bring the hang
        // closer, so it happens in `measure` whatever the burn-in.
        let mut taken = 0usize;
        let measuring = measure.measuring_flag();
        let buffer = &self.buffer;
        let m = measure.run(&policy, self.name, std::slice::from_ref(&def), |out| {
            let counted = measuring.load(std::sync::atomic::Ordering::Relaxed);
            if counted && hang_after.is_some_and(|n| taken >= n) {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            taken += usize::from(counted);
            out[0] = spin();
            if !buffer.is_empty() {
                black_box(buffer.iter().step_by(4096).map(|&b| b as u64).sum::<u64>());
            }
        });
        Ok(Measured {
            metrics: m.metrics,
            ..Measured::default()
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        Validation::pass("nothing to check")
    }
}
