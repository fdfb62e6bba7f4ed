//! The NVIDIA path (cargo feature `cuda`): cuBLAS GEMM for `gpu_flops`,
//! cuSOLVER LU for `linpack_fp64_gpu`, through cudarc with the libraries
//! loaded at run time.
//!
//! Nothing here runs before [`Cuda::open`] has checked that the driver
//! (libcuda) and the libraries it needs can be loaded: cudarc panics on a
//! missing library, so a machine without them gets a reason, not a crash.

pub mod gemm;
pub mod linpack;
pub mod transfer;

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use warpt_harness::BenchmarkError;
use warpt_model::ParamValue;

/// An opened CUDA device and its stream.
pub struct Cuda {
    /// The context.
    pub ctx: Arc<CudaContext>,
    /// The stream every call is queued on.
    pub stream: Arc<CudaStream>,
    /// The device's name.
    pub name: String,
    /// Free device memory when opened, bytes.
    pub free_at_open: usize,
    /// The lowest free device memory seen since, bytes.
    pub free_low: std::cell::Cell<usize>,
}

/// Which CUDA libraries a benchmark needs.
#[derive(Debug, Clone, Copy)]
pub enum Needs {
    /// cuBLAS.
    Blas,
    /// cuBLAS and cuSOLVER.
    Solver,
}

fn skipped(why: impl Into<String>) -> BenchmarkError {
    BenchmarkError::Skipped(why.into())
}

impl Cuda {
    /// Opens CUDA device `ordinal` after checking the driver and `needs`.
    pub fn open(ordinal: usize, needs: Needs) -> Result<Cuda, BenchmarkError> {
        use warpt_cuda::{Library, Unavailable};
        let libraries: &[Library] = match needs {
            Needs::Blas => &[Library::Cublas],
            Needs::Solver => &[Library::Cublas, Library::Cusolver],
        };
        warpt_cuda::check(ordinal, libraries).map_err(|e| match e {
            Unavailable::Missing(why) => skipped(why),
            other => BenchmarkError::InvalidParam {
                key: "device_index".into(),
                reason: other.to_string(),
            },
        })?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| BenchmarkError::Failed(format!("opening CUDA device {ordinal}: {e}")))?;
        let name = ctx
            .name()
            .unwrap_or_else(|_| format!("CUDA device {ordinal}"));
        let (free, _) = ctx
            .mem_get_info()
            .map_err(|e| BenchmarkError::Failed(format!("reading device memory: {e}")))?;
        Ok(Cuda {
            stream: ctx.default_stream(),
            ctx,
            name,
            free_at_open: free,
            free_low: std::cell::Cell::new(free),
        })
    }

    /// Notes the device's free memory now (for the peak this process used).
    pub fn sample_memory(&self) {
        if let Ok((free, _)) = self.ctx.mem_get_info() {
            self.free_low.set(self.free_low.get().min(free));
        }
    }

    /// Waits for the stream.
    pub fn sync(&self) -> Result<(), BenchmarkError> {
        self.stream
            .synchronize()
            .map_err(|e| BenchmarkError::Failed(format!("CUDA: {e}")))
    }

    /// The details a CUDA result carries.
    pub fn details(&self) -> Vec<(String, ParamValue)> {
        vec![
            ("cuda_device".into(), ParamValue::from(self.name.as_str())),
            (
                "cuda_ordinal".into(),
                ParamValue::Int(self.ctx.ordinal() as i64),
            ),
            (
                "gpu_memory_peak_bytes".into(),
                ParamValue::Int(self.free_at_open.saturating_sub(self.free_low.get()) as i64),
            ),
        ]
    }
}

/// A CUDA error as a failed benchmark.
pub(crate) fn failed(what: &str, e: impl std::fmt::Debug) -> BenchmarkError {
    BenchmarkError::Failed(format!("{what}: {e:?}"))
}
