//! Short probes of the FMA peak for other benchmarks: how far one thread
//! scales to many ([`scaling_probe`]), and the peak a product's rate is a
//! share of ([`fma_peak`]).

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::kernels::{Isa, IsaKernels, MAX_ITERS};
use crate::team::{run_team, team_cpus};

/// Rounds of the fp64 kernel [`scaling_probe`] times per team.
const PROBE_ROUNDS: usize = 7;

/// The scaling check for a benchmark without a one-thread series of its
/// own: all of `cpus` together against `cpus[0]` alone running the fp64
/// peak kernel in a few short rounds (about 10 ms), recorded as `what`.
/// Pinned to separate physical cores the rate multiplies; pinned to CPUs
/// that share a core right now (a hypervisor's choice the guest cannot
/// see) it does not.
pub fn scaling_probe(cpus: &[usize], what: &str) -> Option<warpt_model::ScalingCheck> {
    if cpus.len() < 2 {
        return None;
    }
    let call = fma_call(FmaPrecision::Fp64);
    let iters = calibrated(call, Duration::from_micros(500));
    let fastest = |team: &[usize]| fastest_round(team, iters, PROBE_ROUNDS, call);
    let one = fastest(&cpus[..1]);
    let all = fastest(cpus);
    let ratio = cpus.len() as f64 * one / all;
    ratio.is_finite().then(|| warpt_model::ScalingCheck {
        what: what.to_string(),
        threads: cpus.len() as u32,
        cores: warpt_system::physical_cores(cpus) as u32,
        ratio,
    })
}

/// The precisions [`fma_peak`] measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmaPrecision {
    /// fp64 fused multiply-adds.
    Fp64,
    /// fp32 fused multiply-adds.
    Fp32,
}

/// Rounds [`fma_peak`] keeps the fastest of.
const PEAK_ROUNDS: usize = 20;

/// The peak `cpu_flops` measures for `precision` on `threads` CPUs (0: all
/// this process may use; [`team_cpus`] picks them), in GFLOP/s: its FMA
/// kernel on every one of them at once, the fastest of 20 rounds of about
/// a millisecond each. What a product's rate is stated as a share of
/// (`micro/gemm`'s `peak_share`); a peak, so the fastest round, not the
/// median.
pub fn fma_peak(precision: FmaPrecision, threads: usize) -> f64 {
    let call = fma_call(precision);
    let iters = calibrated(call, Duration::from_millis(1));
    let cpus = team_cpus(threads);
    let fastest = fastest_round(&cpus, iters, PEAK_ROUNDS, call);
    let bytes = match precision {
        FmaPrecision::Fp64 => 8,
        FmaPrecision::Fp32 => 4,
    };
    (Isa::detect().flops_per_iter(bytes) * iters * cpus.len() as u64) as f64 / fastest / 1e9
}

/// One call of this CPU's FMA kernel of `precision` for `n` iterations.
fn fma_call(precision: FmaPrecision) -> impl Fn(u64) + Copy + Sync {
    let isa = Isa::detect();
    move |n| match precision {
        FmaPrecision::Fp64 => {
            black_box(isa.fma_f64(n, black_box(1.0), black_box(0.5)));
        }
        FmaPrecision::Fp32 => {
            black_box(isa.fma_f32(n, black_box(1.0), black_box(0.5)));
        }
    }
}

/// The fastest of `rounds` rounds (seconds) of `call(iters)` on every one
/// of `cpus` at once.
fn fastest_round(cpus: &[usize], iters: u64, rounds: usize, call: impl Fn(u64) + Sync) -> f64 {
    run_team(
        cpus,
        |_| (),
        |_, _, n| call(n),
        |team| {
            (0..rounds)
                .map(|_| team.round(iters).as_secs_f64())
                .fold(f64::INFINITY, f64::min)
        },
    )
    .0
}

/// The iterations (a power of two, at most [`MAX_ITERS`]) one call of
/// `kernel` takes to run at least `long`.
fn calibrated(kernel: impl Fn(u64), long: Duration) -> u64 {
    let mut iters = 1u64 << 10;
    while iters < MAX_ITERS {
        let t = Instant::now();
        kernel(iters);
        if t.elapsed() >= long {
            break;
        }
        iters *= 2;
    }
    iters.min(MAX_ITERS)
}
