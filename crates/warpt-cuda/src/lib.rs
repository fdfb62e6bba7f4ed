//! What warpt's CUDA paths share: the cuBLAS/cuSOLVER micro benchmarks
//! (`warpt-gpu`) and the model benchmarks on candle's CUDA backend
//! (`warpt-models`).
//!
//! - [`Library`] and [`check`]: whether the driver and the libraries a
//!   benchmark needs can be loaded here, and whether the device exists,
//!   asked before cudarc is touched (cudarc panics on a missing library);
//! - [`FreeMemoryLow`] (feature `cuda`): a device's free memory and its
//!   lowest point while a benchmark runs, the peak it used;
//! - [`loaded_libraries`]: the CUDA libraries this process has loaded, by
//!   file, so a result says which runtime it ran on.
//!
//! Everything is loaded at run time (cudarc's dynamic loading): a binary
//! built with the `cuda` feature starts on machines without NVIDIA's
//! libraries, and [`check`] then says which one is missing.

use thiserror::Error;

/// A CUDA library a benchmark needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// The driver API, `libcuda` (installed with the NVIDIA driver).
    Driver,
    /// cuBLAS.
    Cublas,
    /// cuBLASLt.
    CublasLt,
    /// cuSOLVER.
    Cusolver,
    /// cuRAND.
    Curand,
}

impl Library {
    /// The file name's stem, as the loader looks for it (`libcublas`).
    pub fn stem(self) -> &'static str {
        match self {
            Library::Driver => "libcuda",
            Library::Cublas => "libcublas",
            Library::CublasLt => "libcublasLt",
            Library::Cusolver => "libcusolver",
            Library::Curand => "libcurand",
        }
    }

    /// Whether it can be loaded here.
    #[cfg(feature = "cuda")]
    fn loads(self) -> bool {
        // SAFETY: each only tries to open the library by its names.
        unsafe {
            match self {
                Library::Driver => cudarc::driver::sys::is_culib_present(),
                Library::Cublas => cudarc::cublas::sys::is_culib_present(),
                Library::CublasLt => cudarc::cublaslt::sys::is_culib_present(),
                Library::Cusolver => cudarc::cusolver::sys::is_culib_present(),
                Library::Curand => cudarc::curand::sys::is_culib_present(),
            }
        }
    }
}

/// Why a CUDA benchmark cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unavailable {
    /// Nothing to run on here (no driver, a library missing, no device, a
    /// build without CUDA): the benchmark is skipped with this reason.
    #[error("{0}")]
    Missing(String),
    /// The ordinal names no device of this machine.
    #[error("CUDA device {ordinal}: this machine has {count} (0 to {})", count.saturating_sub(1))]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// The devices the driver sees.
        count: usize,
    },
}

/// Whether this build has the CUDA path.
pub const BUILT: bool = cfg!(feature = "cuda");

/// Checks that the driver and `needs` load and that device `ordinal`
/// exists; the number of devices the driver sees.
pub fn check(ordinal: usize, needs: &[Library]) -> Result<usize, Unavailable> {
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (ordinal, needs);
        Err(Unavailable::Missing(
            "this build has no CUDA path (build warpt with `--features cuda`)".into(),
        ))
    }
    #[cfg(feature = "cuda")]
    {
        if !Library::Driver.loads() {
            return Err(Unavailable::Missing(
                "no NVIDIA driver: libcuda could not be loaded".into(),
            ));
        }
        let missing: Vec<&str> = needs
            .iter()
            .filter(|l| **l != Library::Driver && !l.loads())
            .map(|l| l.stem())
            .collect();
        if !missing.is_empty() {
            return Err(Unavailable::Missing(format!(
                "{} could not be loaded (CUDA's runtime libraries: add their directory to LD_LIBRARY_PATH)",
                missing.join(", ")
            )));
        }
        let count = cudarc::driver::CudaContext::device_count().map_err(|e| {
            Unavailable::Missing(format!("the NVIDIA driver answers no devices: {e}"))
        })?;
        let count = usize::try_from(count).unwrap_or(0);
        if count == 0 {
            return Err(Unavailable::Missing(
                "the NVIDIA driver sees no CUDA device".into(),
            ));
        }
        if ordinal >= count {
            return Err(Unavailable::NoSuchDevice { ordinal, count });
        }
        Ok(count)
    }
}

/// A device's free memory when a benchmark started and the lowest seen
/// since: their difference is the most the benchmark held (other processes
/// on the same GPU count too, which the device's own counters cannot
/// separate either).
#[cfg(feature = "cuda")]
pub struct FreeMemoryLow {
    ctx: std::sync::Arc<cudarc::driver::CudaContext>,
    at_start: usize,
    low: std::sync::atomic::AtomicUsize,
}

#[cfg(feature = "cuda")]
impl FreeMemoryLow {
    /// Starts watching `ctx`'s device; `None` when its memory cannot be read.
    pub fn new(ctx: std::sync::Arc<cudarc::driver::CudaContext>) -> Option<Self> {
        let (free, _) = ctx.mem_get_info().ok()?;
        Some(FreeMemoryLow {
            ctx,
            at_start: free,
            low: std::sync::atomic::AtomicUsize::new(free),
        })
    }

    /// Notes the free memory now.
    pub fn sample(&self) {
        if let Ok((free, _)) = self.ctx.mem_get_info() {
            self.low
                .fetch_min(free, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Bytes used at the peak: free at the start less the lowest seen.
    pub fn peak_bytes(&self) -> u64 {
        let low = self.low.load(std::sync::atomic::Ordering::Relaxed);
        self.at_start.saturating_sub(low) as u64
    }
}

/// The CUDA runtime warpt's benchmarks load here: cuBLAS's version and the
/// file the loader resolved (`cuBLAS 13.1.0 (libcublas.so.13)`); `None` in
/// a build without the `cuda` feature or where cuBLAS cannot be loaded.
pub fn runtime() -> Option<String> {
    #[cfg(not(feature = "cuda"))]
    {
        None
    }
    #[cfg(feature = "cuda")]
    {
        use cudarc::cublas::sys::{cublasGetProperty, cublasStatus_t, libraryPropertyType};
        if !Library::Cublas.loads() {
            return None;
        }
        let get = |which: libraryPropertyType| {
            let mut v = 0;
            // SAFETY: cuBLAS loads (checked above); it writes one int.
            let status = unsafe { cublasGetProperty(which, &mut v) };
            (status == cublasStatus_t::CUBLAS_STATUS_SUCCESS).then_some(v)
        };
        let version = format!(
            "cuBLAS {}.{}.{}",
            get(libraryPropertyType::MAJOR_VERSION)?,
            get(libraryPropertyType::MINOR_VERSION)?,
            get(libraryPropertyType::PATCH_LEVEL)?
        );
        Some(
            match loaded_libraries()
                .into_iter()
                .find(|f| f.starts_with("libcublas.so"))
            {
                Some(file) => format!("{version} ({file})"),
                None => version,
            },
        )
    }
}

/// The CUDA libraries this process has loaded, as the file names the
/// loader resolved (`libcublas.so.13.0.2.14`), from `/proc/self/maps`;
/// empty where that cannot be read.
pub fn loaded_libraries() -> Vec<String> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    libraries_in_maps(&maps)
}

/// The CUDA libraries named in a `/proc/PID/maps` text, in order of first
/// appearance, each once.
fn libraries_in_maps(maps: &str) -> Vec<String> {
    const STEMS: [&str; 7] = [
        "libcuda.so",
        "libcublas.so",
        "libcublasLt.so",
        "libcusolver.so",
        "libcurand.so",
        "libnvrtc.so",
        "libnvidia-ml.so",
    ];
    let mut out: Vec<String> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        let file = path.rsplit('/').next().unwrap_or(path);
        if STEMS.iter().any(|s| file.starts_with(s)) && !out.iter().any(|f| f == file) {
            out.push(file.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_are_read_from_maps_once_each() {
        let maps = "\
7f00-7f01 r--p 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
7f01-7f02 r-xp 00001000 08:01 1 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
7f02-7f03 r--p 00000000 08:01 2 /opt/v/nvidia/cu13/lib/libcublasLt.so.13
7f03-7f04 r--p 00000000 08:01 3 /opt/v/nvidia/cu13/lib/libcublas.so.13
7f04-7f05 r--p 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/libc.so.6
7f05-7f06 rw-p 00000000 00:00 0
";
        assert_eq!(
            libraries_in_maps(maps),
            [
                "libcuda.so.580.159.04",
                "libcublasLt.so.13",
                "libcublas.so.13"
            ]
        );
    }

    #[test]
    fn a_build_or_machine_without_cuda_says_why() {
        // Here (no NVIDIA driver, or a build without the feature) the check
        // names the reason; with a GPU it counts the devices.
        match check(0, &[Library::Cublas]) {
            Err(Unavailable::Missing(why)) => {
                assert!(
                    why.contains("no CUDA path")
                        || why.contains("libcuda")
                        || why.contains("device"),
                    "{why}"
                );
            }
            Err(other) => panic!("device 0 must exist where the driver sees one: {other}"),
            Ok(count) => assert!(count >= 1),
        }
        let e = Unavailable::NoSuchDevice {
            ordinal: 3,
            count: 1,
        };
        assert_eq!(e.to_string(), "CUDA device 3: this machine has 1 (0 to 0)");
    }
}
