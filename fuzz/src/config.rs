//! Configuration files: warpt.toml (settings, `[params]`, declared
//! benchmarks), warpt-bench.toml, and a harness file's bench.yaml /
//! bench.toml.

use warpt_exec::declared::{self, Origin, UserSuite};
use warpt_harness::Registry;
use warpt_run::PlanBase;
use warpt_run::config::{Config, Flags};
use warpt_userbench::config::BenchConfig;

use crate::scratch;

/// The CPU suites of the `warpt` binary (its `registry.rs`), with
/// `declared` benchmarks in the user suite. The GPU suites are left out:
/// wgpu would double this crate's build, and their parameters are plain
/// numbers and choices the harness checks for every suite alike.
pub fn registry(declared: Vec<declared::Declared>) -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(warpt_micro::MICRO));
    r.extend(Box::new(warpt_linpack::gemm::GEMM_BENCHMARKS));
    r.register(Box::new(warpt_linpack::LINPACK));
    r.register(Box::new(warpt_pepbench::PEPBENCH));
    r.register(Box::new(warpt_userbench::suite::HarnessSuite));
    r.register(Box::new(warpt_mlperf::MLPERF));
    r.register(Box::new(warpt_biobench::BIOBENCH));
    r.register(Box::new(UserSuite::new(declared)));
    r
}

/// A warpt.toml, as `benchmark run --config` reads it: the settings
/// layered, the benchmarks it declares checked, every `[params]` name held
/// to a declared parameter. The same file as a warpt-bench.toml too.
pub fn warpt_toml(data: &[u8]) {
    let path = scratch::file("warpt.toml", data);
    let no_env = |_: &str| None;
    if let Ok(config) = Config::load(Some(&path), &no_env, &Flags::default())
        && let Ok(declared) = declared::load(&[(path.clone(), Origin::Config)])
    {
        let _ = PlanBase::new(config, registry(declared));
    }
    let bench = scratch::file("warpt-bench.toml", data);
    let _ = declared::load(&[(bench, Origin::BenchFile)]);
}

/// A harness benchmark's bench.yaml (selector byte even) or bench.toml
/// (odd), and the settings drawn from it (not the combinations: their
/// skip conditions are shell commands).
pub fn bench_config(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let name = if which % 2 == 0 {
        "bench/bench.yaml"
    } else {
        "bench/bench.toml"
    };
    let path = scratch::file(name, rest);
    if let Ok(c) = BenchConfig::load(&path) {
        let _ = c.foreign();
        let _ = c.run_settings();
        let _ = c.tolerances();
    }
}
