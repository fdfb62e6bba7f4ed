//! `mem_latency`: load-to-use latency by working-set size, measured with a
//! dependent pointer chase over a random cyclic permutation.
//!
//! The working set is split into 64-byte cache lines; line `i` holds the
//! index of the next line to visit. The visiting order is one random cycle
//! through every line (line 0, then a seeded uniform permutation of the
//! others), so hardware prefetchers cannot guess the next address and every
//! load waits for the previous one. The time per load at each size traces
//! the cache hierarchy: L1, L2, L3, then DRAM (including TLB misses, as
//! lmbench's `lat_mem_rd` does).
//!
//! The largest working set follows the machine (4x the last-level cache:
//! gigabytes on a server with a big L3), so the chains are built in a few
//! cache-friendly passes, `--duration` is shared by the sizes, and the
//! measure stage's limit is reckoned from the lines the chains hold.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef, WorkLimit,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

/// Benchmark name within the micro suite.
pub const NAME: &str = "mem_latency";

/// Bytes per node: one cache line on every CPU warpt targets.
const LINE: usize = 64;
/// u64 slots per line.
const SLOTS: usize = LINE / 8;
/// Time one sample should take, at most (less when the duration's share of
/// a size is short).
const SAMPLE_TARGET: Duration = Duration::from_millis(5);
/// Time one sample should take, at least.
const SAMPLE_FLOOR: Duration = Duration::from_micros(100);
/// Building and checking a chain, per line, at a deliberately low floor
/// rate (about 10x what a slow VM's DRAM needs: two random accesses, a
/// page fault every 64 lines) for the measure stage's limit.
const BUILD_FLOOR_PER_LINE: Duration = Duration::from_micros(2);
/// Lines shuffled in place at once; more are first dealt into buckets.
const BUCKET_LINES: usize = 1 << 15;

/// The spec of `mem_latency`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Ram)
        .description(
            "Load-to-use latency: a dependent pointer chase through one random cycle over every \
             64-byte line of a working set, at power-of-two sizes from 16 KiB to at least 4x the \
             last-level cache. Metric `latency` in ns per load, tagged `size_kib`. Validation: the \
             permutation is a single cycle over every line, and each chase ends on the line a \
             replay of the cycle predicts.",
        )
        .duration(6.0)
        .param(
            Param::int("min_kb", 16, 1..)
                .unit("KiB")
                .help("smallest working set in KiB (rounded up to a power of two)"),
        )
        .param(Param::int("max_mb", 0, 0..).unit("MiB").help(
            "largest working set in MiB; 0 = the smallest power of two >= 4x the last-level cache",
        ))
        .check(|_| warpt_system::check_llc_override())
        .metric("latency")
        .build()
}

/// A chain of cache lines forming one random cycle.
struct Chain {
    /// `nodes[line * SLOTS]` holds the slot index of the next line.
    nodes: Vec<u64>,
    /// `order[k]` is the line visited at step `k` from line 0.
    order: Vec<u32>,
}

impl Chain {
    /// Builds a random single cycle over `lines` lines from `seed`: line 0,
    /// then the other lines in a uniformly random order, back to line 0.
    fn new(lines: usize, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // A uniform order of every line, turned to start at line 0: the
        // others follow in a uniform order.
        let mut order = shuffled(0..lines as u32, &mut rng, BUCKET_LINES);
        let zero = order.iter().position(|&l| l == 0).unwrap_or(0);
        order.rotate_left(zero);
        let mut nodes = vec![0u64; lines * SLOTS];
        for (k, &line) in order.iter().enumerate() {
            let next = order.get(k + 1).copied().unwrap_or(0);
            nodes[line as usize * SLOTS] = next as u64 * SLOTS as u64;
        }
        Chain { nodes, order }
    }

    fn lines(&self) -> usize {
        self.order.len()
    }

    /// Whether `order` visits every line once, starting at line 0, and each
    /// line points at the next in `order` (the last back at line 0).
    fn is_single_cycle(&self) -> bool {
        let n = self.lines();
        let mut seen = vec![false; n];
        for &l in &self.order {
            if std::mem::replace(&mut seen[l as usize], true) {
                return false;
            }
        }
        self.order.first() == Some(&0)
            && self.order.iter().enumerate().all(|(k, &line)| {
                let next = self.order.get(k + 1).copied().unwrap_or(0);
                self.nodes[line as usize * SLOTS] == next as u64 * SLOTS as u64
            })
    }

    /// Follows `steps` pointers from slot `start`; returns the final slot.
    #[inline(never)]
    fn chase(&self, start: usize, steps: u64) -> usize {
        let nodes = &self.nodes[..];
        let mut p = start;
        for _ in 0..steps {
            p = nodes[p] as usize;
        }
        p
    }
}

/// `values` in a uniformly random order. Large sets are first dealt into
/// random buckets of about `bucket` values ([`BUCKET_LINES`]) (each value's bucket drawn
/// independently), then each bucket is shuffled in place: uniform as a
/// whole (Rao and Sandelius), with every pass sequential or inside a bucket
/// that fits in cache, where one Fisher-Yates over gigabytes waits on DRAM
/// at every swap.
fn shuffled(values: std::ops::Range<u32>, rng: &mut Xoshiro256PlusPlus, bucket: usize) -> Vec<u32> {
    let n = values.len();
    let buckets = n.div_ceil(bucket.max(1)).next_power_of_two();
    let mut out: Vec<u32>;
    let mut bounds = vec![0usize; buckets + 1];
    if buckets == 1 {
        out = values.collect();
        bounds[1] = n;
    } else {
        let bits = buckets.trailing_zeros();
        let of: Vec<u16> = (0..n)
            .map(|_| (rng.next_u64() >> (64 - bits)) as u16)
            .collect();
        for &b in &of {
            bounds[b as usize + 1] += 1;
        }
        for i in 0..buckets {
            bounds[i + 1] += bounds[i];
        }
        let mut at = bounds.clone();
        out = vec![0u32; n];
        for (v, &b) in values.zip(&of) {
            out[at[b as usize]] = v;
            at[b as usize] += 1;
        }
    }
    for w in bounds.windows(2) {
        let bucket = &mut out[w[0]..w[1]];
        for i in (1..bucket.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            bucket.swap(i, j);
        }
    }
    out
}

/// The cache canary: chains over half of each per-core cache (L1d, L2)
/// and 1/32, 1/8 and 1/4 of the last-level cache, each read (one warm
/// pass, one timed pass) before the first size, before every size from
/// half the smallest canary up, and after the last (a canary too big to
/// read that often: before the first size, at the middle one and after the
/// last). On a shared cache (a virtual machine's slice of a host's L3, or
/// an L1 and L2 shared with another guest's thread on the same physical
/// core) these are the working sets that move from one level's latency to
/// the next, or back, when the share changes; on a 2-vCPU guest the share
/// moved within milliseconds (a 256 KiB chase read 3.9 to 13 ns, a 2 MiB
/// one 21 to 107 ns, from one 3 ms reading to the next), so a reading next
/// to each size is what sees the regime that size was measured in.
struct Canary {
    chains: Vec<(u64, Chain)>,
}

/// The most canary lines read before every size (64 MiB of chains: about
/// 10 ms a read at cache latency); a bigger canary is read three times.
const CANARY_EVERY_SIZE_LINES: usize = 1 << 20;
/// Loads a canary reading times at least (an L1-sized chain is chased
/// round again): about 0.1 ms at L1 latency, well above the clock's
/// resolution.
const CANARY_MIN_STEPS: u64 = 1 << 16;

impl Canary {
    /// The canary working sets for `inner` (the per-core data caches'
    /// bytes) and `llc` bytes of last-level cache, kept within `sizes`.
    fn sizes(inner: &[u64], llc: Option<u64>, sizes: &[usize]) -> Vec<usize> {
        let (Some(&lo), Some(&hi)) = (sizes.first(), sizes.last()) else {
            return Vec::new();
        };
        let halves = inner.iter().map(|&c| c as usize / 2);
        let llc_parts = llc
            .into_iter()
            .flat_map(|l| [32, 8, 4].map(|div| l as usize / div));
        let mut out: Vec<usize> = halves
            .chain(llc_parts)
            .filter(|&s| s > 0)
            .map(usize::next_power_of_two)
            .filter(|s| (lo..=hi).contains(s))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The per-core data caches below the last level (L1d, L2), bytes an
    /// instance, as sysfs describes them.
    fn inner_caches() -> Vec<u64> {
        let caches = warpt_system::cache_hierarchy();
        let data = || caches.iter().filter(|c| c.kind != "Instruction");
        let Some(top) = data().map(|c| c.level).max() else {
            return Vec::new();
        };
        data()
            .filter(|c| c.level < top)
            .map(|c| c.size_bytes)
            .collect()
    }

    /// Whether the canary (working sets `canary`) is read before size `i`
    /// of `sizes` (it is always read before the first and after the last).
    fn read_before(canary: &[usize], sizes: &[usize], i: usize) -> bool {
        let Some(&smallest) = canary.iter().min() else {
            return false;
        };
        if i == 0 {
            return false;
        }
        if canary.iter().map(|s| s / LINE).sum::<usize>() <= CANARY_EVERY_SIZE_LINES {
            sizes[i] >= smallest / 2
        } else {
            i == sizes.len() / 2
        }
    }

    /// How many times the canary is read over `sizes`.
    fn reads(canary: &[usize], sizes: &[usize]) -> usize {
        if canary.is_empty() {
            return 0;
        }
        2 + (0..sizes.len())
            .filter(|&i| Self::read_before(canary, sizes, i))
            .count()
    }

    fn new(sizes: &[usize], seed: u64) -> Self {
        let chains = sizes
            .iter()
            .map(|&s| {
                (
                    (s >> 10) as u64,
                    Chain::new(s / LINE, seed ^ 0xca_4a41 ^ s as u64),
                )
            })
            .collect();
        Canary { chains }
    }

    /// Reads every canary into `measure`.
    fn read(&self, measure: &mut Measure<'_>) {
        for (kib, chain) in &self.chains {
            let lines = chain.lines() as u64;
            let steps = lines.max(CANARY_MIN_STEPS);
            black_box(chain.chase(0, lines));
            let t = Instant::now();
            black_box(chain.chase(0, steps));
            measure
                .regime()
                .canary(*kib, t.elapsed().as_secs_f64() * 1e9 / steps as f64);
        }
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct MemLatency {
    sizes: Vec<usize>,
    /// The cache canary's working sets.
    canary: Vec<usize>,
    failures: Vec<String>,
    chases_checked: u64,
    /// Why the largest size is below 4x the last-level cache, if it is.
    capped: Option<String>,
}

impl Benchmark for MemLatency {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let min = (ctx.int_param("min_kb", 1)? as usize * 1024)
            .next_power_of_two()
            .max(LINE * 2);
        let max_mb = ctx.int_param("max_mb", 0)? as usize;
        let max = if max_mb > 0 {
            max_mb << 20
        } else {
            let llc = warpt_system::last_level_cache_bytes().unwrap_or(32 << 20) as usize;
            let wanted = (4 * llc).next_power_of_two();
            // The chain and its order take 1 + 1/16 of the working set.
            let available = warpt_system::memory_quick().available_bytes as usize;
            let fits = (available / 2)
                .checked_next_power_of_two()
                .map_or(0, |p| p / 2);
            if available > 0 && wanted > fits && fits >= min {
                self.capped = Some(format!(
                    "largest working set {} MiB, below 4x the last-level cache ({} MiB): \
                     {} MiB of memory is available",
                    fits >> 20,
                    wanted >> 20,
                    available >> 20
                ));
                fits
            } else {
                wanted
            }
        };
        if max < min {
            return Err(BenchmarkError::InvalidParam {
                key: "max_mb".into(),
                reason: format!("{} KiB is below min_kb {} KiB", max >> 10, min >> 10),
            });
        }
        if max / LINE > u32::MAX as usize {
            return Err(BenchmarkError::InvalidParam {
                key: "max_mb".into(),
                reason: "working sets above 256 GiB are not supported".into(),
            });
        }
        self.sizes = std::iter::successors(Some(min), |s| Some(s * 2))
            .take_while(|s| *s <= max)
            .collect();
        self.canary = Canary::sizes(
            &Canary::inner_caches(),
            warpt_system::last_level_cache_bytes(),
            &self.sizes,
        );
        Ok(())
    }

    fn work_limits(&self, ctx: &RunContext) -> Vec<WorkLimit> {
        // A canary line is built once and chased twice a reading (a small
        // chain round again up to CANARY_MIN_STEPS): one line's worth of the
        // floor rate for the build and each reading covers it.
        let reads = Canary::reads(&self.canary, &self.sizes);
        let canary: usize = (self.canary.iter())
            .map(|s| (s / LINE).max(CANARY_MIN_STEPS as usize / 2))
            .sum();
        let lines: usize =
            self.sizes.iter().map(|s| s / LINE).sum::<usize>() + (1 + reads) * canary;
        let build = BUILD_FLOOR_PER_LINE * lines as u32;
        // Each size takes a warm-up and a measured sample whatever its share.
        let samples = SAMPLE_TARGET * 2 * self.sizes.len() as u32;
        let part = format!(
            "{} working sets up to {} MiB and the cache canary: {lines} lines to chain at {} us each, {:.1} s \
             (a floor rate), on top of the sampling budget",
            self.sizes.len(),
            self.sizes.last().map_or(0, |s| s >> 20),
            BUILD_FLOOR_PER_LINE.as_micros(),
            build.as_secs_f64()
        );
        // The canary and the first working set are chained before the first
        // sample, in the warm-up stage, and each size's warm-up samples
        // count there too: the warm-up gets the same allowance (a gigabyte
        // canary took past the default 16 s on a loaded two-core host).
        vec![
            WorkLimit::warmup(ctx.burnin, build + samples, part.clone()),
            WorkLimit::measure(ctx.duration, build + samples, part),
        ]
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let policy = MeasurePolicy::share_of(ctx, self.sizes.len());
        // Ten samples in a size's share of the duration, within bounds.
        let sample_target = (policy.min_time / 10).clamp(SAMPLE_FLOOR, SAMPLE_TARGET);
        let mut metrics = Vec::new();
        let canary = Canary::new(&self.canary, ctx.seed);
        canary.read(measure);
        for (i, &size) in self.sizes.clone().iter().enumerate() {
            if Canary::read_before(&self.canary, &self.sizes, i) {
                canary.read(measure);
            }
            let chain = Chain::new(size / LINE, ctx.seed ^ size as u64);
            if !chain.is_single_cycle() {
                self.failures.push(format!(
                    "{} KiB: permutation is not a single cycle",
                    size >> 10
                ));
                continue;
            }
            // Calibrate steps per sample to about sample_target.
            let probe = 1u64 << 14;
            let t = Instant::now();
            black_box(chain.chase(0, probe));
            let per_step = t.elapsed().as_secs_f64() / probe as f64;
            let steps = ((sample_target.as_secs_f64() / per_step.max(1e-10)) as u64).max(1024);

            let mut at = 0usize;
            let mut walked = 0u64;
            let label = format!("{} KiB", size >> 10);
            let def = SeriesDef::new(
                "latency",
                "ns",
                false,
                &[("size_kib", (size >> 10).to_string())],
                Convert::Time(1e9 / steps as f64),
            );
            let m = measure.run(&policy, &label, std::slice::from_ref(&def), |out| {
                let start = Instant::now();
                at = black_box(chain.chase(at, steps));
                out[0] = start.elapsed().as_secs_f64();
                walked += steps;
            });
            let lines = chain.lines() as u64;
            let expect = chain.order[(walked % lines) as usize] as usize * SLOTS;
            if at == expect {
                self.chases_checked += 1;
            } else {
                self.failures.push(format!(
                    "{} KiB: chase of {walked} steps ended at slot {at}, the cycle predicts {expect}",
                    size >> 10
                ));
            }
            metrics.extend(m.metrics);
        }
        canary.read(measure);
        Ok(Measured {
            metrics,
            details: vec![
                ("line_bytes".into(), ParamValue::Int(LINE as i64)),
                ("sizes".into(), ParamValue::Int(self.sizes.len() as i64)),
                (
                    "max_kib".into(),
                    ParamValue::Int(self.sizes.last().map_or(0, |s| s >> 10) as i64),
                ),
            ],
            warnings: self.capped.iter().cloned().collect(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        if !self.failures.is_empty() {
            Validation::fail(self.failures.join("; "))
        } else if self.chases_checked as usize != self.sizes.len() {
            Validation::fail("not every size was measured")
        } else {
            Validation::pass(format!(
                "{} sizes: each permutation is one cycle over every line and each chase ended on the predicted line",
                self.chases_checked
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_is_read_next_to_every_size_it_reaches_when_it_is_small() {
        let sizes = |max_mib: usize| -> Vec<usize> {
            std::iter::successors(Some(16usize << 10), |s| Some(s * 2))
                .take_while(|s| *s <= max_mib << 20)
                .collect()
        };
        // A 32 MiB L3: chains of 1, 4 and 8 MiB; read before 16 KiB, before
        // each of 512 KiB .. 128 MiB (9 sizes) and after the last.
        let s32 = sizes(128);
        let c32 = Canary::sizes(&[], Some(32 << 20), &s32);
        assert_eq!(c32, [1 << 20, 4 << 20, 8 << 20]);
        let before: Vec<usize> = (0..s32.len())
            .filter(|&i| Canary::read_before(&c32, &s32, i))
            .map(|i| s32[i] >> 10)
            .collect();
        assert_eq!(
            before,
            [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
        );
        assert_eq!(Canary::reads(&c32, &s32), 11);
        // A 480 MiB L3: 208 MiB of canary chains, read three times.
        let s480 = sizes(2048);
        let c480 = Canary::sizes(&[], Some(480 << 20), &s480);
        assert_eq!(c480, [16 << 20, 64 << 20, 128 << 20]);
        assert_eq!(Canary::reads(&c480, &s480), 3);
        // No known cache, no canary.
        assert_eq!(Canary::reads(&Canary::sizes(&[], None, &s32), &s32), 0);
        // With a 32 KiB L1d and a 512 KiB L2: 16 and 256 KiB chains too,
        // read next to every size from 16 KiB (all but the first).
        let inner = Canary::sizes(&[32 << 10, 512 << 10], Some(32 << 20), &s32);
        assert_eq!(inner, [16 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20]);
        assert_eq!(Canary::reads(&inner, &s32), s32.len() + 1);
    }

    #[test]
    fn bucketed_shuffles_are_permutations_and_look_uniform() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let n = BUCKET_LINES as u32 * 5 + 17;
        let mut v = shuffled(0..n, &mut rng, BUCKET_LINES);
        assert_ne!(v[..100], (0..100).collect::<Vec<u32>>()[..]);
        v.sort_unstable();
        assert_eq!(v, (0..n).collect::<Vec<u32>>(), "every value exactly once");
        // Where value 0 lands, over many small shuffles, in place and
        // through four buckets: every place about equally often
        // (chi-square with 7 degrees of freedom, p > 0.001).
        for bucket in [8, 2] {
            let mut counts = [0u32; 8];
            for _ in 0..8000 {
                let s = shuffled(0..8, &mut rng, bucket);
                counts[s.iter().position(|&x| x == 0).unwrap()] += 1;
            }
            let chi2: f64 = counts
                .iter()
                .map(|&c| (c as f64 - 1000.0).powi(2) / 1000.0)
                .sum();
            assert!(chi2 < 24.3, "bucket {bucket}: {counts:?}");
        }
    }

    #[test]
    fn chain_is_one_cycle_and_chase_follows_it() {
        let chain = Chain::new(1000, 7);
        assert!(chain.is_single_cycle());
        assert_eq!(chain.chase(0, 1000), 0, "a full lap returns to the start");
        assert_eq!(chain.chase(0, 1234), chain.order[234] as usize * SLOTS);
        let again = Chain::new(1000, 7);
        assert_eq!(
            chain.order, again.order,
            "the seed reproduces the permutation"
        );
        assert_ne!(chain.order, Chain::new(1000, 8).order);
    }
}
