//! `disk_io`: sequential throughput and random IOPS and latency of a file
//! system, as fio measures them.
//!
//! One file of `size_mb` in `path`, created without a name (see
//! [`file::create`]) so nothing is ever left behind, O_DIRECT where the file
//! system supports it, filled once with stamped pages. Then four tests, each
//! sampled by the harness: sequential write and read in 1 MiB blocks,
//! random read and write in `block_kb` blocks, all at `queue_depth`. Write
//! samples end with fdatasync, counted in their time. Every page read back
//! must carry its own offset: the validation.

mod engine;
pub(crate) mod file;

use std::path::PathBuf;
use std::time::Instant;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_harness::SeriesMetrics;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef, WorkLimit, at_floor_rate,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Params, StageLimits,
    Validation,
};

use engine::{BatchCheck, Engine, Op};
pub use file::check_dir;

/// Benchmark name within the micro suite.
pub const NAME: &str = "disk_io";

/// Sequential block size.
const SEQ_BLOCK: usize = 1 << 20;
/// Bytes per sequential sample (capped at the file size).
const SEQ_SAMPLE: u64 = 64 << 20;
/// Target time of one random-I/O sample.
const RAND_SAMPLE_SECS: f64 = 0.05;
/// Per-I/O latencies kept in a metric's `samples`.
const LATENCIES_KEPT: usize = 20_000;
/// The four tests, by their `op` tag, in the order they run.
const ALL_OPS: [&str; 4] = ["seq_write", "seq_read", "rand_read", "rand_write"];

/// The spec of `disk_io`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Storage)
        .description(
            "File-system I/O like fio: sequential write and read in 1 MiB blocks (`throughput`, MB/s = 1e6 \
             B/s) and random `block_kb` reads and writes (`iops`, and per-I/O `latency_us` with p50/p99/p99.9), \
             all at `queue_depth` through io_uring set up as fio's engine does, completions polled and, for \
             random reads, the queue kept full from one sample to the next as in a continuous fio job (or \
             one thread per slot where io_uring is unavailable); `ops` picks the tests, \
             O_DIRECT where the file system allows it (tmpfs does not: then the page cache is measured and \
             the result says so). Writes end each sample with fdatasync, counted. The file has no name on \
             disk at any moment, so it cannot be left behind. Validation: every page read carries its own \
             offset.",
        )
        .duration(8.0)
        .param(
            Param::output_path("path", "")
                .help("directory to test in; empty = the system temporary directory"),
        )
        .param(Param::int("size_mb", 1024, 1..).unit("MiB").help("file size in MiB"))
        .param(
            Param::int("block_kb", 4, 4..=1024)
                .unit("KiB")
                .help("random I/O block size in KiB (a multiple of 4)"),
        )
        .param(Param::int("queue_depth", 16, 1..=256).help("I/Os in flight"))
        .param(Param::flag("direct", true).help("use O_DIRECT where the file system supports it"))
        .param(Param::text("ops", &ALL_OPS.join(",")).help(
            "comma-separated tests to run, in this order: seq_write, seq_read, rand_read, rand_write",
        ))
        .check(check_params)
        // Filling a large file on a slow disk takes a while.
        .timeouts(StageLimits {
            setup: Some(600.0),
            ..StageLimits::default()
        })
        .metric("throughput")
        .metric("iops")
        .metric("latency_us")
        .build()
}

/// Parameters, checked.
#[derive(Debug, Clone)]
struct Config {
    dir: PathBuf,
    size: u64,
    block: usize,
    qd: usize,
    direct: bool,
    /// Which of [`ALL_OPS`] run.
    ops: [bool; 4],
}

impl Config {
    fn runs(&self, op: &str) -> bool {
        ALL_OPS
            .iter()
            .position(|o| *o == op)
            .is_some_and(|i| self.ops[i])
    }
}

fn parse_ops(text: &str) -> Result<[bool; 4], String> {
    let mut ops = [false; 4];
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let i = ALL_OPS.iter().position(|o| *o == name).ok_or_else(|| {
            format!(
                "parameter 'ops': unknown test '{name}' (known: {})",
                ALL_OPS.join(", ")
            )
        })?;
        ops[i] = true;
    }
    if ops.iter().any(|&o| o) {
        Ok(ops)
    } else {
        Err(format!(
            "parameter 'ops' names no test (known: {})",
            ALL_OPS.join(", ")
        ))
    }
}

fn config(params: &Params) -> Result<Config, String> {
    let int = |k: &str| {
        params
            .get(k)
            .and_then(ParamValue::as_i64)
            .ok_or_else(|| format!("parameter '{k}' is missing"))
    };
    let path = params
        .get("path")
        .and_then(ParamValue::as_str)
        .unwrap_or("");
    let dir = if path.is_empty() {
        std::env::temp_dir()
    } else {
        PathBuf::from(path)
    };
    let size_mb = int("size_mb")?;
    if size_mb < 1 {
        return Err(format!(
            "parameter 'size_mb' must be at least 1, not {size_mb}"
        ));
    }
    let block_kb = int("block_kb")?;
    if block_kb < 4 || block_kb % 4 != 0 || block_kb > 1024 {
        return Err(format!(
            "parameter 'block_kb' must be a multiple of 4 from 4 to 1024, not {block_kb}"
        ));
    }
    let qd = int("queue_depth")?;
    if !(1..=256).contains(&qd) {
        return Err(format!(
            "parameter 'queue_depth' must be from 1 to 256, not {qd}"
        ));
    }
    Ok(Config {
        dir,
        size: (size_mb as u64) << 20,
        block: (block_kb as usize) << 10,
        qd: qd as usize,
        direct: params
            .get("direct")
            .and_then(ParamValue::as_bool)
            .unwrap_or(true),
        ops: parse_ops(params.get("ops").and_then(ParamValue::as_str).unwrap_or(""))?,
    })
}

/// Checks the parameters and the directory before anything is written.
pub fn check_params(params: &Params) -> Result<(), String> {
    let c = config(params)?;
    check_dir(&c.dir, c.size).map_err(|e| format!("parameter 'path': {e}"))
}

/// The running benchmark.
#[derive(Default)]
pub struct DiskIo {
    config: Option<Config>,
    file: Option<std::fs::File>,
    direct: bool,
    anonymous: bool,
    seq: Option<Box<dyn Engine>>,
    rand: Option<Box<dyn Engine>>,
    check: BatchCheck,
    rng: Option<Xoshiro256PlusPlus>,
}

fn io_err(what: &str, e: std::io::Error) -> BenchmarkError {
    BenchmarkError::Failed(format!("{what}: {e}"))
}

/// Bytes per second assumed for the stage limits: slower than a USB stick,
/// so the limit stops a hung device, not a slow one.
const FLOOR_BYTES_PER_S: f64 = 2e6;

impl Benchmark for DiskIo {
    fn setup_limit(&self, ctx: &RunContext) -> Option<WorkLimit> {
        let c = config(&ctx.params).ok()?;
        Some(WorkLimit::setup(
            at_floor_rate(c.size as f64, FLOOR_BYTES_PER_S),
            format!(
                "filling the {} MiB test file at a floor of {} MB/s",
                c.size >> 20,
                FLOOR_BYTES_PER_S / 1e6
            ),
        ))
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<WorkLimit> {
        // A sequential sample moves up to SEQ_SAMPLE bytes, and each test
        // takes a warm-up and a measured sample whatever the duration.
        let Some(c) = &self.config else {
            return Vec::new();
        };
        let seq = c.ops[..2].iter().filter(|&&o| o).count() as f64;
        let bytes = 2.0 * seq * SEQ_SAMPLE.min(c.size) as f64;
        vec![WorkLimit::measure(
            ctx.duration,
            at_floor_rate(bytes, FLOOR_BYTES_PER_S),
            format!(
                "{seq} sequential test(s), two samples of {} MiB each at a floor of {} MB/s",
                SEQ_SAMPLE.min(c.size) >> 20,
                FLOOR_BYTES_PER_S / 1e6
            ),
        )]
    }

    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let c = config(&ctx.params).map_err(BenchmarkError::invalid("disk_io"))?;
        check_dir(&c.dir, c.size).map_err(BenchmarkError::invalid("path"))?;
        let (file, mode) = match file::create(&c.dir, c.direct) {
            Ok(ok) => ok,
            Err((_, true)) => file::create(&c.dir, false).map_err(|(e, _)| {
                io_err(&format!("creating the test file in {}", c.dir.display()), e)
            })?,
            Err((e, false)) => {
                return Err(io_err(
                    &format!("creating the test file in {}", c.dir.display()),
                    e,
                ));
            }
        };
        self.direct = mode.direct;
        self.anonymous = mode.anonymous;
        let magic = ctx.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5741_5250_5444_494F;
        let mut seq = engine::engine(SEQ_BLOCK.min(c.size as usize), c.qd, magic, ctx.seed);
        let rand = engine::engine(c.block, c.qd, magic, ctx.seed ^ 1);
        // Reserve the whole file first, as fio does: one contiguous allocation
        // rather than extents scattered by parallel writes. A file system
        // without fallocate (tmpfs on old kernels) is filled all the same.
        {
            use std::os::unix::io::AsRawFd;
            // SAFETY: fallocate on our own open descriptor.
            let _ = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, c.size as libc::off_t) };
        }
        // Fill the whole file once, stamped, so every read finds its page.
        let offsets: Vec<u64> = (0..c.size / SEQ_BLOCK as u64)
            .map(|i| i * SEQ_BLOCK as u64)
            .collect();
        let mut lat = Vec::new();
        for chunk in offsets.chunks(256) {
            seq.run(&file, Op::Write, chunk, &mut lat)
                .map_err(|e| io_err("filling the test file", e))?;
            lat.clear();
        }
        file.sync_all()
            .map_err(|e| io_err("fsync after filling", e))?;
        self.seq = Some(seq);
        self.rand = Some(rand);
        self.file = Some(file);
        self.rng = Some(Xoshiro256PlusPlus::seed_from_u64(ctx.seed));
        self.config = Some(c);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let c = warpt_harness::prepared(&self.config)?.clone();
        let file = self.file.take().ok_or_else(BenchmarkError::not_prepared)?;
        let mut seq = self.seq.take().ok_or_else(BenchmarkError::not_prepared)?;
        let mut rand = self.rand.take().ok_or_else(BenchmarkError::not_prepared)?;
        let mut rng = self
            .rng
            .take()
            .unwrap_or_else(|| Xoshiro256PlusPlus::seed_from_u64(ctx.seed));
        let policy = MeasurePolicy::share_of(ctx, c.ops.iter().filter(|&&o| o).count());
        let mut metrics: Vec<BenchmarkMetric> = Vec::new();
        let mut failure: Option<std::io::Error> = None;
        let mut check = BatchCheck::default();

        // Sequential: samples of up to 64 MiB, the cursor wrapping around the file.
        let seq_bytes = SEQ_SAMPLE.min(c.size / SEQ_BLOCK as u64 * SEQ_BLOCK as u64);
        let blocks_in_file = c.size / SEQ_BLOCK as u64;
        let mut cursor = 0u64;
        for (op, tag) in [(Op::Write, "seq_write"), (Op::Read, "seq_read")] {
            if !c.runs(tag) {
                continue;
            }
            let def = SeriesDef::new(
                "throughput",
                "MB/s",
                true,
                &[("op", tag.into())],
                Convert::Rate(seq_bytes as f64 / 1e6),
            );
            let mut lat = Vec::new();
            let m = measure.run(&policy, tag, std::slice::from_ref(&def), |out| {
                let offsets: Vec<u64> = (0..seq_bytes / SEQ_BLOCK as u64)
                    .map(|_| {
                        let o = cursor * SEQ_BLOCK as u64;
                        cursor = (cursor + 1) % blocks_in_file;
                        o
                    })
                    .collect();
                let start = Instant::now();
                let r = seq.run(&file, op, &offsets, &mut lat).and_then(|ck| {
                    if op == Op::Write {
                        file.sync_data()?;
                    }
                    Ok(ck)
                });
                out[0] = start.elapsed().as_secs_f64();
                lat.clear();
                match r {
                    Ok(ck) => {
                        check.bad_pages += ck.bad_pages;
                        check.checked_pages += ck.checked_pages;
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            });
            metrics.extend(m.metrics);
        }

        // Random: batches sized to about 50 ms, calibrated on a first batch.
        let slots = c.size / c.block as u64;
        let mut next_random = || (rng.next_u64() % slots) * c.block as u64;
        let mut probe_lat = Vec::new();
        let probe: Vec<u64> = (0..c.qd * 8).map(|_| next_random()).collect();
        let t = Instant::now();
        let ck = rand
            .run(&file, Op::Read, &probe, &mut probe_lat)
            .map_err(|e| io_err("random read", e))?;
        check.bad_pages += ck.bad_pages;
        check.checked_pages += ck.checked_pages;
        let per_io = t.elapsed().as_secs_f64() / probe.len() as f64;
        let batch = ((RAND_SAMPLE_SECS / per_io.max(1e-9)) as usize).clamp(c.qd, 1 << 16);
        for (op, tag) in [(Op::Read, "rand_read"), (Op::Write, "rand_write")] {
            if !c.runs(tag) {
                continue;
            }
            let def = SeriesDef::new(
                "iops",
                "IOPS",
                true,
                &[("op", tag.into())],
                Convert::Rate(batch as f64),
            );
            let mut lat: Vec<f64> = Vec::new();
            let mut per_sample = 0usize;
            // While reads stream, a sample's time runs from the end of the
            // previous one: the I/Os that complete while the harness records
            // a sample are credited to the next, so its time covers them too.
            let mut stream_end: Option<Instant> = None;
            let m = measure.run(&policy, tag, std::slice::from_ref(&def), |out| {
                let before = lat.len();
                let start = stream_end.unwrap_or_else(Instant::now);
                // Reads stream: the queue stays full from one sample to the
                // next, as in fio's continuous job. Writes drain, so the
                // closing fdatasync covers every write of the sample.
                let r = match op {
                    Op::Read => rand.stream(&file, op, batch, &mut next_random, &mut lat),
                    Op::Write => {
                        let offsets: Vec<u64> = (0..batch).map(|_| next_random()).collect();
                        rand.run(&file, op, &offsets, &mut lat)
                            .and_then(|ck| file.sync_data().map(|()| ck))
                    }
                };
                let end = Instant::now();
                out[0] = end.duration_since(start).as_secs_f64();
                if op == Op::Read {
                    stream_end = Some(end);
                }
                per_sample = lat.len() - before;
                match r {
                    Ok(ck) => {
                        check.bad_pages += ck.bad_pages;
                        check.checked_pages += ck.checked_pages;
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            });
            // The reads still in flight are checked, not counted.
            match rand.drain() {
                Ok(ck) => {
                    check.bad_pages += ck.bad_pages;
                    check.checked_pages += ck.checked_pages;
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
            // The warm-up batches' latencies are not part of the measurement.
            let skip = (m.warmup_samples * per_sample).min(lat.len());
            metrics.extend(m.metrics);
            let latency = SeriesDef::new(
                "latency_us",
                "us",
                false,
                &[("op", tag.into())],
                Convert::Time(1e6),
            );
            metrics.extend(latency.metric_of_events(
                &lat[skip..],
                LATENCIES_KEPT,
                Some(m.stop_reason),
            ));
        }
        self.check = check;
        if let Some(e) = failure {
            return Err(io_err("I/O error during measurement", e));
        }
        let mut warnings = Vec::new();
        if file::memory_backed(&c.dir) {
            warnings.push(format!(
                "{} is on a memory-backed file system (tmpfs/ramfs): this measured memory, not a storage device",
                c.dir.display()
            ));
        } else if !self.direct {
            warnings.push(if c.direct {
                format!(
                    "the file system at {} does not support O_DIRECT (tmpfs, some FUSE): the page cache was measured, not the device",
                    c.dir.display()
                )
            } else {
                "direct=false: the page cache was measured, not the device".to_string()
            });
        }
        Ok(Measured {
            metrics,
            details: vec![
                ("engine".into(), ParamValue::from(rand.name())),
                (
                    "engine_features".into(),
                    ParamValue::Str(rand.features().join(",")),
                ),
                (
                    "memory_backed".into(),
                    ParamValue::Bool(file::memory_backed(&c.dir)),
                ),
                ("direct".into(), ParamValue::Bool(self.direct)),
                ("file_anonymous".into(), ParamValue::Bool(self.anonymous)),
                ("dir".into(), ParamValue::Str(c.dir.display().to_string())),
                ("size_bytes".into(), ParamValue::Int(c.size as i64)),
                ("random_batch_ios".into(), ParamValue::Int(batch as i64)),
                ("seq_sample_bytes".into(), ParamValue::Int(seq_bytes as i64)),
            ],
            warnings,
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let c = self.check;
        if c.checked_pages == 0 {
            Validation::fail("no page was read back, so nothing was checked")
        } else if c.bad_pages > 0 {
            Validation::fail(format!(
                "{} of {} pages read back did not carry their own offset",
                c.bad_pages, c.checked_pages
            ))
        } else {
            Validation::pass(format!(
                "all {} pages read back carried their own offset and this run's magic",
                c.checked_pages
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_parsed_and_bad_ones_named() {
        assert_eq!(
            parse_ops("rand_read, seq_write").unwrap(),
            [true, false, true, false]
        );
        assert_eq!(parse_ops(&ALL_OPS.join(",")).unwrap(), [true; 4]);
        let e = parse_ops("rand_read,randread").unwrap_err();
        assert!(e.contains("'randread'") && e.contains("rand_write"), "{e}");
        assert!(parse_ops(" , ").unwrap_err().contains("names no test"));
    }
}
