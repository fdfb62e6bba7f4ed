//! The GPU benchmarks of the micro suite, on wgpu compute (Vulkan, Metal,
//! DX12), and `warpt stress gpu`.
//!
//! - [`device`]: the adapters wgpu finds, which one a run takes (never a
//!   software device for a GPU unless asked), the opened device;
//! - [`kernels`]: the WGSL kernels and the closed forms that check them;
//! - [`flops`]: `gpu_flops`, FMA throughput in f32 and f16;
//! - [`bandwidth`]: `gpu_bandwidth`, STREAM copy and triad in device memory;
//! - [`transfer`]: `gpu_transfer`, host to device and back;
//! - [`latency`]: `gpu_latency`, the round trip of the smallest dispatch;
//! - [`stress`]: `warpt stress gpu`, every result checked;
//! - [`linpack`]: `linpack/linpack_fp64_gpu`, HPL through cuSOLVER;
//! - `cuda` (feature `cuda`): cuBLAS GEMM and cuSOLVER LU through cudarc,
//!   libraries loaded at run time.
//!
//! The crate joins the `micro` suite through [`GPU_BENCHMARKS`], registered
//! with `Registry::extend`, so `warpt-micro` does not build wgpu.

pub mod bandwidth;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub mod flops;
pub mod kernels;
pub mod latency;
pub mod linpack;
pub mod stress;
pub mod transfer;

use warpt_harness::{BenchmarkError, Listed, ListedSuite, RunContext};
use warpt_model::Param;

pub use device::{AdapterSummary, Gpu, list as adapters};
pub use linpack::GPU_LINPACK;

/// The suite these benchmarks belong to.
pub const SUITE: &str = "micro";

/// The parameters every wgpu benchmark takes: which adapter, whether a
/// software one will do, and the validation self-test.
pub(crate) fn common_params() -> Vec<Param> {
    vec![
        Param::int("device_index", -1, -1..).help(
            "the adapter, by its index in `warpt list`; -1 = the first hardware GPU (discrete first)",
        ),
        Param::flag("allow_software", false).help(
            "run on a software device (lavapipe, llvmpipe, WARP) when it is the one chosen; it is \
             never taken for a GPU otherwise",
        ),
        Param::flag("inject_error", false)
            .help("corrupt one result before validation (tests that validation catches it)"),
    ]
}

/// `device_index` and `allow_software` of a run.
pub(crate) fn gpu_params(ctx: &RunContext) -> Result<(i64, bool), BenchmarkError> {
    Ok((
        ctx.int_param("device_index", -1)?,
        ctx.bool_param("allow_software")?,
    ))
}

/// The bytes `size_mb` asks for (0: `default_mb` MiB, or less where the
/// adapter's largest storage binding or buffer is smaller), a multiple of 16.
pub(crate) fn sized(ctx: &RunContext, gpu: &Gpu, default_mb: u64) -> Result<u64, BenchmarkError> {
    let limit = gpu
        .limits
        .max_storage_buffer_binding_size
        .min(gpu.limits.max_buffer_size);
    let asked = ctx.int_param("size_mb", 0)? as u64;
    let bytes = if asked == 0 {
        (default_mb << 20).min(limit)
    } else if asked << 20 > limit {
        return Err(BenchmarkError::InvalidParam {
            key: "size_mb".into(),
            reason: format!(
                "{asked} MiB is more than {} can bind ({} MiB)",
                gpu.adapter.name,
                limit >> 20
            ),
        });
    } else {
        asked << 20
    };
    Ok(bytes / 16 * 16)
}

/// The suite's benchmarks, in the order `list` shows them.
const BENCHMARKS: &[Listed] = &[
    Listed::new(flops::spec, || Box::new(flops::GpuFlops::default())),
    Listed::new(bandwidth::spec, || {
        Box::new(bandwidth::GpuBandwidth::default())
    }),
    Listed::new(
        transfer::spec,
        || Box::new(transfer::GpuTransfer::default()),
    ),
    Listed::new(latency::spec, || Box::new(latency::GpuLatency::default())),
];

/// The GPU part of the micro suite.
pub const GPU_BENCHMARKS: ListedSuite = ListedSuite {
    name: SUITE,
    description: "GPU microbenchmarks on wgpu compute",
    benchmarks: BENCHMARKS,
};
