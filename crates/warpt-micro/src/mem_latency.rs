//! `mem_latency`: load-to-use latency by working-set size, measured with a
//! dependent pointer chase over a random cyclic permutation.
//!
//! The working set is split into 64-byte cache lines; line `i` holds the
//! index of the next line to visit. The visiting order is one random cycle
//! through every line (Sattolo's algorithm, seeded), so hardware prefetchers
//! cannot guess the next address and every load waits for the previous one.
//! The time per load at each size traces the cache hierarchy: L1, L2, L3,
//! then DRAM (including TLB misses, as lmbench's `lat_mem_rd` does).

use std::hint::black_box;
use std::time::{Duration, Instant};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkSpec, ParamValue, Validation,
};

/// Benchmark name within the micro suite.
pub const NAME: &str = "mem_latency";

/// Bytes per node: one cache line on every CPU warpt targets.
const LINE: usize = 64;
/// u64 slots per line.
const SLOTS: usize = LINE / 8;
/// Time one sample should take.
const SAMPLE_TARGET: Duration = Duration::from_millis(5);

/// The spec of `mem_latency`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec {
        id: BenchmarkId::new(crate::SUITE, NAME),
        components: vec![BenchmarkComponent::Ram],
        kind: BenchmarkKind::Synthetic,
        description: Some(
            "Load-to-use latency: a dependent pointer chase through one random cycle over every \
             64-byte line of a working set, at power-of-two sizes from 16 KiB to at least 4x the \
             last-level cache. Metric `latency` in ns per load, tagged `size_kib`. Validation: the \
             permutation is a single cycle over every line, and each chase ends on the line a \
             replay of the cycle predicts."
                .into(),
        ),
        default_duration_seconds: Some(6.0),
        external_tool: None,
        params: [
            ("min_kb".to_string(), ParamValue::Int(16)),
            ("max_mb".to_string(), ParamValue::Int(0)),
        ]
        .into(),
        param_help: [
            ("min_kb".to_string(), "smallest working set in KiB (rounded up to a power of two)".to_string()),
            (
                "max_mb".to_string(),
                "largest working set in MiB; 0 = the smallest power of two >= 4x the last-level cache".to_string(),
            ),
        ]
        .into(),
        param_kinds: Default::default(),
        param_ranges: warpt_model::ParamRange::table(&[("max_mb", warpt_model::ParamRange::at_least(0.0)), ("min_kb", warpt_model::ParamRange::at_least(1.0))]),
        param_choices: Default::default(),
        timeouts: Default::default(),
        metrics: vec!["latency".into()],
    }
}

/// A chain of cache lines forming one random cycle.
struct Chain {
    /// `nodes[line * SLOTS]` holds the slot index of the next line.
    nodes: Vec<u64>,
    /// `order[k]` is the line visited at step `k` from line 0.
    order: Vec<u32>,
}

impl Chain {
    /// Builds a random single cycle over `lines` lines from `seed`.
    fn new(lines: usize, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // Sattolo: a uniformly random permutation with exactly one cycle.
        let mut perm: Vec<u32> = (0..lines as u32).collect();
        for i in (1..lines).rev() {
            let j = (rng.next_u64() % i as u64) as usize;
            perm.swap(i, j);
        }
        let mut nodes = vec![0u64; lines * SLOTS];
        for (i, &next) in perm.iter().enumerate() {
            nodes[i * SLOTS] = next as u64 * SLOTS as u64;
        }
        let mut order = Vec::with_capacity(lines);
        let mut at = 0usize;
        for _ in 0..lines {
            order.push(at as u32);
            at = (nodes[at * SLOTS] as usize) / SLOTS;
        }
        Chain { nodes, order }
    }

    fn lines(&self) -> usize {
        self.order.len()
    }

    /// Whether the chain returns to line 0 after exactly `lines` steps and
    /// visits every line once on the way.
    fn is_single_cycle(&self) -> bool {
        let n = self.lines();
        let mut seen = vec![false; n];
        for &l in &self.order {
            if std::mem::replace(&mut seen[l as usize], true) {
                return false;
            }
        }
        let last = *self.order.last().unwrap_or(&0) as usize;
        (self.nodes[last * SLOTS] as usize) / SLOTS == 0
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

/// The running benchmark.
#[derive(Default)]
pub struct MemLatency {
    sizes: Vec<usize>,
    failures: Vec<String>,
    chases_checked: u64,
}

impl MemLatency {
    /// A fresh instance.
    pub fn new() -> Self {
        MemLatency::default()
    }
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
            (4 * llc).next_power_of_two()
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
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let policy = MeasurePolicy::share_of(ctx, self.sizes.len());
        let mut metrics = Vec::new();
        for &size in &self.sizes.clone() {
            let chain = Chain::new(size / LINE, ctx.seed ^ size as u64);
            if !chain.is_single_cycle() {
                self.failures.push(format!(
                    "{} KiB: permutation is not a single cycle",
                    size >> 10
                ));
                continue;
            }
            // Calibrate steps per sample to about SAMPLE_TARGET.
            let probe = 1u64 << 14;
            let t = Instant::now();
            black_box(chain.chase(0, probe));
            let per_step = t.elapsed().as_secs_f64() / probe as f64;
            let steps = ((SAMPLE_TARGET.as_secs_f64() / per_step.max(1e-10)) as u64).max(1024);

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
            warnings: Vec::new(),
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
