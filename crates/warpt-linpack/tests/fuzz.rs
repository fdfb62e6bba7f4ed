//! HPL's output (hpcc's `hpccoutf.txt`, xhpl's stdout) as `linpack_external`
//! reads it: random truncations, byte flips and line shuffles of a real
//! file either parse or fail with an error naming the problem, never a
//! panic. Fixed seed, 2000 cases.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use warpt_linpack::hpl_io::parse;

const RUN: &str = include_str!("data/hpccoutf.txt");

fn config() -> Config {
    Config {
        cases: 2000,
        rng_seed: RngSeed::Fixed(0x68706c),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Truncate at, flip a byte at, or swap two lines at the given positions.
fn damage(ops: &[(u8, usize, usize, u8)]) -> String {
    let mut bytes = RUN.as_bytes().to_vec();
    for &(op, a, b, mask) in ops {
        if bytes.is_empty() {
            break;
        }
        match op % 3 {
            0 => bytes.truncate(a % bytes.len()),
            1 => {
                let i = a % bytes.len();
                bytes[i] ^= mask | 1;
            }
            _ => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let mut lines: Vec<&str> = text.lines().collect();
                let n = lines.len();
                lines.swap(a % n, b % n);
                bytes = lines.join("\n").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn damaged_hpl_output_parses_or_is_refused(
        ops in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>(), any::<u8>()), 1..4),
        expected in 1usize..6,
    ) {
        let text = damage(&ops);
        match parse(&text, expected) {
            Ok(results) => {
                prop_assert_eq!(results.len(), expected);
                prop_assert!(results.iter().all(|r| r.gflops.is_finite()));
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
