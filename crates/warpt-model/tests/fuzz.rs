//! Exports and monitor timelines, the JSON users hand to `results import`,
//! `benchmark compare`, `--replay` and `report --telemetry`: random
//! truncations, byte flips and type swaps of real files either load or
//! fail with an error, never a panic.
//!
//! Fixed seed; 1000 cases per input kind (`CASES`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::Value;
use warpt_model::{TelemetrySample, load_suite_run};

const CASES: u32 = 1000;

fn config() -> Config {
    Config {
        cases: CASES,
        rng_seed: RngSeed::Fixed(0x7761_7270),
        failure_persistence: None,
        ..Config::default()
    }
}

const EXPORT: &str = include_str!("data/example_export.json");

/// A telemetry timeline as `--monitor-output` writes it.
fn timeline() -> String {
    let run = load_suite_run(EXPORT).unwrap();
    let sample = TelemetrySample {
        timestamp: run.start_time,
        cpu_utilization_percent: 55.0,
        ..Default::default()
    };
    serde_json::to_string(&vec![sample.clone(), sample]).unwrap()
}

/// One mutation of a document.
#[derive(Debug, Clone)]
enum Mutation {
    /// Keep the first `at` bytes (modulo the length).
    Truncate(usize),
    /// XOR the byte at `at` with `mask` (non-zero).
    Flip(usize, u8),
    /// Replace the `at`-th JSON value (depth-first) with one of another type.
    Swap(usize, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1u8..=255).prop_map(|(a, m)| Mutation::Flip(a, m)),
        (any::<usize>(), any::<u8>()).prop_map(|(a, k)| Mutation::Swap(a, k)),
    ]
}

/// Visits every value depth-first, counting down `left`; swaps the one at 0.
fn swap(v: &mut Value, left: &mut usize, kind: u8) -> bool {
    if *left == 0 {
        let number = Value::from(-1.5e308);
        let string = Value::from("not what you think");
        *v = match kind % 5 {
            0 if v.is_number() => string,
            0 => number,
            1 if v.is_string() => number,
            1 => string,
            2 => Value::Null,
            3 => Value::Array(vec![Value::Bool(true)]),
            _ => Value::Object(Default::default()),
        };
        return true;
    }
    *left -= 1;
    match v {
        Value::Array(items) => items.iter_mut().any(|x| swap(x, left, kind)),
        Value::Object(map) => map.values_mut().any(|x| swap(x, left, kind)),
        _ => false,
    }
}

fn apply(doc: &str, muts: &[Mutation]) -> Vec<u8> {
    let mut bytes = doc.as_bytes().to_vec();
    for m in muts {
        match *m {
            Mutation::Truncate(at) => bytes.truncate(at % (bytes.len() + 1)),
            Mutation::Flip(at, mask) if !bytes.is_empty() => {
                let i = at % bytes.len();
                bytes[i] ^= mask;
            }
            Mutation::Swap(at, kind) => {
                if let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) {
                    let mut left = at % 400;
                    swap(&mut v, &mut left, kind);
                    bytes = serde_json::to_vec(&v).unwrap();
                }
            }
            Mutation::Flip(..) => {}
        }
    }
    bytes
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_damaged_export_loads_or_is_refused(muts in prop::collection::vec(mutation(), 1..4)) {
        let bytes = apply(EXPORT, &muts);
        // Bytes that are not UTF-8 are refused by the reader before parsing.
        if let Ok(text) = std::str::from_utf8(&bytes) {
            match load_suite_run(text) {
                Ok(run) => {
                    // What loads can be written back out.
                    serde_json::to_string(&run).unwrap();
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }

    #[test]
    fn a_damaged_timeline_loads_or_is_refused(muts in prop::collection::vec(mutation(), 1..4)) {
        let bytes = apply(&timeline(), &muts);
        if let Err(e) = serde_json::from_slice::<Vec<TelemetrySample>>(&bytes) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}
