//! The device a model benchmark runs on (`device` = cpu, cuda, metal):
//! opening it or saying why it cannot be had here, naming it, waiting for
//! its queued work before a timestamp, and the device memory a benchmark
//! held at its peak.

use candle_core::Device;
use warpt_harness::BenchmarkError;
use warpt_model::ParamValue;

/// The devices candle was built for here: the CPU always, CUDA in a build
/// with the `cuda` feature (candle's CUDA backend, loaded at run time).
pub const BUILT: &[&str] = if warpt_cuda::BUILT {
    &["cpu", "cuda"]
} else {
    &["cpu"]
};

/// The help of every model benchmark's `device` parameter.
pub const HELP: &str = "cpu, or cuda (GPU 0; needs a build with the `cuda` feature and an NVIDIA driver, \
     else the benchmark is skipped saying which is missing)";

/// The device `name` names (CUDA: device 0), or why it cannot be had.
pub fn open(name: &str) -> Result<Device, BenchmarkError> {
    match name {
        "cpu" => Ok(Device::Cpu),
        "cuda" if warpt_cuda::BUILT => open_cuda(0),
        other => Err(BenchmarkError::Skipped(format!(
            "device '{other}': this warpt was built without candle's {other} support; device=cpu runs here"
        ))),
    }
}

/// CUDA device `ordinal` on candle's backend, once the driver and the
/// libraries candle opens (cuBLAS, cuBLASLt, cuRAND) are known to load.
fn open_cuda(ordinal: usize) -> Result<Device, BenchmarkError> {
    use warpt_cuda::{Library, Unavailable, check};
    check(
        ordinal,
        &[Library::Cublas, Library::CublasLt, Library::Curand],
    )
    .map_err(|e| match e {
        Unavailable::Missing(why) => BenchmarkError::Skipped(format!("device 'cuda': {why}")),
        other => BenchmarkError::Failed(other.to_string()),
    })?;
    Device::new_cuda(ordinal)
        .map_err(|e| BenchmarkError::Failed(format!("opening CUDA device {ordinal}: {e}")))
}

/// The device as a result's `details.device` names it: `cpu`, or the
/// GPU's name and ordinal (`NVIDIA H200 (cuda:0)`).
pub fn describe(dev: &Device) -> String {
    match dev {
        #[cfg(feature = "cuda")]
        Device::Cuda(cuda) => {
            let ctx = cuda.cuda_stream().context().clone();
            let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
            format!("{name} (cuda:{})", ctx.ordinal())
        }
        Device::Cpu => "cpu".into(),
        other => format!("{:?}", other.location()),
    }
}

/// Waits until the work queued on `dev` is done (nothing to wait for on
/// the CPU): called before every timestamp that closes a timed region.
pub fn sync(dev: &Device) -> candle_core::Result<()> {
    match dev {
        Device::Cpu => Ok(()),
        other => other.synchronize(),
    }
}

/// The memory a model on `dev` may take: the host's available memory on
/// the CPU, the device's free memory on a GPU (the host's where it cannot
/// be read).
pub fn memory_budget(dev: &Device) -> crate::sampling::Budget {
    match dev {
        #[cfg(feature = "cuda")]
        Device::Cuda(cuda) => match cuda.cuda_stream().context().mem_get_info() {
            Ok((free, _)) => crate::sampling::Budget {
                available: free as u64,
            },
            Err(_) => crate::sampling::Budget::now(),
        },
        _ => crate::sampling::Budget::now(),
    }
}

/// Makes `dev` ready to be timed once a model is on it: waits for the
/// uploads queued on this thread's stream (CUDA work is queued per
/// thread: another thread's kernels are not ordered after them), then
/// runs `first_pass` once, untimed, so the driver loads and compiles the
/// kernels it needs (candle's PTX, built for sm_80, is compiled for the
/// GPU at first use: seconds, cached by the driver afterwards). Nothing to
/// do on the CPU.
pub fn settle<T>(
    dev: &Device,
    first_pass: impl FnOnce() -> Result<T, String>,
) -> Result<(), BenchmarkError> {
    if dev.is_cpu() {
        return Ok(());
    }
    let failed = |what: &str, e: String| BenchmarkError::Failed(format!("{what}: {e}"));
    sync(dev).map_err(|e| failed("waiting for the model's upload", e.to_string()))?;
    first_pass().map_err(|e| failed("a first pass to load the GPU's kernels", e))?;
    sync(dev).map_err(|e| failed("after the first pass", e.to_string()))
}

/// The most device memory a benchmark held: the device's free memory when
/// it was opened less the lowest seen at each [`MemoryPeak::sample`]
/// (`details.peak_gpu_memory_bytes`). Nothing on the CPU.
#[derive(Default)]
pub struct MemoryPeak {
    #[cfg(feature = "cuda")]
    watch: Option<warpt_cuda::FreeMemoryLow>,
}

impl MemoryPeak {
    /// Starts watching `dev` (call it before the model is loaded).
    pub fn new(dev: &Device) -> Self {
        match dev {
            #[cfg(feature = "cuda")]
            Device::Cuda(cuda) => MemoryPeak {
                watch: warpt_cuda::FreeMemoryLow::new(cuda.cuda_stream().context().clone()),
            },
            _ => MemoryPeak::default(),
        }
    }

    /// Notes the device's free memory now.
    pub fn sample(&self) {
        #[cfg(feature = "cuda")]
        if let Some(w) = &self.watch {
            w.sample();
        }
    }

    /// Bytes at the peak, where the device reports its memory.
    pub fn peak_bytes(&self) -> Option<u64> {
        #[cfg(feature = "cuda")]
        if let Some(w) = &self.watch {
            return Some(w.peak_bytes());
        }
        None
    }
}

/// The details every model result carries about its device: `device`,
/// and on a GPU `peak_gpu_memory_bytes`, `timing` (how samples wait for
/// the device) and `cuda_libraries` (the files the loader resolved).
pub fn details(dev: &Device, peak: &MemoryPeak) -> Vec<(String, ParamValue)> {
    let mut out = vec![("device".to_string(), ParamValue::from(describe(dev)))];
    if let Some(bytes) = peak.peak_bytes() {
        out.push((
            "peak_gpu_memory_bytes".into(),
            ParamValue::Int(i64::try_from(bytes).unwrap_or(i64::MAX)),
        ));
    }
    if !dev.is_cpu() {
        out.push((
            "timing".into(),
            ParamValue::from(
                "host clock; the device synchronised before every timestamp (TTFT after the first token reached the host)",
            ),
        ));
        let libs = warpt_cuda::loaded_libraries();
        if !libs.is_empty() {
            out.push(("cuda_libraries".into(), ParamValue::from(libs.join(", "))));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_is_always_there_and_cuda_says_why_not() {
        assert!(matches!(open("cpu"), Ok(Device::Cpu)));
        assert_eq!(describe(&Device::Cpu), "cpu");
        let peak = MemoryPeak::new(&Device::Cpu);
        peak.sample();
        assert_eq!(peak.peak_bytes(), None);
        assert_eq!(
            details(&Device::Cpu, &peak),
            vec![("device".to_string(), ParamValue::from("cpu"))]
        );
        match open("metal") {
            Err(BenchmarkError::Skipped(why)) => {
                assert!(why.contains("without candle's metal support"), "{why}")
            }
            _ => panic!("metal is never built"),
        }
        // CUDA: skipped with the reason on a machine (or build) without it;
        // opened where a GPU is.
        match open("cuda") {
            Err(BenchmarkError::Skipped(why)) => assert!(
                why.contains("without candle's cuda support")
                    || why.contains("libcuda")
                    || why.contains("could not be loaded")
                    || why.contains("no CUDA device"),
                "{why}"
            ),
            Ok(dev) => assert!(describe(&dev).contains("(cuda:0)")),
            Err(other) => panic!("{other:?}"),
        }
    }
}
