//! CPU stress: the FMA kernels of `cpu_flops` on every CPU, every result
//! compared with its closed form.

use std::hint::black_box;

use super::{StressConfig, StressOutcome, drive};
use crate::cpu_flops::{Isa, IsaKernels};

/// Iterations per step (a few milliseconds), kept below the fp32-exact bound.
const ITERS: u64 = 1 << 20;

pub(crate) fn run(cfg: &StressConfig<'_>) -> Result<StressOutcome, String> {
    let isa = Isa::detect();
    let threads = crate::team::team_cpus(cfg.int("threads").max(0) as usize).len();
    let inject = cfg.inject();
    let want = 1.0 + ITERS as f64 * 0.5;
    let flops64 = isa.flops_per_iter(8) as f64 * ITERS as f64 / 1e9;
    let flops32 = isa.flops_per_iter(4) as f64 * ITERS as f64 / 1e9;
    Ok(drive(
        cfg,
        threads,
        "GFLOP/s",
        |_| 0u64,
        |t, step, tally| {
            *step += 1;
            let (mut lo, hi, flops, what) = if step.is_multiple_of(2) {
                let (lo, hi) = isa.fma_f64(ITERS, black_box(1.0), black_box(0.5));
                (lo, hi, flops64, "fp64")
            } else {
                let (lo, hi) = isa.fma_f32(ITERS, black_box(1.0), black_box(0.5));
                (f64::from(lo), f64::from(hi), flops32, "fp32")
            };
            if inject && t == 0 && *step == 1 {
                // The self-check: one flipped mantissa bit in one lane.
                lo = f64::from_bits(lo.to_bits() ^ 1 << 40);
            }
            tally.work(flops);
            tally.checked(1);
            if lo != want || hi != want {
                tally.error(|| format!("thread {t} step {step} ({what}): lanes in [{lo}, {hi}], expected exactly {want}"));
            }
        },
    ))
}
