//! The probes' regimes and shifts, on planted readings.

use super::*;

const AB: (&str, &str) = ("base run", "current run");

/// Every regime reaching the metric, joined.
fn spoils(
    a: &RegimeProbes,
    b: &RegimeProbes,
    tags: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    RegimeProbes::shift(a, b, tags)
        .map(|s| s.reasons.join("; "))
        .filter(|r| !r.is_empty())
}

fn tags(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn swings_shortfalls_and_moves_are_regimes() {
    let mut p = RegimeProbes {
        clock_mhz: vec![3200.0, 3100.0, 3240.0],
        ..Default::default()
    };
    assert!(
        p.reasons().is_empty(),
        "a few percent is the probe's wander"
    );
    p.clock_mhz.push(2900.0);
    let why = p.speed_reason().unwrap();
    assert!(
        why.starts_with(REGIME_PREFIX) && why.contains("2900 to 3240"),
        "{why}"
    );
    p.clock_mhz.pop();
    p.scaling.push(ScalingCheck {
        what: "int8".into(),
        threads: 2,
        cores: 2,
        ratio: 1.02,
    });
    // One core shared by two threads is not a shortfall.
    p.scaling.push(ScalingCheck {
        what: "fp64".into(),
        threads: 2,
        cores: 1,
        ratio: 1.0,
    });
    let r = p.reasons();
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("int8 on 2 threads ran at 1.02x"), "{r:?}");
    p.scaling.clear();
    p.llc_canary.push(CanaryReadings {
        size_kib: 4096,
        ns: vec![18.0, 19.0, 120.0],
    });
    assert!(p.reasons()[0].contains("moved from 18.0 to 120.0 ns"));
    assert_eq!(p.cache_reach_kib(), Some(2048));
}

#[test]
fn two_runs_are_spoilt_only_where_the_regime_reaches() {
    let quiet = |mhz: f64, ns: f64| RegimeProbes {
        clock_mhz: vec![mhz],
        llc_canary: vec![CanaryReadings {
            size_kib: 4096,
            ns: vec![ns],
        }],
        ..Default::default()
    };
    let near = tags(&[("size_kib", "4096")]);
    let far = tags(&[("size_kib", "64")]);
    assert_eq!(
        spoils(&quiet(3200.0, 18.0), &quiet(3100.0, 20.0), &near),
        None
    );
    let clock = spoils(&quiet(3200.0, 18.0), &quiet(2950.0, 18.0), &far).unwrap();
    assert!(
        clock.contains("3200 MHz in the base run, 2950 MHz in the current run"),
        "{clock}"
    );
    let cache = spoils(&quiet(3200.0, 18.0), &quiet(3200.0, 110.0), &near).unwrap();
    assert!(
        cache.contains("18.0 ns in the base run and 110.0 ns"),
        "{cache}"
    );
    // An L1-sized working set does not care about the L3 share.
    assert_eq!(
        spoils(&quiet(3200.0, 18.0), &quiet(3200.0, 110.0), &far),
        None
    );
    // A working set far past the cache walks its page tables through it.
    let dram = tags(&[("size_kib", "131072")]);
    assert!(spoils(&quiet(3200.0, 18.0), &quiet(3200.0, 110.0), &dram).is_some());
    // A moved canary of a level-2-sized chase reaches from half its size
    // up, not the L1-sized sets below.
    let l2 = |ns: f64| RegimeProbes {
        llc_canary: vec![
            CanaryReadings {
                size_kib: 512,
                ns: vec![4.0, ns],
            },
            CanaryReadings {
                size_kib: 4096,
                ns: vec![18.0, 18.5],
            },
        ],
        ..Default::default()
    };
    let l1 = tags(&[("size_kib", "128")]);
    let l2_set = tags(&[("size_kib", "256")]);
    assert_eq!(spoils(&l2(4.2), &l2(12.0), &l1), None);
    let why = spoils(&l2(4.2), &l2(12.0), &l2_set).unwrap();
    assert!(
        why.contains("current regime: the cache canary (512 KiB chase) moved from 4.0 to 12.0 ns"),
        "{why}"
    );
    assert_eq!(spoils(&l2(4.2), &l2(4.3), &l2_set), None);
    // How far each can move the metric: the clock 3200 against 2950
    // MHz, 8.5%; the canary 18 against 110 ns, 511%; both compound.
    fn shift(
        a: &RegimeProbes,
        b: &RegimeProbes,
        t: &std::collections::BTreeMap<String, String>,
    ) -> Option<f64> {
        RegimeProbes::shift(a, b, t).map(|s| s.shift)
    }
    let clock_shift = shift(&quiet(3200.0, 18.0), &quiet(2950.0, 18.0), &far).unwrap();
    assert!(
        (clock_shift - 250.0 / 2950.0).abs() < 1e-12,
        "{clock_shift}"
    );
    let both = shift(&quiet(3200.0, 18.0), &quiet(2950.0, 110.0), &near).unwrap();
    assert!(
        (both - ((3200.0 / 2950.0) * (110.0 / 18.0) - 1.0)).abs() < 1e-12,
        "{both}"
    );
    // Probes that differ by less than a regime name none, and still
    // explain that much: 3.2% of clock and 11% of canary.
    let close = RegimeProbes::shift(&quiet(3200.0, 18.0), &quiet(3100.0, 20.0), &near).unwrap();
    assert!(close.reasons.is_empty(), "{close:?}");
    assert!(
        (close.shift - ((3200.0 / 3100.0) * (20.0 / 18.0) - 1.0)).abs() < 1e-12,
        "{close:?}"
    );
    // Nothing read on one side: nothing to say.
    assert_eq!(
        shift(&RegimeProbes::default(), &quiet(3100.0, 20.0), &near),
        None
    );
    // A shortfall spoils the all-threads figures, not one thread's.
    let mut short = quiet(3200.0, 18.0);
    short.scaling.push(ScalingCheck {
        what: "fp64".into(),
        threads: 2,
        cores: 2,
        ratio: 1.0,
    });
    let all = tags(&[("threads", "all")]);
    let one = tags(&[("threads", "1")]);
    let why = spoils(&quiet(3200.0, 18.0), &short, &all).unwrap();
    assert!(
        why.starts_with("current regime: fp64 on 2 threads"),
        "{why}"
    );
    // Two threads at one thread's rate: the figure can be half of what
    // two cores give.
    let halved = RegimeProbes::shift(&quiet(3200.0, 18.0), &short, &all).unwrap();
    assert!((halved.shift - 1.0).abs() < 1e-12, "{halved:?}");
    assert_eq!(spoils(&quiet(3200.0, 18.0), &short, &one), None);
    // Nothing to compare: no regime claimed.
    assert_eq!(
        RegimeProbes::speed_apart(&RegimeProbes::default(), &quiet(3000.0, 90.0), AB),
        None
    );
    // The consensus of three trials: the odd one is held to the other two.
    let trials = [
        quiet(3200.0, 18.0),
        quiet(3210.0, 19.0),
        quiet(2900.0, 120.0),
    ];
    let refs: Vec<&RegimeProbes> = trials.iter().collect();
    let c = RegimeProbes::consensus(&refs);
    assert_eq!(c.clock_mhz, vec![3200.0]);
    assert!(RegimeProbes::speed_apart(&c, &trials[0], AB).is_none());
    assert!(RegimeProbes::speed_apart(&c, &trials[2], AB).is_some());
    // The clock agrees, the FP throughput does not: another thread on
    // the core.
    let fp = |g: f64| RegimeProbes {
        clock_mhz: vec![3200.0],
        fp_gflops: vec![g, g],
        ..Default::default()
    };
    assert_eq!(RegimeProbes::speed_apart(&fp(25.0), &fp(24.5), AB), None);
    let why = spoils(&fp(25.0), &fp(21.0), &far).unwrap();
    assert!(
        why.contains("one core's FP throughput differs: 25.0 GFLOP/s in the base run, 21.0"),
        "{why}"
    );
    let mut swung = fp(25.0);
    swung.fp_gflops.push(21.0);
    assert!(
        swung.reasons()[0].contains("FP throughput moved 19%"),
        "{:?}",
        swung.reasons()
    );
    // The memory bus: the bandwidth canary reaches every figure of the
    // result it was read for; 20 against 15 GB/s is a regime (33%), 20
    // against 19 explains 5.3% without naming one.
    let bus = |gbs: f64| RegimeProbes {
        bandwidth_canary_gbs: vec![gbs, gbs],
        ..Default::default()
    };
    let apart = RegimeProbes::shift(&bus(20.0), &bus(15.0), &far).unwrap();
    assert!(
        apart.reasons[0].contains("read 20.0 GB/s in the base run and 15.0 GB/s"),
        "{apart:?}"
    );
    assert!((apart.shift - 1.0 / 3.0).abs() < 1e-12, "{apart:?}");
    let near_bus = RegimeProbes::shift(&bus(20.0), &bus(19.0), &far).unwrap();
    assert!(near_bus.reasons.is_empty(), "{near_bus:?}");
    assert!((near_bus.shift - 1.0 / 19.0).abs() < 1e-12);
    let mut swung_bus = bus(20.0);
    swung_bus.bandwidth_canary_gbs.push(16.0);
    assert!(
        swung_bus.reasons()[0].contains("memory-bandwidth canary moved from 16.0 to 20.0"),
        "{:?}",
        swung_bus.reasons()
    );
    // A swing within one side reaches every metric of two single runs.
    let within = RegimeProbes::shift(&fp(25.0), &swung, &far).unwrap();
    assert!(
        within.reasons[0].starts_with("current regime: one core's FP throughput moved 19%"),
        "{within:?}"
    );
    assert!((within.shift - (25.0 / 21.0 - 1.0)).abs() < 1e-12);
}

#[test]
fn trials_merge_into_one_measurement() {
    // Each trial's readings moved a little while it measured; its median
    // stands for it.
    let trial = |mhz: f64, ns: f64, gbs: f64, ratio: f64| RegimeProbes {
        clock_mhz: vec![mhz * 0.97, mhz, mhz * 1.01],
        llc_canary: vec![CanaryReadings {
            size_kib: 4096,
            ns: vec![ns, ns * 1.4],
        }],
        bandwidth_canary_gbs: vec![gbs, gbs * 0.9, gbs * 1.1],
        scaling: vec![ScalingCheck {
            what: "fp64".into(),
            threads: 2,
            cores: 2,
            ratio,
        }],
        ..Default::default()
    };
    let trials = [
        trial(3200.0, 18.0, 40.0, 1.9),
        trial(2900.0, 19.0, 60.0, 1.2),
        trial(3210.0, 18.5, 41.0, 1.95),
    ];
    let refs: Vec<&RegimeProbes> = trials.iter().collect();
    let m = RegimeProbes::merged(&refs);
    assert_eq!(m.clock_mhz, vec![3200.0, 2900.0, 3210.0]);
    assert_eq!(m.llc_canary.len(), 1);
    // (The median of two readings is their mean.)
    let ns = [18.0, 19.0, 18.5].map(|n: f64| (n + n * 1.4) / 2.0);
    assert_eq!(m.llc_canary[0].ns, ns);
    assert_eq!(m.bandwidth_canary_gbs, vec![40.0, 60.0, 41.0]);
    // The check of the median ratio stands for the side.
    assert_eq!(m.scaling.len(), 1);
    assert_eq!(m.scaling[0].ratio, 1.9);
    // One trial's clock 9.4% lower is a swing within the merged side, and
    // so is the bus reading 60 against 40 GB/s: both kinds compound.
    let steady = RegimeProbes::merged(&[&trials[0], &trials[2]]);
    // (One thread's figure: the scaling checks do not reach it.)
    let s = RegimeProbes::shift(&steady, &m, &tags(&[("threads", "1")])).unwrap();
    let speed = 3210.0 / 2900.0;
    let bus = 60.0 / 40.0;
    assert!((s.shift - (speed * bus - 1.0)).abs() < 1e-12, "{s:?}");
    assert!(
        s.reasons
            .iter()
            .any(|r| r.starts_with("current regime: the effective clock moved")),
        "{s:?}"
    );
}
