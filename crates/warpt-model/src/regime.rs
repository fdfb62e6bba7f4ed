//! Host regimes: states of a machine that last a run, change its figures
//! and that steal and CPU-time accounting do not show — a core clock that
//! sits lower for a while, two CPUs that share one physical core, a virtual
//! machine's share of the last-level cache that shrinks or grows, a memory
//! bus that other guests load.
//!
//! Probes read them while a benchmark measures ([`RegimeProbes`]); a result
//! whose probes moved during its own measurement carries the reason in its
//! quality (prefixed [`REGIME_PREFIX`]), and the metrics of two runs whose
//! probes read different regimes, where the regime reaches, are compared on one
//! run a side with a band widened by what the regime can explain
//! ([`RegimeProbes::shift`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How every regime reason in `quality_reasons` (and in `benchmark compare`'s
/// inconclusive reasons) starts.
pub const REGIME_PREFIX: &str = "regime: ";

/// The effective clock or the FP throughput moved more than this share
/// within one measurement (fastest against slowest reading): a regime.
pub const CLOCK_SWING: f64 = 0.08;
/// Two runs' median effective clocks or FP throughputs differ by more than
/// this share: they ran in different regimes.
pub const CLOCK_APART: f64 = 0.05;
/// A cache canary moved by more than this factor within one
/// measurement, or differs by more between two runs: the share of the
/// cache changed.
pub const CANARY_FACTOR: f64 = 1.5;
/// All threads reached less than this share of (one thread's rate x the
/// physical cores they ran on): the CPUs shared a core while measuring.
pub const SCALING_FLOOR: f64 = 0.75;
/// The memory-bandwidth canary moved more than this share within one
/// measurement (fastest against slowest reading): the bus changed.
pub const BANDWIDTH_SWING: f64 = 0.15;
/// Two runs' median memory-bandwidth canaries differ by more than this
/// share: the host's memory bus was in different states.
pub const BANDWIDTH_APART: f64 = 0.10;

/// How the harness reads the core's speed around the series of a CPU or
/// memory benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClockProbe {
    /// The effective clock and the FP throughput, each the fastest of 15
    /// short runs after a 2 ms warm-up: about 12 ms a reading.
    #[default]
    Full,
    /// The effective clock alone, the fastest of 5 short runs after a
    /// 2 ms warm-up (about 3.3 ms), once per benchmark, before its first
    /// series: enough to compare two runs' regimes, not to see the clock
    /// move within one. For suites of many short benchmarks whose code
    /// runs in another process (pytest's tests), where full readings
    /// before and after each series would cost more than the rest of
    /// warpt's work for it (the reading is taken while that process warms
    /// up, so it does not wait for it).
    Brief,
}

impl ClockProbe {
    /// Whether this is the default, [`ClockProbe::Full`] (not serialized).
    pub fn is_full(&self) -> bool {
        *self == ClockProbe::Full
    }
}

/// What the regime probes read while one result measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegimeProbes {
    /// The effective core clock before each series and after the last, MHz:
    /// the fastest of short timed chains of dependent one-cycle adds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_mhz: Vec<f64>,
    /// One core's floating-point throughput at the same moments, GFLOP/s:
    /// the fastest of short timed runs of a fixed mix of independent SIMD
    /// multiplies and adds. It sees what the clock chain cannot: another
    /// guest's thread on the same physical core taking the FP pipes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fp_gflops: Vec<f64>,
    /// The cache canary (named for its first kind, the last-level cache's;
    /// since then the per-core caches' too): latency of a pointer chase over
    /// a fixed working set, read several times during the measurement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llc_canary: Vec<CanaryReadings>,
    /// The memory-bandwidth canary, GB/s: every thread of the benchmark
    /// summing its share of a fixed array larger than the caches (a plain
    /// read loop, not the kernels under test), read before the first series
    /// and after the last. It sees the host's memory bus, which other
    /// guests load, where the core's clock and throughput stay put; it
    /// reaches every figure of the result it was read for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bandwidth_canary_gbs: Vec<f64>,
    /// All-threads against one-thread rate checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scaling: Vec<ScalingCheck>,
}

/// What the probes of two single runs say of one metric
/// ([`RegimeProbes::shift`]): `compare` widens that metric's band by
/// `shift` instead of trusting a change the probes can explain.
#[derive(Debug, Clone, PartialEq)]
pub struct RegimeShift {
    /// The regimes seen (beyond the thresholds), each `base ` or `current `
    /// (or neither, for a difference between the sides) and a reason
    /// starting with [`REGIME_PREFIX`]; empty when the probes differ only
    /// by less.
    pub reasons: Vec<String>,
    /// The relative change of the metric the probes' differences can
    /// explain (0.12 = 12%): per kind the largest movement its probes read,
    /// the kinds compounded.
    pub shift: f64,
}

/// One canary working set and its readings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CanaryReadings {
    /// Working set, KiB.
    pub size_kib: u64,
    /// Nanoseconds per dependent load, one per reading, in time order.
    pub ns: Vec<f64>,
}

/// One all-threads/one-thread check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScalingCheck {
    /// What ran on every thread (e.g. `int8`, `probe fp64 before`).
    pub what: String,
    /// Threads of the all-threads run.
    pub threads: u32,
    /// Distinct physical cores those threads were pinned to.
    pub cores: u32,
    /// All threads' rate over one thread's rate.
    pub ratio: f64,
}

impl ScalingCheck {
    /// Whether the threads fell short of their cores.
    pub fn short(&self) -> bool {
        self.cores >= 2 && self.ratio < SCALING_FLOOR * f64::from(self.cores)
    }
}

/// The median of the finite `values`; `None` when there are none.
fn median(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| warpt_stats::median(&v))
}

/// How far apart two readings are, as a fraction: the larger over the
/// smaller - 1 (0 for equal readings, whichever side is larger).
fn apart(x: f64, y: f64) -> f64 {
    (x / y).max(y / x) - 1.0
}

fn span(values: &[f64]) -> Option<(f64, f64)> {
    let lo = values
        .iter()
        .copied()
        .filter(|x| *x > 0.0)
        .reduce(f64::min)?;
    let hi = values
        .iter()
        .copied()
        .filter(|x| *x > 0.0)
        .reduce(f64::max)?;
    Some((lo, hi))
}

impl RegimeProbes {
    /// Whether no probe read anything.
    pub fn is_empty(&self) -> bool {
        self.clock_mhz.is_empty()
            && self.fp_gflops.is_empty()
            && self.llc_canary.is_empty()
            && self.bandwidth_canary_gbs.is_empty()
            && self.scaling.is_empty()
    }

    /// The probes of the core's speed: (what, unit, decimals, readings).
    fn speeds(&self) -> [(&'static str, &'static str, usize, &[f64]); 2] {
        [
            ("the effective clock", "MHz", 0, &self.clock_mhz),
            ("one core's FP throughput", "GFLOP/s", 1, &self.fp_gflops),
        ]
    }

    /// A regime that moves every figure of the result: the core's clock or
    /// its FP throughput swung while it measured.
    pub fn speed_reason(&self) -> Option<String> {
        self.speed_swings().into_iter().next().map(|(why, _)| why)
    }

    /// Every speed probe that swung more than [`CLOCK_SWING`] while
    /// measuring: (reason, fastest over slowest reading - 1).
    fn speed_swings(&self) -> Vec<(String, f64)> {
        self.speeds()
            .into_iter()
            .filter_map(|(what, unit, d, readings)| {
                let (lo, hi) = span(readings)?;
                let swing = hi / lo - 1.0;
                (swing > CLOCK_SWING).then(|| {
                    let why = format!(
                        "{REGIME_PREFIX}{what} moved {:.0}% while measuring ({lo:.d$} to {hi:.d$} {unit})",
                        swing * 100.0
                    );
                    (why, swing)
                })
            })
            .collect()
    }

    /// Threads that fell short of their cores (this moves the all-threads
    /// figures only).
    pub fn scaling_reasons(&self) -> Vec<String> {
        self.shortfalls().into_iter().map(|(why, _)| why).collect()
    }

    /// [`Self::scaling_reasons`] with how far each moves an all-threads
    /// figure: separate cores over the ratio reached, - 1.
    fn shortfalls(&self) -> Vec<(String, f64)> {
        self.scaling
            .iter()
            .filter(|s| s.short())
            .map(|s| {
                let why = format!(
                    "{REGIME_PREFIX}{} on {} threads ran at {:.2}x one thread's rate, {} separate \
                     cores should give about {}x: the CPUs shared a core while measuring",
                    s.what, s.threads, s.ratio, s.cores, s.cores
                );
                (
                    why,
                    f64::from(s.cores) / s.ratio.max(f64::MIN_POSITIVE) - 1.0,
                )
            })
            .collect()
    }

    /// Canaries that moved while measuring (this moves the figures of
    /// working sets from near the cache's size up only; see [`Self::cache_reach_kib`]).
    pub fn canary_reasons(&self) -> Vec<String> {
        self.canary_reasons_reaching(u64::MAX)
    }

    /// The canaries reaching a working set of `size_kib`: those at most twice
    /// its size (a cache level's canary says nothing of the levels below).
    fn canaries_reaching(&self, size_kib: u64) -> impl Iterator<Item = &CanaryReadings> {
        self.llc_canary
            .iter()
            .filter(move |c| c.size_kib / 2 <= size_kib)
    }

    /// [`Self::canary_reasons`] of the canaries reaching `size_kib`.
    fn canary_reasons_reaching(&self, size_kib: u64) -> Vec<String> {
        self.canary_moves(size_kib)
            .into_iter()
            .map(|(why, _)| why)
            .collect()
    }

    /// The canaries reaching `size_kib` that moved by more than
    /// [`CANARY_FACTOR`] while measuring: (reason, slowest over fastest - 1).
    fn canary_moves(&self, size_kib: u64) -> Vec<(String, f64)> {
        self.canaries_reaching(size_kib)
            .filter_map(|c| {
                let (lo, hi) = span(&c.ns)?;
                (hi / lo > CANARY_FACTOR).then(|| {
                    let why = format!(
                        "{REGIME_PREFIX}the cache canary ({} KiB chase) moved from \
                         {lo:.1} to {hi:.1} ns while measuring: the share of the cache this \
                         machine gets changed",
                        c.size_kib
                    );
                    (why, hi / lo - 1.0)
                })
            })
            .collect()
    }

    /// The memory-bandwidth canary moved while measuring (this moves the
    /// figures of the result the canary was read for, all of them).
    pub fn bandwidth_reason(&self) -> Option<String> {
        self.bandwidth_swing().map(|(why, _)| why)
    }

    /// [`Self::bandwidth_reason`] with the fastest over the slowest reading - 1.
    fn bandwidth_swing(&self) -> Option<(String, f64)> {
        let (lo, hi) = span(&self.bandwidth_canary_gbs)?;
        (hi / lo - 1.0 > BANDWIDTH_SWING).then(|| {
            let why = format!(
                "{REGIME_PREFIX}the memory-bandwidth canary moved from {lo:.1} to {hi:.1} GB/s \
                 while measuring: the host's memory bus changed"
            );
            (why, hi / lo - 1.0)
        })
    }

    /// The memory-bandwidth canaries of two measurements: (the reason when
    /// their medians are more than [`BANDWIDTH_APART`] apart, the larger
    /// over the smaller - 1), when both read one.
    fn bandwidth_gap(
        a: &RegimeProbes,
        b: &RegimeProbes,
        names: (&str, &str),
    ) -> Option<(Option<String>, f64)> {
        let (na, nb) = names;
        let (x, y) = (
            median(&a.bandwidth_canary_gbs)?,
            median(&b.bandwidth_canary_gbs)?,
        );
        let gap = apart(x, y);
        let why = (gap > BANDWIDTH_APART).then(|| {
            format!(
                "{REGIME_PREFIX}the memory-bandwidth canary read {x:.1} GB/s in the {na} and \
                 {y:.1} GB/s in the {nb}: the host's memory bus differed"
            )
        });
        Some((why, gap))
    }

    /// Every regime seen within this measurement, each a reason starting
    /// with [`REGIME_PREFIX`].
    pub fn reasons(&self) -> Vec<String> {
        let mut out: Vec<String> = self.speed_reason().into_iter().collect();
        out.extend(self.scaling_reasons());
        out.extend(self.canary_reasons());
        out.extend(self.bandwidth_reason());
        out
    }

    /// The smallest working set, KiB, a canary reaches: half the smallest
    /// canary. A canary reaches every larger working set too: past a cache,
    /// a chase's page-table walks go through it (measured on a 2-vCPU
    /// guest: 128 MiB, 4x its L3, read 34% slower in one run while the 4
    /// and 8 MiB canaries moved).
    pub fn cache_reach_kib(&self) -> Option<u64> {
        let lo = self.llc_canary.iter().map(|c| c.size_kib).min()?;
        Some(lo / 2)
    }

    /// Why the core's speed in two measurements says different regimes, if
    /// it does: the median clocks or FP throughputs are more than
    /// [`CLOCK_APART`] apart. `names` say what each side is in the reason
    /// (`base run`, `current run`).
    pub fn speed_apart(a: &RegimeProbes, b: &RegimeProbes, names: (&str, &str)) -> Option<String> {
        Self::speed_gaps(a, b, names)
            .into_iter()
            .find_map(|(why, _)| why)
    }

    /// Every speed probe with readings in both `a` and `b`: (the reason when
    /// their medians are more than [`CLOCK_APART`] apart, the larger over
    /// the smaller - 1).
    fn speed_gaps(
        a: &RegimeProbes,
        b: &RegimeProbes,
        names: (&str, &str),
    ) -> Vec<(Option<String>, f64)> {
        let (na, nb) = names;
        a.speeds()
            .into_iter()
            .zip(b.speeds())
            .filter_map(|((what, unit, d, ra), (_, _, _, rb))| {
                let (x, y) = (median(ra)?, median(rb)?);
                let gap = apart(x, y);
                let why = (gap > CLOCK_APART).then(|| {
                    format!(
                        "{REGIME_PREFIX}{what} differs: {x:.d$} {unit} in the {na}, {y:.d$} \
                         {unit} in the {nb}"
                    )
                });
                Some((why, gap))
            })
            .collect()
    }

    /// The canaries both measurements read that reach a working set of
    /// `size_kib`: (the reason when they say different cache shares, their
    /// medians more than [`CANARY_FACTOR`] apart; the slower over the
    /// faster - 1).
    fn canary_gaps(
        a: &RegimeProbes,
        b: &RegimeProbes,
        names: (&str, &str),
        size_kib: u64,
    ) -> Vec<(Option<String>, f64)> {
        let (na, nb) = names;
        b.canaries_reaching(size_kib)
            .filter_map(|c| {
                let other = a.llc_canary.iter().find(|o| o.size_kib == c.size_kib)?;
                let (x, y) = (median(&other.ns)?, median(&c.ns)?);
                let gap = apart(x, y);
                let why = (gap + 1.0 > CANARY_FACTOR).then(|| {
                    format!(
                        "{REGIME_PREFIX}the cache canary ({} KiB chase) read {x:.1} ns in \
                         the {na} and {y:.1} ns in the {nb}: the share of the cache differed",
                        c.size_kib
                    )
                });
                Some((why, gap))
            })
            .collect()
    }

    /// The all-threads checks both measurements ran (matched by what ran):
    /// how far their ratios to one thread differ, the larger over the
    /// smaller - 1. A shortfall of one side is named by
    /// [`Self::shortfalls`]; this is the difference below it.
    fn scaling_gaps(a: &RegimeProbes, b: &RegimeProbes) -> Vec<(Option<String>, f64)> {
        b.scaling
            .iter()
            .filter_map(|c| {
                let other = a.scaling.iter().find(|o| o.what == c.what)?;
                let gap = apart(other.ratio, c.ratio);
                gap.is_finite().then_some((None, gap))
            })
            .collect()
    }

    /// What the probes say of one metric of two single runs: the regimes
    /// that reach it, and how far the difference between the runs' probes
    /// can move it. Regimes: the core's speed swung within a side or differs
    /// between them (every metric); a side's threads fell short of their
    /// cores (metrics not tagged `threads=1`); a canary moved within a side
    /// or differs between them (metrics whose `size_kib` tag that canary
    /// reaches: at least half its size); the memory-bandwidth canary moved
    /// within a side or differs between them (every metric of a result
    /// that read it).
    ///
    /// The shift counts every difference the probes read where they reach,
    /// also those below the regime thresholds: a clock 2% slower in the
    /// current run explains a CPU figure 2% lower (the probe is the
    /// reference measured during each run). Per kind (speed, threads,
    /// cache, memory bus) the largest movement; the kinds compound. `None` when no
    /// probe of the two runs reaches the metric.
    pub fn shift(
        base: &RegimeProbes,
        current: &RegimeProbes,
        tags: &std::collections::BTreeMap<String, String>,
    ) -> Option<RegimeShift> {
        const NAMES: (&str, &str) = ("base run", "current run");
        let sides = [("base", base), ("current", current)];
        let on_side = |side: &str, found: Vec<(String, f64)>| -> Vec<(Option<String>, f64)> {
            found
                .into_iter()
                .map(|(why, s)| (Some(format!("{side} {why}")), s))
                .collect()
        };
        let mut speed = Self::speed_gaps(base, current, NAMES);
        let mut threads = Vec::new();
        let mut cache = Vec::new();
        let all_threads = tags.get("threads").map(String::as_str) != Some("1");
        for (side, p) in sides {
            speed.extend(on_side(side, p.speed_swings()));
            if all_threads {
                threads.extend(on_side(side, p.shortfalls()));
            }
        }
        if all_threads {
            threads.extend(Self::scaling_gaps(base, current));
        }
        if let Some(size) = tags.get("size_kib").and_then(|s| s.parse::<u64>().ok()) {
            for (side, p) in sides {
                cache.extend(on_side(side, p.canary_moves(size)));
            }
            cache.extend(Self::canary_gaps(base, current, NAMES, size));
        }
        // The bus: every figure of the result the canary was read for.
        let mut bus: Vec<(Option<String>, f64)> = Self::bandwidth_gap(base, current, NAMES)
            .into_iter()
            .collect();
        for (side, p) in sides {
            bus.extend(on_side(side, p.bandwidth_swing().into_iter().collect()));
        }
        let kinds = [speed, threads, cache, bus];
        if kinds.iter().all(Vec::is_empty) {
            return None;
        }
        let factor: f64 = kinds
            .iter()
            .map(|k| 1.0 + k.iter().map(|(_, s)| *s).fold(0.0, f64::max))
            .product();
        let reasons: Vec<String> = kinds
            .into_iter()
            .flatten()
            .filter_map(|(why, _)| why)
            .collect();
        Some(RegimeShift {
            reasons,
            shift: factor - 1.0,
        })
    }

    /// The typical reading of each probe of one measurement: every series
    /// reduced to its median (the canaries one each), the scaling checks
    /// as they are. What a measurement's regime was, leaving out how it
    /// moved while measuring (which its own quality grades).
    pub fn typical(&self) -> RegimeProbes {
        let one = |v: &[f64]| -> Vec<f64> { median(v).into_iter().collect() };
        RegimeProbes {
            clock_mhz: one(&self.clock_mhz),
            fp_gflops: one(&self.fp_gflops),
            llc_canary: self
                .llc_canary
                .iter()
                .map(|c| CanaryReadings {
                    size_kib: c.size_kib,
                    ns: one(&c.ns),
                })
                .collect(),
            bandwidth_canary_gbs: one(&self.bandwidth_canary_gbs),
            scaling: self.scaling.clone(),
        }
    }

    /// Several measurements (the trials of one side) as one: each one's
    /// typical reading ([`Self::typical`]) taken together, so a regime that
    /// differed from one trial to the next reads as a swing within the
    /// side; per all-threads check, the trial with the median ratio.
    pub fn merged(probes: &[&RegimeProbes]) -> RegimeProbes {
        let mut out = RegimeProbes::default();
        for p in probes.iter().map(|p| p.typical()) {
            out.clock_mhz.extend(&p.clock_mhz);
            out.fp_gflops.extend(&p.fp_gflops);
            out.bandwidth_canary_gbs.extend(&p.bandwidth_canary_gbs);
            for c in p.llc_canary {
                match out.llc_canary.iter_mut().find(|o| o.size_kib == c.size_kib) {
                    Some(o) => o.ns.extend(&c.ns),
                    None => out.llc_canary.push(c),
                }
            }
        }
        let mut whats: Vec<&str> = Vec::new();
        for c in probes.iter().flat_map(|p| &p.scaling) {
            if !whats.contains(&c.what.as_str()) {
                whats.push(&c.what);
            }
        }
        for what in whats {
            let mut checks: Vec<&ScalingCheck> = probes
                .iter()
                .flat_map(|p| &p.scaling)
                .filter(|c| c.what == what)
                .collect();
            checks.sort_by(|a, b| a.ratio.total_cmp(&b.ratio));
            out.scaling.push(checks[checks.len() / 2].clone());
        }
        out
    }

    /// The regime most of `probes` saw: the median of their median clocks
    /// and FP throughputs (the reference a trial is held to among its
    /// siblings).
    pub fn consensus(probes: &[&RegimeProbes]) -> RegimeProbes {
        let of = |f: fn(&RegimeProbes) -> &[f64]| -> Vec<f64> {
            let medians: Vec<f64> = probes.iter().filter_map(|p| median(f(p))).collect();
            median(&medians).into_iter().collect()
        };
        RegimeProbes {
            clock_mhz: of(|p| &p.clock_mhz),
            fp_gflops: of(|p| &p.fp_gflops),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests;
