//! The GPU benchmarks of the micro suite, on wgpu compute (Vulkan, Metal,
//! DX12), and `warpt stress gpu`.
//!
//! - [`device`]: the adapters wgpu finds, which one a run takes (never a
//!   software device for a GPU unless asked), the opened device;
//! - [`kernels`]: the WGSL kernels and the closed forms that check them;
//! - [`flops`]: `gpu_flops`, FMA throughput in f32 and f16.
//!
//! The crate joins the `micro` suite through [`GpuBenchmarks`], registered
//! with `Registry::extend`, so `warpt-micro` does not build wgpu.

pub mod device;
pub mod flops;
pub mod kernels;

use std::collections::BTreeMap;

use warpt_harness::{Benchmark, BenchmarkError, RunContext, Suite};
use warpt_model::{BenchmarkSpec, ParamValue};

pub use device::{AdapterSummary, Gpu, list as adapters};

/// The suite these benchmarks belong to.
pub const SUITE: &str = "micro";

/// The parameters every GPU benchmark takes.
pub(crate) fn common_params() -> BTreeMap<String, ParamValue> {
    [
        ("device_index".to_string(), ParamValue::Int(-1)),
        ("allow_software".to_string(), ParamValue::Bool(false)),
        ("inject_error".to_string(), ParamValue::Bool(false)),
    ]
    .into()
}

/// Their help.
pub(crate) fn common_help() -> BTreeMap<String, String> {
    [
        (
            "device_index".to_string(),
            "the adapter, by its index in `warpt list`; -1 = the first hardware GPU (discrete first)"
                .to_string(),
        ),
        (
            "allow_software".to_string(),
            "run on a software device (lavapipe, llvmpipe, WARP) when it is the one chosen; it is never taken for a GPU otherwise"
                .to_string(),
        ),
        (
            "inject_error".to_string(),
            "corrupt one result before validation (tests that validation catches it)".to_string(),
        ),
    ]
    .into()
}

/// `device_index` and `allow_software` of a run.
pub(crate) fn gpu_params(ctx: &RunContext) -> Result<(i64, bool), BenchmarkError> {
    Ok((
        ctx.int_param("device_index", -1)?,
        ctx.bool_param("allow_software")?,
    ))
}

/// The GPU part of the micro suite.
pub struct GpuBenchmarks;

impl Suite for GpuBenchmarks {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "GPU microbenchmarks on wgpu compute"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        vec![flops::spec()]
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        match name {
            flops::NAME => Some(Box::new(flops::GpuFlops::new())),
            _ => None,
        }
    }
}
