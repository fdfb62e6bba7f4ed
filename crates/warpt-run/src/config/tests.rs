//! The configuration layers.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use super::*;

fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }
}

fn write(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    f
}

#[test]
fn each_layer_overrides_the_one_below() {
    let f = write(
        "duration = 2.0\nseed = 7\nprecision = 3.0\n[params]\narray_mb = 64\n[timeouts]\nsetup = 60\n",
    );
    let env = env_of(&[("WARPT_SEED", "8"), ("WARPT_PARAMS", "max_mb=2")]);
    let flags = Flags {
        precision: Some(0.5),
        ..Flags::default()
    };
    let c = Config::load(Some(f.path()), &env, &flags).unwrap();
    assert_eq!(c.duration.value, Some(2.0));
    assert!(matches!(c.duration.source, Source::File(_)));
    assert_eq!(
        (c.seed.value, &c.seed.source),
        (8, &Source::Env("WARPT_SEED".into()))
    );
    assert_eq!(
        (c.precision.value, &c.precision.source),
        (0.5, &Source::Flag("--precision".into()))
    );
    assert_eq!(
        (c.burnin_seconds.value, &c.burnin_seconds.source),
        (1.0, &Source::Default)
    );
    assert_eq!(c.params["array_mb"].value, "64");
    assert_eq!(
        c.params["max_mb"].source,
        Source::Env("WARPT_PARAMS".into())
    );
    assert_eq!(c.timeouts.value.setup, Some(60.0));
}

#[test]
fn file_errors_name_file_line_and_key() {
    let f = write("seed = 1\n\nbogus = 3\n");
    let e = Config::load(Some(f.path()), &env_of(&[]), &Flags::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&f.path().display().to_string()) && e.contains(":3:") && e.contains("bogus"),
        "{e}"
    );
    let f = write("seed = \"many\"\n");
    let e = Config::load(Some(f.path()), &env_of(&[]), &Flags::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains(":1:"), "{e}");
    let f = write("[timeouts]\nsetup = -1\n");
    let e = Config::load(Some(f.path()), &env_of(&[]), &Flags::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains(":2:") && e.contains("timeouts.setup"), "{e}");
    let e = Config::load(
        None,
        &env_of(&[("WARPT_DURATION", "soon")]),
        &Flags::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("WARPT_DURATION"), "{e}");
}

/// The example warpt.toml of docs/running.md.
const EXAMPLE: &str = "duration = 2.0\nburnin_seconds = 0.5\nseed = 7\nprecision = 1.0\n\
    timeout_multiplier = 1.5\nin_process = false\n[timeouts]\nsetup = 60\n\
    [benchmark_timeouts.\"micro/mem_latency\"]\nmeasure = 120\n[params]\narray_mb = 256\n";

/// Truncates, flips a byte, or swaps the type of one `key = value`.
fn damage(ops: &[(u8, usize, u8)]) -> Vec<u8> {
    const SWAPS: [&str; 6] = ["\"text\"", "-1", "true", "[1, 2]", "{ a = 1 }", "1e999"];
    let mut bytes = EXAMPLE.as_bytes().to_vec();
    for &(op, at, k) in ops {
        if bytes.is_empty() {
            break;
        }
        match op % 3 {
            0 => bytes.truncate(at % bytes.len()),
            1 => {
                let i = at % bytes.len();
                bytes[i] ^= k | 1;
            }
            _ => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let mut lines: Vec<String> = text.lines().map(String::from).collect();
                let n = lines.len();
                if let Some((key, _)) = lines[at % n].clone().split_once(" = ") {
                    lines[at % n] = format!("{key} = {}", SWAPS[k as usize % SWAPS.len()]);
                }
                bytes = lines.join("\n").into_bytes();
            }
        }
    }
    bytes
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: 1000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x746f6d6c),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })]

    /// A damaged warpt.toml loads or is refused with a message (exit 2
    /// at the CLI): never a panic. Fixed seed, 1000 cases.
    #[test]
    fn a_damaged_config_file_loads_or_is_refused(
        ops in proptest::collection::vec(
            (proptest::prelude::any::<u8>(), proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()),
            1..4,
        )
    ) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &damage(&ops)).unwrap();
        match Config::load(Some(f.path()), &|_| None, &Flags::default()) {
            Ok(_) => {}
            Err(e) => {
                proptest::prop_assert!(e.downcast_ref::<UsageError>().is_some(), "{e:#}");
            }
        }
    }
}

#[test]
fn the_suite_limit_comes_from_every_layer_and_zero_means_none() {
    let c = Config::load(None, &env_of(&[]), &Flags::default()).unwrap();
    assert_eq!(
        (c.suite_timeout.value, &c.suite_timeout.source),
        (14400.0, &Source::Default)
    );
    let f = write("suite_timeout = 600\n");
    let c = Config::load(Some(f.path()), &env_of(&[]), &Flags::default()).unwrap();
    assert_eq!(c.suite_timeout.value, 600.0);
    let env = env_of(&[("WARPT_SUITE_TIMEOUT", "0")]);
    let c = Config::load(Some(f.path()), &env, &Flags::default()).unwrap();
    assert_eq!(c.suite_timeout.value, 0.0);
    assert!(crate::run::suite_limit(c.suite_timeout.value).is_none());
    let flags = Flags {
        suite_timeout: Some(30.0),
        ..Flags::default()
    };
    let c = Config::load(Some(f.path()), &env, &flags).unwrap();
    assert_eq!(
        (c.suite_timeout.value, &c.suite_timeout.source),
        (30.0, &Source::Flag("--suite-timeout".into()))
    );
    let bad = write("suite_timeout = -1\n");
    let e = Config::load(Some(bad.path()), &env_of(&[]), &Flags::default()).unwrap_err();
    assert!(e.to_string().contains("suite_timeout"), "{e}");
}
