//! The clock a core really runs at, for deriving theoretical peaks.
//!
//! cpufreq states the maximum where the kernel has a driver for it. Under
//! most hypervisors it does not, and /proc/cpuinfo's `cpu MHz` is then the
//! nominal (base) clock the hypervisor reports, often far below the boost
//! clock the core actually runs at, so a peak derived from it is too low
//! and measured shares come out above 1. There the clock is measured as
//! peak tools do: a chain of dependent one-cycle integer adds, timed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where a clock figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// cpufreq's `cpuinfo_max_freq`.
    Cpufreq,
    /// Timed chain of dependent integer adds on this core.
    Measured,
    /// /proc/cpuinfo's `cpu MHz` (may be the nominal clock).
    Nominal,
}

impl ClockSource {
    /// The name recorded in results (`clock_source`).
    pub fn as_str(self) -> &'static str {
        match self {
            ClockSource::Cpufreq => "cpufreq",
            ClockSource::Measured => "measured",
            ClockSource::Nominal => "nominal",
        }
    }
}

/// A core clock and its source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// MHz.
    pub mhz: f64,
    /// Where it came from.
    pub source: ClockSource,
}

/// The clock for a peak: cpufreq's maximum, else the fastest of `readings`
/// ([`measure_mhz`] taken around a benchmark's parts, so one slow moment of
/// the host does not set the peak), else the nominal clock.
pub fn clock_from(readings: &[f64]) -> Option<Clock> {
    cpufreq_max_mhz()
        .map(|mhz| Clock {
            mhz,
            source: ClockSource::Cpufreq,
        })
        .or_else(|| {
            let fastest = readings
                .iter()
                .copied()
                .filter(|m| *m > 0.0)
                .reduce(f64::max);
            fastest.map(|mhz| Clock {
                mhz,
                source: ClockSource::Measured,
            })
        })
        .or_else(|| {
            crate::cpu_info().mhz.filter(|m| *m > 0.0).map(|mhz| Clock {
                mhz,
                source: ClockSource::Nominal,
            })
        })
}

/// cpufreq's maximum for CPU 0, MHz.
fn cpufreq_max_mhz() -> Option<f64> {
    let khz: f64 = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (khz > 0.0).then_some(khz / 1000.0)
}

/// Dependent adds per loop iteration of [`add_chain`].
const ADDS_PER_ITER: u64 = 100;

/// Runs `iters x ADDS_PER_ITER` dependent one-cycle adds (one per cycle on
/// every x86-64 and AArch64 core; the loop counter runs beside the chain).
#[cfg(target_arch = "x86_64")]
fn add_chain(iters: u64) {
    // SAFETY: register-only arithmetic and a local branch.
    unsafe {
        std::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {one}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) 0u64 => _,
            // A register, not an immediate: Golden Cove and later fold
            // chains of add-immediate at rename, several per cycle.
            one = in(reg) 1u64,
            n = inout(reg) iters.max(1) => _,
            options(nomem, nostack),
        );
    }
}

#[cfg(target_arch = "aarch64")]
fn add_chain(iters: u64) {
    // SAFETY: register-only arithmetic and a local branch.
    unsafe {
        std::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {x}, #1",
            ".endr",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            x = inout(reg) 0u64 => _,
            n = inout(reg) iters.max(1) => _,
            options(nomem, nostack),
        );
    }
}

/// How long a reading runs its kernel, untimed, before timing it.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Untimed warm-up, for a core that may have been idle.
    warmup: Duration,
    /// Timed runs of about 0.25 ms; the fastest counts.
    chains: usize,
}

/// A full reading of [`measure_mhz`] or [`measure_fp_gflops`]: 2 ms of
/// warm-up, the fastest of 15 runs (about 6 ms).
const FULL: Reading = Reading {
    warmup: Duration::from_millis(2),
    chains: 15,
};

/// A brief reading ([`measure_mhz_brief`]): the full reading's 2 ms of
/// warm-up, the fastest of 5 runs (about 3.3 ms with the length known).
/// Without the warm-up, a core that had idled while another process ran
/// read 13-18% slow on a KVM guest (2278 against 2694 MHz in the next
/// session): a gap between two runs' clocks that was not there.
const BRIEF: Reading = Reading {
    warmup: Duration::from_millis(2),
    chains: 5,
};

/// Iterations of the add chain that took about 0.25 ms when first found
/// (0: not yet): later readings start from it instead of doubling up
/// from 200 again.
static ADD_CHAIN_ITERS: AtomicU64 = AtomicU64::new(0);
/// The same for the FP mix.
static FP_MIX_ITERS: AtomicU64 = AtomicU64::new(0);

/// Units per second of `kernel` (each of its iterations doing `per_iter`
/// units) on this core now: after `reading.warmup` of it, the fastest of
/// `reading.chains` timed runs of about 0.25 ms, light enough to read around
/// every series of a benchmark. Interrupts and steal only ever slow a run
/// down, so the fastest is what the core reaches.
fn fastest(kernel: fn(u64), per_iter: u64, reading: Reading, known: &AtomicU64) -> Option<f64> {
    let warm = Instant::now();
    while warm.elapsed() < reading.warmup {
        kernel(200);
    }
    // The length found before (the core may have run slower then: a run
    // is then a little longer, never too short to time), or doubled up
    // from 200 until a run takes 0.25 ms.
    let mut iters = known.load(Ordering::Relaxed).max(200);
    loop {
        let t = Instant::now();
        kernel(iters);
        if t.elapsed() >= Duration::from_micros(250) || iters > 1 << 30 {
            break;
        }
        iters *= 2;
    }
    known.store(iters, Ordering::Relaxed);
    let best = (0..reading.chains)
        .map(|_| {
            let t = Instant::now();
            kernel(iters);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    let rate = (iters * per_iter) as f64 / best;
    (rate.is_finite() && rate > 0.0).then_some(rate)
}

/// Measures this core's clock now, MHz, from the dependent add chain
/// ([`fastest`]). A hypervisor's clock wanders by a few percent over time,
/// so a peak takes the fastest of several readings ([`clock_from`]). Where
/// cpufreq states a maximum the chain is still timed: that is not what the
/// core runs at now.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn measure_mhz() -> Option<f64> {
    fastest(add_chain, ADDS_PER_ITER, FULL, &ADD_CHAIN_ITERS).map(|hz| hz / 1e6)
}

/// [`measure_mhz`] in about 3.3 ms: the same warm-up, the fastest of 5
/// runs instead of 15. For a reading once per benchmark where there are many short ones
/// (a pytest session's tests).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn measure_mhz_brief() -> Option<f64> {
    fastest(add_chain, ADDS_PER_ITER, BRIEF, &ADD_CHAIN_ITERS).map(|hz| hz / 1e6)
}

/// Not measurable on this architecture.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn measure_mhz() -> Option<f64> {
    None
}

/// Not measurable on this architecture.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn measure_mhz_brief() -> Option<f64> {
    None
}

/// Floating-point operations per iteration of [`fp_mix`]: 4 x (8 `mulpd`
/// + 4 `addpd`) of two lanes each.
const FP_FLOPS_PER_ITER: u64 = 4 * 12 * 2;

/// A fixed mix of independent SSE2 multiplies (8 accumulators) and adds
/// (4), `iters` times: bound by the core's FP pipes, not by a dependency,
/// so another thread on the same physical core slows it where it does not
/// slow the add chain. SSE2 is every x86-64's baseline, and the values stay
/// exactly 1 and 0 (no denormals, no overflow).
#[cfg(target_arch = "x86_64")]
fn fp_mix(iters: u64) {
    use std::arch::x86_64::{__m128d, _mm_set1_pd};
    // SAFETY: SSE2 is part of x86-64; the block is register-only
    // arithmetic and a local branch.
    unsafe {
        let (one, zero): (__m128d, __m128d) = (_mm_set1_pd(1.0), _mm_set1_pd(0.0));
        std::arch::asm!(
            "2:",
            ".rept 4",
            "mulpd {a0}, {one}",
            "mulpd {a1}, {one}",
            "mulpd {a2}, {one}",
            "mulpd {a3}, {one}",
            "addpd {b0}, {zero}",
            "mulpd {a4}, {one}",
            "mulpd {a5}, {one}",
            "addpd {b1}, {zero}",
            "mulpd {a6}, {one}",
            "mulpd {a7}, {one}",
            "addpd {b2}, {zero}",
            "addpd {b3}, {zero}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            a0 = inout(xmm_reg) one => _,
            a1 = inout(xmm_reg) one => _,
            a2 = inout(xmm_reg) one => _,
            a3 = inout(xmm_reg) one => _,
            a4 = inout(xmm_reg) one => _,
            a5 = inout(xmm_reg) one => _,
            a6 = inout(xmm_reg) one => _,
            a7 = inout(xmm_reg) one => _,
            b0 = inout(xmm_reg) zero => _,
            b1 = inout(xmm_reg) zero => _,
            b2 = inout(xmm_reg) zero => _,
            b3 = inout(xmm_reg) zero => _,
            one = in(xmm_reg) one,
            zero = in(xmm_reg) zero,
            n = inout(reg) iters.max(1) => _,
            options(nomem, nostack),
        );
    }
}

/// One core's floating-point throughput now, GFLOP/s, from the fixed SSE2
/// mix ([`fastest`]): the regime probe for another thread sharing the core.
#[cfg(target_arch = "x86_64")]
pub fn measure_fp_gflops() -> Option<f64> {
    fastest(fp_mix, FP_FLOPS_PER_ITER, FULL, &FP_MIX_ITERS).map(|f| f / 1e9)
}

/// Not probed on this architecture (the mix is written for x86-64).
#[cfg(not(target_arch = "x86_64"))]
pub fn measure_fp_gflops() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_add_chain_runs_at_a_plausible_clock_and_scales_with_length() {
        let mhz = measure_mhz().unwrap();
        assert!((200.0..8000.0).contains(&mhz), "{mhz} MHz");
        let brief = measure_mhz_brief().unwrap();
        assert!((200.0..8000.0).contains(&brief), "{brief} MHz (brief)");
        // The FP mix does at least one of its 2-lane operations every
        // fourth cycle and at most 16 flops a cycle (SSE2 on any core).
        #[cfg(target_arch = "x86_64")]
        {
            let gflops = measure_fp_gflops().unwrap();
            let per_cycle = gflops * 1e3 / mhz;
            assert!(
                (0.5..=16.0).contains(&per_cycle),
                "{gflops} GFLOP/s at {mhz} MHz"
            );
        }
        // Twice the adds take about twice the time: the chain is what is timed.
        let time = |iters| {
            (0..11)
                .map(|_| {
                    let t = Instant::now();
                    add_chain(iters);
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        let ratio = time(40_000) / time(20_000);
        assert!((1.6..2.4).contains(&ratio), "{ratio}");
    }

    #[test]
    fn a_clock_is_found_and_named() {
        let readings: Vec<f64> = measure_mhz().into_iter().collect();
        let c = clock_from(&readings).unwrap();
        assert!(c.mhz > 0.0);
        let expected = if cpufreq_max_mhz().is_some() {
            ClockSource::Cpufreq
        } else {
            ClockSource::Measured
        };
        assert_eq!(c.source, expected);
    }
}
