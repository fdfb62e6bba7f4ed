//! `mem_bandwidth`: STREAM Copy, Scale, Add and Triad.
//!
//! As in McCalpin's STREAM: three arrays of f64, each at least four times the
//! last-level cache; each pass runs the four kernels in order, each timed
//! separately across all threads; bandwidth counts 16 bytes per element for
//! Copy and Scale and 24 for Add and Triad; the answer is checked against a
//! scalar replay of the same passes. Each thread allocates and first-touches
//! its own contiguous share of the arrays, so its pages are local to it.

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef, WorkLimit, at_floor_rate,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

use crate::stream_kernels::{self, Chunk, Kernel};
use crate::team::{Rounds, run_team, team_cpus};

/// Benchmark name within the micro suite.
pub const NAME: &str = "mem_bandwidth";

/// STREAM's scalar.
const SCALAR: f64 = 3.0;

/// Values grow by 15x per pass; the arrays are reset (untimed) this often so
/// they stay finite whatever the number of samples.
const RESET_EVERY: u64 = 64;

/// Command that resets every chunk.
const RESET: u64 = 4;

/// Command that reads every chunk's `b` once: the memory-bandwidth canary.
const CANARY: u64 = 5;

/// Canary rounds per reading; the fastest counts.
const CANARY_ROUNDS: usize = 3;

/// The memory-bandwidth canary's kernel: a plain integer sum over the
/// array's bits, so the team reads memory as fast as the bus lets it and
/// shares no code with the kernels under test.
fn canary_read(values: &[f64]) -> u64 {
    values
        .iter()
        .fold(0u64, |sum, v| sum.wrapping_add(v.to_bits()))
}

/// The spec of `mem_bandwidth`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Ram)
        .description(
            "STREAM Copy/Scale/Add/Triad over three f64 arrays each at least 4x the last-level \
             cache, one pinned thread per CPU with first-touch placement, streaming stores by default \
             (`--param nt_stores=false` for ordinary ones). GB/s = 1e9 bytes/s, \
             counted as STREAM counts (16 B/element for copy and scale, 24 for add and triad). \
             Reports the median (`bandwidth`) and the best pass (`bandwidth_best`, STREAM's \
             convention). Validation: every element equals a scalar replay to 1e-13.",
        )
        .duration(4.0)
        .param(
            Param::int("array_mb", 0, 0..)
                .unit("MiB")
                .help("size of EACH of the three arrays in MiB; 0 = 4x the last-level cache (at least 32)"),
        )
        .param(Param::int("threads", 0, 0..).help("threads; 0 = one per CPU this process may use"))
        .param(Param::flag("nt_stores", true).help(
            "write with streaming (non-temporal) stores where the CPU has them, as vendor STREAM builds do; \
             false = ordinary stores, as gcc-built STREAM does",
        ))
        .check(|_| warpt_system::check_llc_override())
        .metric("bandwidth")
        .metric("bandwidth_best")
        .build()
}

/// The running benchmark.
#[derive(Default)]
pub struct MemBandwidth {
    elements: usize,
    cpus: Vec<usize>,
    llc_bytes: Option<u64>,
    streaming: bool,
    validation: Option<Validation>,
}

/// Bytes per second assumed for the stage limits: a tenth of a slow VM's
/// memory bandwidth.
const FLOOR_BYTES_PER_S: f64 = 0.5e9;

impl Benchmark for MemBandwidth {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        self.cpus = team_cpus(ctx.int_param("threads", 0)? as usize);
        self.llc_bytes = warpt_system::last_level_cache_bytes();
        self.streaming = ctx.bool_param("nt_stores")? && stream_kernels::has_streaming_stores();
        let requested = ctx.int_param("array_mb", 0)? as u64;
        let array_bytes = if requested > 0 {
            requested << 20
        } else {
            let four_llc = self.llc_bytes.unwrap_or(128 << 20) * 4;
            four_llc.div_ceil(1 << 20).max(32) << 20
        };
        let need = array_bytes * 3;
        let available = warpt_system::memory_quick().available_bytes;
        if available > 0 && need > available / 10 * 8 {
            return Err(BenchmarkError::Skipped(format!(
                "needs {} MiB for three arrays but only {} MiB is available; lower --param array_mb",
                need >> 20,
                available >> 20
            )));
        }
        self.elements = (array_bytes / 8) as usize;
        if self.elements < self.cpus.len() {
            return Err(BenchmarkError::InvalidParam {
                key: "array_mb".into(),
                reason: "arrays must hold at least one element per thread".into(),
            });
        }
        Ok(())
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<WorkLimit> {
        // The arrays follow the cache (4x the LLC: gigabytes on a big-cache
        // server): their first touch and each sample's passes over them
        // are reckoned at a floor rate far below any machine's DRAM.
        let n = self.elements as f64;
        let init = 3.0 * 8.0 * n;
        let pass: f64 = Kernel::ALL
            .iter()
            .map(|k| (k.bytes_per_element()) as f64 * n)
            .sum();
        // The bandwidth canary reads one array CANARY_ROUNDS times, before
        // the series and after them.
        let canary = 2.0 * CANARY_ROUNDS as f64 * 8.0 * n;
        let gb = |b: f64| b / 1e9;
        let part = |what: &str| {
            format!(
                "three arrays of {} MiB: {what} at a floor of {} GB/s",
                (self.elements * 8) >> 20,
                FLOOR_BYTES_PER_S / 1e9
            )
        };
        vec![
            WorkLimit::warmup(
                ctx.burnin,
                at_floor_rate(init + pass, FLOOR_BYTES_PER_S),
                part(&format!(
                    "{:.2} GB touched first, {:.2} GB per sample",
                    gb(init),
                    gb(pass)
                )),
            ),
            WorkLimit::measure(
                ctx.duration,
                at_floor_rate(2.0 * pass + canary, FLOOR_BYTES_PER_S),
                part(&format!(
                    "{:.2} GB per sample, {:.2} GB of canary reads",
                    gb(pass),
                    gb(canary)
                )),
            ),
        ]
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let threads = self.cpus.len();
        let n = self.elements;
        let share = |i: usize| n / threads + usize::from(i < n % threads);
        let policy = MeasurePolicy::share_of(ctx, 1);
        let streaming = self.streaming;
        let mut passes = 0u64;
        let defs: Vec<SeriesDef> = Kernel::ALL
            .iter()
            .map(|k| {
                let gigabytes = (k.bytes_per_element() * n) as f64 / 1e9;
                SeriesDef::new(
                    "bandwidth",
                    "GB/s",
                    true,
                    &[("kernel", k.name().to_string())],
                    Convert::Rate(gigabytes),
                )
            })
            .collect();
        // The scaling check: the arrays scale with memory, not cores, so
        // the compute probe tells whether the threads had cores of their own.
        let probe = |what| crate::cpu_flops::scaling_probe(&self.cpus, what);
        if let Some(check) = probe("fp64 probe before") {
            measure.regime().scaling(check);
        }
        let canary_gb = (8 * n) as f64 / 1e9;
        let (measurement, chunks) = run_team(
            &self.cpus,
            |i| Chunk::new(share(i)),
            |_, chunk: &mut Chunk, command| match command {
                RESET => chunk.reset(),
                CANARY => {
                    std::hint::black_box(canary_read(&chunk.b));
                }
                k => stream_kernels::run(chunk, Kernel::ALL[k as usize], SCALAR, streaming),
            },
            |rounds| {
                // The host's memory bus, read by a fixed kernel before the
                // series and after them (see RegimeProbes::bandwidth_canary_gbs).
                let canary = |rounds: &mut Rounds<'_, Chunk>, measure: &mut Measure<'_>| {
                    let fastest = (0..CANARY_ROUNDS)
                        .map(|_| rounds.round(CANARY).as_secs_f64())
                        .fold(f64::INFINITY, f64::min);
                    measure.regime().bandwidth_canary(canary_gb / fastest);
                };
                canary(rounds, measure);
                let measured = measure.run(&policy, "stream", &defs, |out| {
                    for (k, slot) in out.iter_mut().enumerate() {
                        *slot = rounds.round(k as u64).as_secs_f64();
                    }
                    passes += 1;
                    if passes == RESET_EVERY {
                        rounds.round(RESET);
                        passes = 0;
                    }
                });
                canary(rounds, measure);
                measured
            },
        );
        if let Some(check) = probe("fp64 probe after") {
            measure.regime().scaling(check);
        }
        self.validation = Some(check(&chunks, passes));

        let mut metrics = Vec::new();
        for median in measurement.metrics {
            let mut best = median.clone();
            best.name = "bandwidth_best".into();
            best.value = best.stats.as_ref().map_or(f64::NAN, |st| st.max);
            metrics.push(median);
            metrics.push(best);
        }
        let mut warnings = Vec::new();
        if self.llc_bytes.is_none() {
            warnings.push(
                "last-level cache size unknown: arrays sized from a 128 MiB assumption".into(),
            );
        } else if let Some(llc) = self.llc_bytes
            && ((n * 8) as u64) < 4 * llc
        {
            warnings.push(format!(
                "arrays ({} MiB each) are smaller than 4x the last-level cache ({} MiB): caches are measured too",
                (n * 8) >> 20,
                llc >> 20
            ));
        }
        Ok(Measured {
            metrics,
            details: vec![
                ("array_elements".into(), ParamValue::Int(n as i64)),
                (
                    "array_mib".into(),
                    ParamValue::Float((n * 8) as f64 / 1048576.0),
                ),
                ("threads".into(), ParamValue::Int(threads as i64)),
                ("isa".into(), ParamValue::from(stream_kernels::isa_name())),
                ("nt_stores".into(), ParamValue::Bool(self.streaming)),
                (
                    "llc_bytes".into(),
                    self.llc_bytes
                        .map_or(ParamValue::Str("unknown".into()), |b| {
                            ParamValue::Int(b as i64)
                        }),
                ),
            ],
            warnings,
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        self.validation
            .take()
            .unwrap_or_else(|| Validation::fail("nothing was measured, so nothing was checked"))
    }
}

/// STREAM's check: the mean absolute error of each array against the scalar
/// replay, relative to the expected value, must be below 1e-13.
fn check(chunks: &[Chunk], passes: u64) -> Validation {
    let (ea, eb, ec) = stream_kernels::expected(passes, SCALAR);
    type Pick = fn(&Chunk) -> &[f64];
    let arrays: [(&str, f64, Pick); 3] = [
        ("a", ea, |c| &c.a),
        ("b", eb, |c| &c.b),
        ("c", ec, |c| &c.c),
    ];
    let mut worst = (0.0f64, "a");
    for (name, expect, pick) in arrays {
        let (mut sum, mut count) = (0.0f64, 0usize);
        for chunk in chunks {
            let v = pick(chunk);
            sum += v.iter().map(|x| (x - expect).abs()).sum::<f64>();
            count += v.len();
        }
        let mean = sum / count.max(1) as f64;
        let rel = if expect == 0.0 {
            mean
        } else {
            mean / expect.abs()
        };
        if !rel.is_finite() || rel > worst.0 {
            worst = (rel, name);
        }
    }
    let (err, name) = worst;
    if err <= 1e-13 {
        Validation::pass(format!(
            "a, b, c match STREAM's scalar replay of {passes} passes since the last reset \
             (worst mean relative error {err:.1e} <= 1e-13)"
        ))
    } else {
        Validation::fail(format!(
            "array {name} differs from the scalar replay of {passes} passes: mean relative error {err:.3e} > 1e-13"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_catches_a_wrong_element() {
        let mut chunks = vec![Chunk::new(100), Chunk::new(99)];
        for chunk in &mut chunks {
            for k in Kernel::ALL {
                stream_kernels::run(chunk, k, SCALAR, false);
            }
        }
        assert!(check(&chunks, 1).passed);
        assert!(!check(&chunks, 2).passed, "wrong pass count must fail");
        chunks[1].b[7] += 1.0;
        assert!(!check(&chunks, 1).passed);
    }
}
