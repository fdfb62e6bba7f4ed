//! The suites this build offers: adding a suite is one line here.

use std::path::{Path, PathBuf};

use anyhow::Result;
use warpt_exec::declared::{self, BENCH_FILE, Origin, UserSuite};
use warpt_harness::Registry;

use crate::UsageError;

/// Every suite compiled into this binary; the fault-injection suite only
/// when `WARPT_SELFTEST=1` (workers inherit the variable, so they agree).
/// Its `user` suite declares nothing but creates any declared benchmark by
/// name (the benchmark reads its declaration from its `file` parameter):
/// what a worker and the runner need.
pub fn registry() -> Registry {
    with_user(UserSuite::default())
}

/// [`registry`] with the benchmarks declared in `config_file` (warpt's
/// configuration file, if one was found) and in `./warpt-bench.toml`, for
/// the commands that plan, list or describe them. A declaration that does
/// not check out is a usage error naming the file, benchmark and key.
pub fn registry_declaring(config_file: Option<&Path>) -> Result<Registry> {
    let mut files: Vec<(PathBuf, Origin)> = Vec::new();
    if let Some(c) = config_file {
        files.push((c.to_path_buf(), Origin::Config));
    }
    let local = PathBuf::from(BENCH_FILE);
    if local.is_file() {
        files.push((local, Origin::BenchFile));
    }
    let declared = declared::load(&files).map_err(|e| UsageError(e.to_string()))?;
    Ok(with_user(UserSuite::new(declared)))
}

/// [`registry_declaring`] with the configuration file found without `--config`.
pub fn registry_found() -> Result<Registry> {
    registry_declaring(warpt_run::config::default_file()?.as_deref())
}

/// The suites of this binary, as the run layer asks for them.
pub struct Builtin;

impl warpt_run::run::Suites for Builtin {
    fn declaring(&self, config_file: Option<&Path>) -> Result<Registry> {
        registry_declaring(config_file)
    }

    fn plain(&self) -> Registry {
        registry()
    }
}

fn with_user(user: UserSuite) -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(warpt_micro::MicroSuite));
    r.extend(Box::new(warpt_gpu::GpuBenchmarks));
    r.extend(Box::new(warpt_linpack::gemm::GemmBenchmarks));
    r.register(Box::new(warpt_linpack::LinpackSuite));
    r.extend(Box::new(warpt_gpu::GpuLinpackBenchmarks));
    r.register(Box::new(warpt_pepbench::PepbenchSuite));
    r.register(Box::new(warpt_userbench::suite::HarnessSuite));
    r.register(Box::new(warpt_mlperf::MlperfSuite));
    r.register(Box::new(warpt_biobench::BiobenchSuite));
    r.register(Box::new(user));
    if std::env::var("WARPT_SELFTEST").is_ok_and(|v| v == "1") {
        r.register(Box::new(warpt_selftest::SelftestSuite));
    }
    r
}
