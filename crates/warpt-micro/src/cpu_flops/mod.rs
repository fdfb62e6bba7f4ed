//! `cpu_flops`: peak throughput in every precision the CPU has — fp64 and
//! fp32 FMA, bf16 and fp16, int8 dot products — one thread and all threads.

mod amx;
mod kernels;
mod low;
mod probe;

use std::hint::black_box;
use std::time::{Duration, Instant};

use warpt_harness::SeriesMetrics;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

pub use kernels::{Isa, IsaKernels, MAX_ITERS};
pub use low::{LowKernel, LowPrecision};
pub use probe::{FmaPrecision, fma_peak, scaling_probe};

use crate::team::{run_team, team_cpus};

/// Benchmark name within the micro suite.
pub const NAME: &str = "cpu_flops";

/// Time one sample should take; the iteration count is calibrated to it.
const SAMPLE_TARGET: Duration = Duration::from_millis(10);

/// The spec of `cpu_flops`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Cpu)
        .description(
            "Peak throughput: independent chains of fused multiply-adds in the widest SIMD the CPU \
             has (AVX-512F > AVX2+FMA > SSE2; NEON on AArch64) in fp64 and fp32, and the \
             low-precision units where present: bf16 (AVX512_BF16 vdpbf16ps), fp16 (AVX512_FP16), \
             int8 (AVX512_VNNI / AVX-VNNI vpdpbusd, else AVX2 vpmaddubsw+vpmaddwd), and AMX tiles: \
             bf16_amx (tdpbf16ps) and int8_amx (tdpbssd), on one pinned \
             thread and on one pinned thread per allowed CPU. 2 operations per multiply-add (GFLOP/s; \
             GOP/s for int8); a precision the CPU lacks is named with the missing ISA. Validation: \
             every lane equals its closed-form value exactly.",
        )
        .duration(4.0)
        .param(
            Param::int("threads", 0, 0..)
                .help("threads for the all-threads series; 0 = one per CPU this process may use"),
        )
        .param(
            Param::choice(
                "precision",
                "all",
                &["all", "fp64", "fp32", "bf16", "fp16", "int8", "bf16_amx", "int8_amx"],
            )
            .help(
                "all (every precision this CPU has), or one of fp64, fp32, bf16, fp16, int8, \
                 bf16_amx, int8_amx",
            ),
        )
        .metric("gflops")
        .build()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Precision {
    F64,
    F32,
    Low(LowPrecision, LowKernel),
}

impl Precision {
    fn tag(self) -> &'static str {
        match self {
            Precision::F64 => "fp64",
            Precision::F32 => "fp32",
            Precision::Low(p, _) => p.tag(),
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Precision::Low(p, _) => p.unit(),
            _ => "GFLOP/s",
        }
    }

    /// Operations of one kernel call of `iters` iterations on one thread.
    fn ops(self, isa: Isa, iters: u64) -> u64 {
        match self {
            Precision::F64 => isa.flops_per_iter(8) * iters,
            Precision::F32 => isa.flops_per_iter(4) * iters,
            Precision::Low(_, k) => k.ops_per_iter() * iters,
        }
    }

    /// Runs one kernel call: the (min, max) over its lanes.
    fn run(self, isa: Isa, iters: u64) -> (f64, f64) {
        match self {
            Precision::F64 => isa.fma_f64(iters, black_box(1.0), black_box(0.5)),
            Precision::F32 => {
                let (lo, hi) = isa.fma_f32(iters, black_box(1.0), black_box(0.5));
                (f64::from(lo), f64::from(hi))
            }
            Precision::Low(_, k) => k.run(iters, black_box(1)),
        }
    }

    /// The most iterations per call whose closed form stays exact.
    fn max_iters(self) -> u64 {
        match self {
            Precision::Low(_, k) => k.max_iters(),
            _ => MAX_ITERS,
        }
    }

    /// What every lane must hold after `iters` iterations.
    fn expected(self, iters: u64) -> f64 {
        match self {
            Precision::F64 | Precision::F32 => 1.0 + iters as f64 * 0.5,
            Precision::Low(_, k) => k.expected(iters),
        }
    }
}

/// The running benchmark.
pub struct CpuFlops {
    isa: Isa,
    threads: usize,
    iters: u64,
    /// The precisions to measure, each with its calibrated iterations per sample.
    plan: Vec<(Precision, u64)>,
    /// Low precisions this CPU lacks, with the missing ISA.
    unavailable: Vec<(LowPrecision, String)>,
    /// Per (precision, thread count): the number of kernel calls whose lanes
    /// all equalled the closed form, and the first mismatch seen.
    checked: u64,
    mismatch: Option<String>,
}

impl CpuFlops {
    /// A fresh instance.
    pub fn new() -> Self {
        CpuFlops {
            isa: Isa::detect(),
            threads: 1,
            iters: 1 << 16,
            plan: Vec::new(),
            unavailable: Vec::new(),
            checked: 0,
            mismatch: None,
        }
    }

    fn check(&mut self, precision: Precision, iters: u64, lo: f64, hi: f64) {
        let want = precision.expected(iters);
        if lo == want && hi == want {
            self.checked += 1;
        } else if self.mismatch.is_none() {
            self.mismatch = Some(format!(
                "{} after {iters} iterations: lanes in [{lo}, {hi}], expected exactly {want}",
                precision.tag()
            ));
        }
    }

    /// Runs one series and returns the metric.
    fn series(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
        (precision, iters): (Precision, u64),
        threads: usize,
        label_threads: &str,
    ) -> warpt_model::BenchmarkMetric {
        let isa = self.isa;
        let policy = MeasurePolicy::share_of(ctx, 2 * self.plan.len());
        let cpus = team_cpus(threads);
        let label = format!("{} threads={label_threads}", precision.tag());
        // Each thread keeps the (min, max) its last call produced.
        let kernel = move |_: usize, out: &mut (f64, f64), n: u64| {
            *out = precision.run(isa, n);
        };
        let flops = (precision.ops(isa, iters) * cpus.len() as u64) as f64;
        let def = SeriesDef::new(
            "gflops",
            precision.unit(),
            true,
            &[
                ("precision", precision.tag().into()),
                ("threads", label_threads.into()),
            ],
            Convert::Rate(flops / 1e9),
        );
        let (measurement, states) = run_team(
            &cpus,
            |_| (0.0, 0.0),
            kernel,
            |rounds| {
                measure.run(&policy, &label, std::slice::from_ref(&def), |out| {
                    out[0] = rounds.round(iters).as_secs_f64();
                })
            },
        );
        for (lo, hi) in states {
            self.check(precision, iters, lo, hi);
        }
        measurement
            .metrics
            .into_iter()
            .next()
            .unwrap_or_else(|| def.metric(&[], None))
    }
}

impl Default for CpuFlops {
    fn default() -> Self {
        CpuFlops::new()
    }
}

impl Benchmark for CpuFlops {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        self.threads = team_cpus(ctx.int_param("threads", 0)? as usize).len();
        let wanted = ctx.str_param("precision")?;
        let mut precisions = Vec::new();
        if matches!(wanted, "all" | "fp64") {
            precisions.push(Precision::F64);
        }
        if matches!(wanted, "all" | "fp32") {
            precisions.push(Precision::F32);
        }
        for low in LowPrecision::ALL {
            if wanted != "all" && wanted != low.tag() {
                continue;
            }
            match low.kernel() {
                Ok(kernel) => precisions.push(Precision::Low(low, kernel)),
                // Asked for by name: nothing else to measure.
                Err(why) if wanted == low.tag() => {
                    return Err(BenchmarkError::Skipped(format!("{}: {why}", low.tag())));
                }
                Err(why) => self.unavailable.push((low, why)),
            }
        }
        if precisions.is_empty() {
            return Err(BenchmarkError::InvalidParam {
                key: "precision".into(),
                reason: format!(
                    "'{wanted}' is not one of all, fp64, fp32, bf16, fp16, int8, bf16_amx, int8_amx"
                ),
            });
        }
        // Calibrate each kernel's per-sample iteration count on one thread.
        self.plan = precisions
            .into_iter()
            .map(|p| {
                let probe = 1u64 << 14;
                let start = Instant::now();
                black_box(p.run(self.isa, probe));
                let per_iter = start.elapsed().as_secs_f64() / probe as f64;
                let want = (SAMPLE_TARGET.as_secs_f64() / per_iter.max(1e-12)) as u64;
                (p, want.clamp(1 << 12, p.max_iters()))
            })
            .collect();
        self.iters = self.plan.first().map_or(self.iters, |(_, i)| *i);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let all = self.threads;
        let mut metrics = Vec::new();
        let cores = warpt_system::physical_cores(&team_cpus(all)) as u32;
        for planned in self.plan.clone() {
            let mut rates = [0.0; 2];
            for (rate, (threads, label)) in rates.iter_mut().zip([(1, "1"), (all, "all")]) {
                let m = self.series(ctx, measure, planned, threads, label);
                *rate = m.value;
                metrics.push(m);
            }
            // The scaling check: separate cores multiply one thread's rate.
            if all > 1 && rates[0] > 0.0 {
                measure.regime().scaling(warpt_model::ScalingCheck {
                    what: planned.0.tag().to_string(),
                    threads: all as u32,
                    cores,
                    ratio: rates[1] / rates[0],
                });
            }
        }
        let mut details = vec![
            ("isa".to_string(), ParamValue::from(self.isa.name())),
            ("threads_all".to_string(), ParamValue::Int(all as i64)),
            (
                "accumulators".to_string(),
                ParamValue::Int(self.isa.accumulators() as i64),
            ),
            (
                "iterations_per_sample".to_string(),
                ParamValue::Int(self.iters as i64),
            ),
        ];
        for (precision, iters) in &self.plan {
            if let Precision::Low(low, kernel) = precision {
                let tag = low.tag();
                details.push((format!("kernel_{tag}"), ParamValue::from(kernel.name())));
                details.push((
                    format!("counting_{tag}"),
                    ParamValue::from(kernel.counting()),
                ));
                details.push((
                    format!("iterations_per_sample_{tag}"),
                    ParamValue::Int(*iters as i64),
                ));
            }
        }
        for (low, why) in &self.unavailable {
            details.push((
                format!("kernel_{}", low.tag()),
                ParamValue::from(why.clone()),
            ));
        }
        let mut warnings = Vec::new();
        // The harness read the clock before each series and after the last
        // (where cpufreq cannot say it, the fastest sets the peak).
        let peak = warpt_system::clock::clock_from(measure.regime().clock_mhz())
            .map(|c| warpt_system::peak::theoretical_peak(self.isa, all, c));
        match peak {
            Some(peak) => {
                for m in &metrics {
                    let precision = m.tags.get("precision").map(String::as_str).unwrap_or("");
                    let threads = m.tags.get("threads").map(String::as_str).unwrap_or("");
                    // The FMA peak has no low-precision counterpart here:
                    // those units differ by microarchitecture.
                    let ceiling = match precision {
                        "fp64" => peak.fp64_gflops,
                        "fp32" => peak.fp32_gflops,
                        _ => continue,
                    } / if threads == "1" { all as f64 } else { 1.0 };
                    let share = m.value / ceiling;
                    let key = format!("peak_share_{precision}_{threads}");
                    if let Some(why) = peak.share_above_one(&key, share) {
                        warnings.push(why);
                    }
                    details.push((key, ParamValue::Float(share)));
                }
                details.extend(peak.clock_details());
                details.push((
                    "peak_gflops_fp64".into(),
                    ParamValue::Float(peak.fp64_gflops),
                ));
                details.push((
                    "peak_gflops_fp32".into(),
                    ParamValue::Float(peak.fp32_gflops),
                ));
                details.push(("peak_derivation".into(), ParamValue::Str(peak.derivation)));
            }
            None => warnings.push(
                "theoretical peak unknown: no CPU clock is readable or measurable here".into(),
            ),
        }
        Ok(Measured {
            metrics,
            details,
            warnings,
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        match &self.mismatch {
            Some(m) => Validation::fail(m.clone()),
            None if self.checked == 0 => Validation::fail("no kernel result was checked"),
            None => Validation::pass(format!(
                "all lanes of {} thread results equal their closed form exactly ({})",
                self.checked,
                self.plan
                    .iter()
                    .map(|(p, _)| p.tag())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}
