//! The made-up machines' history, derived from runs measured here: every
//! rate scaled by the machine's speed and every time by its inverse, a
//! little run-to-run jitter, start times spread over days, one machine with
//! a gap in its history and one with a regression step. Each derived run
//! says so in its metadata (`demo`) and is recorded as an import, never as
//! a run of this machine.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_model::{BenchmarkMetric, BenchmarkSuiteRun, ListOutput, NoiseEntry, Trial, run_id};

/// A machine of the demo history that does not exist.
#[derive(Debug, Clone, Copy)]
pub struct DemoMachine {
    /// Its host name (every demo host name starts with `demo-`).
    pub hostname: &'static str,
    /// How much faster than this machine it is on all its threads: rates
    /// ×speed, times ÷speed.
    pub speed: f64,
    /// The same for one thread (metrics tagged `threads=1`, or
    /// `param.threads=1` where the benchmark ran on one).
    pub per_core: f64,
    /// Benchmarks that scale otherwise, by name: memory bandwidth grows
    /// with channels, latency does not.
    pub special: &'static [(&'static str, f64)],
    /// Its logical CPUs, as a multiple of this machine's.
    pub cores: usize,
    /// Days before now of each of its runs, oldest first.
    pub days_ago: &'static [i64],
    /// A change that makes one benchmark slower from one run on.
    pub step: Option<Step>,
}

/// A regression step: from run `from_run` (0-based, in time order) on,
/// `benchmark`'s rates are multiplied by `factor` (times divided).
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// The first run that has it.
    pub from_run: usize,
    /// The benchmark (its name, any suite) it slows down.
    pub benchmark: &'static str,
    /// The slow-down: rates ×factor, below 1.
    pub factor: f64,
}

/// The demo's machines: a bigger one (four times the cores, more memory
/// channels, a longer trip to memory) with an eleven-day gap in its history
/// (the run-index axis closes it, the calendar axis shows it), and a
/// smaller one whose memory bandwidth drops 22% at its ninth run.
pub const MACHINES: [DemoMachine; 2] = [
    DemoMachine {
        hostname: "demo-big",
        speed: 1.9,
        per_core: 1.15,
        special: &[("mem_bandwidth", 2.6), ("mem_latency", 0.85)],
        cores: 4,
        days_ago: &[27, 26, 25, 24, 23, 12, 11, 10, 9, 8, 7],
        step: None,
    },
    DemoMachine {
        hostname: "demo-small",
        speed: 0.8,
        per_core: 0.9,
        special: &[("mem_bandwidth", 0.7), ("mem_latency", 1.1)],
        cores: 1,
        days_ago: &[14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1],
        step: Some(Step {
            from_run: 8,
            benchmark: "mem_bandwidth",
            factor: 0.78,
        }),
    },
];

/// Largest run-to-run jitter, relative (uniform in ±this).
const JITTER: f64 = 0.02;

/// How a metric moves with a machine's speed, from its unit.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scaling {
    /// A rate (`GFLOP/s`, `GB/s`, `GCUPS`): ×speed.
    Rate,
    /// A time (`ns`, `us`, `ms`, `s`): ÷speed.
    Time,
    /// A count, a share, an accuracy: the same everywhere.
    Fixed,
}

fn scaling(unit: &str) -> Scaling {
    match unit {
        "ns" | "us" | "µs" | "ms" | "s" => Scaling::Time,
        u if u.ends_with("/s") || u == "GCUPS" => Scaling::Rate,
        _ => Scaling::Fixed,
    }
}

impl DemoMachine {
    /// Its regression step, described (`mem_bandwidth x0.78 from its run 9
    /// of 14`), if it has one.
    pub fn step_note(&self) -> Option<String> {
        self.step.map(|s| {
            format!(
                "{} x{:.2} from its run {} of {}",
                s.benchmark,
                s.factor,
                s.from_run + 1,
                self.days_ago.len()
            )
        })
    }

    /// Its speed relative to this machine for `benchmark`'s `metric`.
    pub fn speed_of(&self, benchmark: &str, metric: &BenchmarkMetric) -> f64 {
        if let Some((_, s)) = self.special.iter().find(|(b, _)| *b == benchmark) {
            *s
        } else if ["threads", "param.threads"]
            .iter()
            .any(|k| metric.tags.get(*k).map(String::as_str) == Some("1"))
        {
            self.per_core
        } else {
            self.speed
        }
    }
}

/// Multiplies a metric's rates by `speed` and its times by 1/`speed`.
fn scale_metric(m: &mut BenchmarkMetric, speed: f64) {
    let k = match scaling(&m.unit) {
        Scaling::Rate => speed,
        Scaling::Time => 1.0 / speed,
        Scaling::Fixed => return,
    };
    m.value *= k;
    if let Some(s) = &mut m.stats {
        s.scale(k);
    }
}

/// A uniform draw in ±[`JITTER`] around 1.
fn jitter(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    1.0 + JITTER * (2.0 * u - 1.0)
}

/// The made-up machines' history and their noise profiles.
#[derive(Debug, Clone, Default)]
pub struct Derived {
    /// Every run, machine by machine, oldest first.
    pub runs: Vec<BenchmarkSuiteRun>,
    /// Each machine's noise profile, from its runs before any step taken
    /// as A/A trials (what `warpt noise` would have measured there), so
    /// `compare` can tell the step from run-to-run variation.
    pub profiles: Vec<(ListOutput, Vec<NoiseEntry>)>,
}

/// Every demo machine's history: for each of its days, a copy of each
/// seed run, `days_ago` days before the seeds were measured (they keep
/// their spacing). Deterministic for given seeds.
pub fn derive(seeds: &[BenchmarkSuiteRun]) -> Derived {
    let mut out = Derived::default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0xde30);
    for (m, machine) in MACHINES.iter().enumerate() {
        // Per seed, its runs on this machine before any step: A/A trials.
        let mut steady: Vec<Vec<usize>> = vec![Vec::new(); seeds.len()];
        for (i, days) in machine.days_ago.iter().enumerate() {
            let stepped = machine.step.filter(|st| i >= st.from_run);
            let earlier = SignedDuration::from_hours(-24 * days);
            for (s, seed) in seeds.iter().enumerate() {
                let mut run = copy(seed, machine, stepped, earlier, &mut rng);
                let start = run.start_time.unwrap_or_else(Timestamp::now);
                run.id = run_id(start, &format!("demo{m}{i:02}{s}"));
                if stepped.is_none() {
                    steady[s].push(out.runs.len());
                }
                out.runs.push(run);
            }
        }
        for indices in &steady {
            let runs: Vec<&BenchmarkSuiteRun> = indices.iter().map(|&i| &out.runs[i]).collect();
            if let Some(p) = aa_profile(&runs) {
                out.profiles.push(p);
            }
        }
    }
    out
}

/// `seed` as if `machine` had run it `earlier` (negative) than it ran:
/// scaled, jittered, slowed by `stepped` where it applies, rehosted, and
/// saying so in `metadata.demo`.
fn copy(
    seed: &BenchmarkSuiteRun,
    machine: &DemoMachine,
    stepped: Option<Step>,
    earlier: SignedDuration,
    rng: &mut Xoshiro256PlusPlus,
) -> BenchmarkSuiteRun {
    let mut run = seed.clone();
    // Graded as the harness grades a result, for the conditions of a
    // machine that does not exist: none were measured there. This host's
    // steal, other processes and clock are not the made-up machine's (a
    // cloud guest that stole a tenth of every seed run left the derived
    // histories without an undisturbed run, so without a noise profile).
    let (profile, target) = run.manifest.as_ref().map_or(("release".into(), 0.01), |m| {
        (m.build_profile.clone(), m.config.target_rel_ci)
    });
    let unmeasured = warpt_harness::HostConditions {
        build_profile: profile,
        ..Default::default()
    };
    for b in &mut run.benchmarks {
        let mut run_factor = jitter(rng);
        if let Some(st) = stepped.filter(|st| b.spec.id.name == st.benchmark) {
            run_factor *= st.factor;
        }
        for x in &mut b.metrics {
            let speed = machine.speed_of(&b.spec.id.name, x) * run_factor;
            scale_metric(x, speed);
        }
        b.start_time = shifted(b.start_time, earlier);
        b.end_time = shifted(b.end_time, earlier);
        // The regime probes read this machine, not the made-up one; the
        // seed's readings copied to both sides of a comparison would widen
        // its band by a swing neither made-up run had.
        b.regime = None;
        b.interference = None;
        let grade = warpt_harness::assess(b, &unmeasured, Default::default(), target);
        b.quality = Some(grade.quality);
        b.measurement_quality = Some(grade.measurement_quality);
        b.quality_reasons = grade.reasons;
    }
    run.start_time = run.start_time.map(|t| shifted(t, earlier));
    run.end_time = run.end_time.map(|t| shifted(t, earlier));
    rehost(&mut run, machine);
    let special: String = machine
        .special
        .iter()
        .map(|(b, f)| format!(", {b} x{f:.2}"))
        .collect();
    let mut note = format!(
        "derived from run {} measured on {}: rates x{:.2} (one thread x{:.2}{special}), \
         times divided by the same, ±{:.0}% jitter",
        seed.id,
        host_of(seed),
        machine.speed,
        machine.per_core,
        JITTER * 100.0
    );
    if stepped.is_some()
        && let Some(step) = machine.step_note()
    {
        note.push_str(&format!("; regression step: {step}"));
    }
    run.metadata
        .get_or_insert_with(BTreeMap::new)
        .insert("demo".into(), note);
    run
}

/// The noise profile of `runs` (one seed's runs on one machine, unchanged
/// code) read as the trials of one A/A run, as `warpt noise` reads its own.
fn aa_profile(runs: &[&BenchmarkSuiteRun]) -> Option<(ListOutput, Vec<NoiseEntry>)> {
    let first = *runs.first()?;
    let system = first.system.clone()?;
    let mut aa = first.clone();
    aa.trials = runs
        .iter()
        .zip(1..)
        .map(|(r, index)| Trial {
            index,
            start_time: r.start_time,
            end_time: r.end_time,
            order: (0..r.benchmarks.len()).collect(),
            benchmarks: r.benchmarks.clone(),
        })
        .collect();
    let entries = warpt_report::compare::noise::profile(&aa).entries;
    (!entries.is_empty()).then_some((system, entries))
}

fn shifted(t: Timestamp, by: SignedDuration) -> Timestamp {
    t.checked_add(by).unwrap_or(t)
}

/// The host name `run` was measured on.
pub(super) fn host_of(run: &BenchmarkSuiteRun) -> String {
    run.system
        .as_ref()
        .map(|s| s.os.hostname.clone())
        .unwrap_or_else(|| "this machine".into())
}

/// The run as if taken on `machine`: its host name and CPU count in the
/// snapshot and the manifest.
fn rehost(run: &mut BenchmarkSuiteRun, machine: &DemoMachine) {
    if let Some(sys) = &mut run.system {
        sys.os.hostname = machine.hostname.into();
        sys.cpu.logical_cores *= machine.cores;
        if let Some(p) = &mut sys.cpu.physical_cores {
            *p *= machine.cores;
        }
        sys.memory.total_bytes = sys.memory.total_bytes.saturating_mul(machine.cores as u64);
    }
    if let Some(m) = &mut run.manifest {
        m.hostname = machine.hostname.into();
    }
    for b in &mut run.benchmarks {
        b.system = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(name: &str, unit: &str, value: f64) -> BenchmarkMetric {
        let mut m = BenchmarkMetric::single(name, value, unit, unit != "ms");
        m.stats = Some(warpt_model::MetricStats {
            n: 2,
            mean: value,
            median: value,
            std: 1.0,
            min: value - 1.0,
            max: value + 1.0,
            p25: value,
            p50: value,
            p75: value,
            p90: value,
            p95: value,
            p99: value,
            p999: None,
            ci95_low: value - 1.0,
            ci95_high: value + 1.0,
            outliers: 0,
            stop_reason: None,
            samples: vec![value - 1.0, value + 1.0],
            samples_stride: None,
            percentiles: Default::default(),
        });
        m
    }

    #[test]
    fn rates_grow_times_shrink_and_counts_stay_with_a_faster_machine() {
        let mut rate = metric("bandwidth", "GB/s", 10.0);
        scale_metric(&mut rate, 2.0);
        assert_eq!(rate.value, 20.0);
        let s = rate.stats.as_ref().unwrap();
        assert_eq!((s.ci95_low, s.ci95_high, s.std), (18.0, 22.0, 2.0));
        assert_eq!(s.samples, vec![18.0, 22.0]);
        let mut time = metric("latency", "ms", 10.0);
        scale_metric(&mut time, 2.0);
        assert_eq!(time.value, 5.0);
        assert_eq!(time.stats.as_ref().unwrap().max, 5.5);
        let mut cups = metric("gcups", "GCUPS", 3.0);
        scale_metric(&mut cups, 2.0);
        assert_eq!(cups.value, 6.0);
        let mut share = metric("recall", "%", 99.0);
        scale_metric(&mut share, 2.0);
        assert_eq!(share.value, 99.0);
    }

    #[test]
    fn a_machine_scales_one_thread_and_its_special_benchmarks_apart() {
        let big = MACHINES[0];
        let mut one = metric("gflops", "GFLOP/s", 1.0);
        one.tags.insert("threads".into(), "1".into());
        let all = metric("gflops", "GFLOP/s", 1.0);
        assert_eq!(big.speed_of("cpu_flops", &one), big.per_core);
        assert_eq!(big.speed_of("cpu_flops", &all), big.speed);
        assert_eq!(big.speed_of("mem_bandwidth", &one), 2.6);
        let mut swept = metric("gflops", "GFLOP/s", 1.0);
        swept.tags.insert("threads".into(), "all".into());
        swept.tags.insert("param.threads".into(), "1".into());
        assert_eq!(big.speed_of("cpu_flops", &swept), big.per_core);
        assert_ne!(big.per_core, big.speed);
    }

    #[test]
    fn the_made_up_machines_do_not_inherit_this_hosts_disturbance() {
        let text = include_str!("../../warpt-model/tests/data/example_export.json");
        let mut seed: BenchmarkSuiteRun = serde_json::from_str(text).unwrap();
        // Every result measured here while the hypervisor stole 14%.
        for b in &mut seed.benchmarks {
            b.interference = Some(warpt_model::Interference {
                window_s: 1.0,
                cpus: 2,
                steal_share: Some(0.14),
                ..Default::default()
            });
            b.measurement_quality = Some(warpt_model::Quality::Unreliable);
            b.quality = Some(warpt_model::Quality::Unreliable);
            b.quality_reasons = vec!["steal: the hypervisor took 14.0% of CPU time".into()];
        }
        let derived = derive(std::slice::from_ref(&seed));
        for b in derived.runs.iter().flat_map(|r| &r.benchmarks) {
            assert!(b.interference.is_none());
            assert_ne!(
                b.measurement_quality,
                Some(warpt_model::Quality::Unreliable)
            );
            assert!(
                b.quality_reasons.iter().all(|w| !w.starts_with("steal")),
                "{b:?}"
            );
        }
        // So each made-up machine has its noise profile.
        assert_eq!(derived.profiles.len(), MACHINES.len());
    }

    #[test]
    fn jitter_stays_within_its_bound_and_moves() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let draws: Vec<f64> = (0..1000).map(|_| jitter(&mut rng)).collect();
        assert!(draws.iter().all(|d| (d - 1.0).abs() <= JITTER));
        assert!(draws.iter().any(|d| *d > 1.0 + JITTER / 2.0));
        assert!(draws.iter().any(|d| *d < 1.0 - JITTER / 2.0));
    }
}
