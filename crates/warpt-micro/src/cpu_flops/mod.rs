//! `cpu_flops`: peak fp64 and fp32 FMA throughput, one thread and all threads.

mod kernels;

use std::hint::black_box;
use std::time::{Duration, Instant};

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkSpec, ParamValue, Validation,
};

pub use kernels::{Isa, MAX_ITERS};

use crate::team::{run_team, team_cpus};

/// Benchmark name within the micro suite.
pub const NAME: &str = "cpu_flops";

/// Time one sample should take; the iteration count is calibrated to it.
const SAMPLE_TARGET: Duration = Duration::from_millis(10);

/// The spec of `cpu_flops`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec {
        id: BenchmarkId::new(crate::SUITE, NAME),
        components: vec![BenchmarkComponent::Cpu],
        kind: BenchmarkKind::Synthetic,
        description: Some(
            "Peak floating-point throughput: independent chains of fused multiply-adds in the \
             widest SIMD the CPU has (AVX-512F > AVX2+FMA > SSE2; NEON on AArch64), fp64 and fp32, \
             on one pinned thread and on one pinned thread per allowed CPU. GFLOP/s counts 2 flops \
             per FMA lane. Validation: every lane equals its closed-form value exactly."
                .into(),
        ),
        default_duration_seconds: Some(4.0),
        external_tool: None,
        params: [("threads".to_string(), ParamValue::Int(0))].into(),
        param_help: [(
            "threads".to_string(),
            "threads for the all-threads series; 0 = one per CPU this process may use".to_string(),
        )]
        .into(),
        param_choices: Default::default(),
        timeouts: Default::default(),
        metrics: vec!["gflops".into()],
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Precision {
    F64,
    F32,
}

impl Precision {
    fn tag(self) -> &'static str {
        match self {
            Precision::F64 => "fp64",
            Precision::F32 => "fp32",
        }
    }
    fn bytes(self) -> usize {
        match self {
            Precision::F64 => 8,
            Precision::F32 => 4,
        }
    }
}

/// The running benchmark.
pub struct CpuFlops {
    isa: Isa,
    threads: usize,
    iters: u64,
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
            checked: 0,
            mismatch: None,
        }
    }

    fn check(&mut self, precision: Precision, iters: u64, lo: f64, hi: f64) {
        let want = 1.0 + iters as f64 * 0.5;
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
        precision: Precision,
        threads: usize,
        label_threads: &str,
    ) -> warpt_model::BenchmarkMetric {
        let isa = self.isa;
        let iters = self.iters;
        let policy = MeasurePolicy::share_of(ctx, 4);
        let cpus = team_cpus(threads);
        let label = format!("{} threads={label_threads}", precision.tag());
        // Each thread keeps the (min, max) its last call produced.
        let kernel = move |_: usize, out: &mut (f64, f64), n: u64| {
            *out = match precision {
                Precision::F64 => isa.fma_f64(n, black_box(1.0), black_box(0.5)),
                Precision::F32 => {
                    let (lo, hi) = isa.fma_f32(n, black_box(1.0), black_box(0.5));
                    (f64::from(lo), f64::from(hi))
                }
            };
        };
        let flops = (isa.flops_per_iter(precision.bytes()) * iters * cpus.len() as u64) as f64;
        let def = SeriesDef::new(
            "gflops",
            "GFLOP/s",
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
        // Calibrate the per-sample iteration count on one thread.
        let probe = 1u64 << 16;
        let start = Instant::now();
        black_box(self.isa.fma_f64(probe, black_box(1.0), black_box(0.5)));
        let per_iter = start.elapsed().as_secs_f64() / probe as f64;
        let want = (SAMPLE_TARGET.as_secs_f64() / per_iter.max(1e-12)) as u64;
        self.iters = want.clamp(1 << 12, MAX_ITERS);
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let all = self.threads;
        // The clock is measured (where cpufreq cannot say it) before each
        // series and after the last; the fastest sets the peak.
        let mut clock = warpt_system::clock::ClockSamples::default();
        let mut metrics = Vec::new();
        for (precision, threads, label) in [
            (Precision::F64, 1, "1"),
            (Precision::F64, all, "all"),
            (Precision::F32, 1, "1"),
            (Precision::F32, all, "all"),
        ] {
            clock.sample();
            metrics.push(self.series(ctx, measure, precision, threads, label));
        }
        clock.sample();
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
        let mut warnings = Vec::new();
        let peak = warpt_system::clock::clock_from(&clock)
            .map(|c| crate::peak::theoretical_peak(self.isa, all, c));
        match peak {
            Some(peak) => {
                for m in &metrics {
                    let precision = m.tags.get("precision").map(String::as_str).unwrap_or("");
                    let threads = m.tags.get("threads").map(String::as_str).unwrap_or("");
                    let ceiling = match precision {
                        "fp64" => peak.fp64_gflops,
                        _ => peak.fp32_gflops,
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
                "all lanes of {} thread results equal 1 + iterations x 0.5 exactly (fp64 and fp32)",
                self.checked
            )),
        }
    }
}
