//! GPUs: NVIDIA ones through NVML (loaded at run time, so warpt runs where
//! no driver exists) and every display/compute device DRM knows.

use std::fs;

use warpt_model::GpuInfo;

fn vendor_name(id: &str) -> &'static str {
    match id {
        "0x10de" => "NVIDIA",
        "0x1002" => "AMD",
        "0x8086" => "Intel",
        "0x1af4" => "virtio",
        "0x1234" => "QEMU",
        "0x15ad" => "VMware",
        "0x1a03" => "ASPEED",
        "0x13b5" => "ARM",
        _ => "unknown",
    }
}

/// What NVML answers about one device: the seam the tests fill with a
/// fake device (no NVIDIA driver here).
trait NvmlDevice {
    fn name(&self) -> Option<String>;
    fn pci_device_id(&self) -> Option<u32>;
    fn memory_total(&self) -> Option<u64>;
    fn uuid(&self) -> Option<String>;
    fn compute_capability(&self) -> Option<(i32, i32)>;
    /// CUDA cores.
    fn cores(&self) -> Option<u32>;
    fn bus_width(&self) -> Option<u32>;
    /// The SM or memory clock, now or at most, MHz.
    fn clock(&self, memory: bool, max: bool) -> Option<u32>;
    /// The enforced power limit, milliwatts.
    fn power_limit_mw(&self) -> Option<u32>;
}

impl NvmlDevice for nvml_wrapper::Device<'_> {
    fn name(&self) -> Option<String> {
        nvml_wrapper::Device::name(self).ok()
    }
    fn pci_device_id(&self) -> Option<u32> {
        self.pci_info().ok().map(|p| p.pci_device_id)
    }
    fn memory_total(&self) -> Option<u64> {
        self.memory_info().ok().map(|m| m.total)
    }
    fn uuid(&self) -> Option<String> {
        nvml_wrapper::Device::uuid(self).ok()
    }
    fn compute_capability(&self) -> Option<(i32, i32)> {
        self.cuda_compute_capability()
            .ok()
            .map(|c| (c.major, c.minor))
    }
    fn cores(&self) -> Option<u32> {
        self.num_cores().ok()
    }
    fn bus_width(&self) -> Option<u32> {
        self.memory_bus_width().ok()
    }
    fn clock(&self, memory: bool, max: bool) -> Option<u32> {
        use nvml_wrapper::enum_wrappers::device::Clock;
        let which = if memory { Clock::Memory } else { Clock::SM };
        match max {
            true => self.max_clock_info(which).ok(),
            false => self.clock_info(which).ok(),
        }
    }
    fn power_limit_mw(&self) -> Option<u32> {
        self.enforced_power_limit().ok()
    }
}

/// What holds for every NVIDIA GPU of the machine.
#[derive(Debug, Clone, Default)]
struct Driver {
    /// `nvidia 580.159.04`.
    version: Option<String>,
    /// The CUDA version the driver supports, as NVML encodes it (13000).
    cuda: Option<i32>,
    /// The CUDA libraries warpt's benchmarks load.
    runtime: Option<String>,
}

/// CUDA cores per streaming multiprocessor of compute capability
/// `major.minor` (the table CUDA's samples keep), `None` where unknown.
fn cores_per_sm(major: i32, minor: i32) -> Option<u32> {
    Some(match (major, minor) {
        (3, _) => 192,
        (5, _) => 128,
        (6, 0) => 64,
        (6, _) => 128,
        (7, _) => 64,
        (8, 0) => 64,
        (8, _) => 128,
        (9, _) | (10, _) | (11, _) | (12, _) => 128,
        _ => return None,
    })
}

/// One GPU as [`GpuInfo`] from what NVML answered.
fn describe(index: u32, d: &dyn NvmlDevice, driver: &Driver) -> GpuInfo {
    let cc = d.compute_capability();
    let bus = d.bus_width();
    let memory_max = d.clock(true, true);
    GpuInfo {
        index,
        name: d.name().unwrap_or_else(|| "NVIDIA GPU".into()),
        vendor: "NVIDIA".into(),
        vendor_id: Some("0x10de".into()),
        device_id: d.pci_device_id().map(|id| format!("{:#06x}", id >> 16)),
        driver: driver.version.clone(),
        memory_total_bytes: d.memory_total(),
        uuid: d.uuid(),
        source: "nvml".into(),
        compute_capability: cc.map(|(major, minor)| format!("{major}.{minor}")),
        sm_count: match (cc.and_then(|(a, b)| cores_per_sm(a, b)), d.cores()) {
            (Some(per), Some(cores)) if cores > 0 => Some(cores / per),
            _ => None,
        },
        memory_bus_width_bits: bus,
        memory_class: bus.map(|b| if b >= 1024 { "HBM" } else { "GDDR" }.into()),
        memory_bandwidth_gbps: match (memory_max, bus) {
            (Some(mhz), Some(bits)) if mhz > 0 && bits > 0 => {
                Some(2.0 * f64::from(mhz) * 1e6 * f64::from(bits) / 8.0 / 1e9)
            }
            _ => None,
        },
        sm_clock_mhz: d.clock(false, false),
        sm_clock_max_mhz: d.clock(false, true),
        memory_clock_mhz: d.clock(true, false),
        memory_clock_max_mhz: memory_max,
        power_limit_w: d.power_limit_mw().map(|mw| f64::from(mw) / 1000.0),
        cuda_driver_version: driver
            .cuda
            .filter(|v| *v > 0)
            .map(|v| format!("{}.{}", v / 1000, v % 1000 / 10)),
        cuda_runtime: driver.runtime.clone(),
    }
}

/// NVIDIA GPUs from NVML, or why there are none.
fn nvml_gpus() -> Result<Vec<GpuInfo>, String> {
    let nvml = nvml_wrapper::Nvml::init()
        .map_err(|e| format!("NVML unavailable (no NVIDIA driver?): {e}"))?;
    let count = nvml
        .device_count()
        .map_err(|e| format!("NVML device count: {e}"))?;
    let driver = Driver {
        version: nvml
            .sys_driver_version()
            .ok()
            .map(|v| format!("nvidia {v}")),
        cuda: nvml.sys_cuda_driver_version().ok(),
        runtime: (count > 0).then(warpt_cuda::runtime).flatten(),
    };
    Ok((0..count)
        .filter_map(|index| {
            let dev = nvml.device_by_index(index).ok()?;
            Some(describe(index, &dev, &driver))
        })
        .collect())
}

/// DRM cards (`/sys/class/drm/cardN`) with their PCI ids and driver.
fn drm_gpus() -> Vec<GpuInfo> {
    let mut out: Vec<GpuInfo> = crate::sysfs::entries("/sys/class/drm")
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let index: u32 = name.strip_prefix("card")?.parse().ok()?;
            let dev = e.path().join("device");
            let read = |f: &str| {
                fs::read_to_string(dev.join(f))
                    .ok()
                    .map(|s| s.trim().to_string())
            };
            let vendor_id = read("vendor")?;
            let device_id = read("device");
            let vendor = vendor_name(&vendor_id).to_string();
            Some(GpuInfo {
                index,
                name: format!("{vendor} {}", device_id.as_deref().unwrap_or("?")),
                vendor,
                vendor_id: Some(vendor_id),
                device_id,
                driver: fs::read_link(dev.join("driver"))
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
                source: "drm".into(),
                ..GpuInfo::default()
            })
        })
        .collect();
    out.sort_by_key(|g| g.index);
    out
}

/// Every GPU found, NVML's first; DRM entries for NVIDIA cards NVML already
/// listed are left out. The notes say what could not be asked.
pub fn gpus() -> (Vec<GpuInfo>, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = match nvml_gpus() {
        Ok(g) => g,
        Err(e) => {
            notes.push(e);
            Vec::new()
        }
    };
    let have_nvml = !out.is_empty();
    let drm = drm_gpus();
    if drm.is_empty() && !std::path::Path::new("/sys/class/drm").exists() {
        notes.push("no DRM devices (/sys/class/drm is absent)".into());
    }
    out.extend(
        drm.into_iter()
            .filter(|g| !(have_nvml && g.vendor == "NVIDIA")),
    );
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NVML answers on an H200 (read off one with nvidia-smi).
    struct H200;

    impl NvmlDevice for H200 {
        fn name(&self) -> Option<String> {
            Some("NVIDIA H200".into())
        }
        fn pci_device_id(&self) -> Option<u32> {
            Some(0x2335_10de)
        }
        fn memory_total(&self) -> Option<u64> {
            Some(143_771 << 20)
        }
        fn uuid(&self) -> Option<String> {
            Some("GPU-0".into())
        }
        fn compute_capability(&self) -> Option<(i32, i32)> {
            Some((9, 0))
        }
        fn cores(&self) -> Option<u32> {
            Some(16_896)
        }
        fn bus_width(&self) -> Option<u32> {
            Some(6144)
        }
        fn clock(&self, memory: bool, max: bool) -> Option<u32> {
            Some(match (memory, max) {
                (false, false) => 345,
                (false, true) => 1980,
                (true, _) => 3201,
            })
        }
        fn power_limit_mw(&self) -> Option<u32> {
            Some(700_000)
        }
    }

    /// A device that answers nothing (an old driver, a locked-down VM).
    struct Silent;

    impl NvmlDevice for Silent {
        fn name(&self) -> Option<String> {
            None
        }
        fn pci_device_id(&self) -> Option<u32> {
            None
        }
        fn memory_total(&self) -> Option<u64> {
            None
        }
        fn uuid(&self) -> Option<String> {
            None
        }
        fn compute_capability(&self) -> Option<(i32, i32)> {
            None
        }
        fn cores(&self) -> Option<u32> {
            Some(16_896)
        }
        fn bus_width(&self) -> Option<u32> {
            None
        }
        fn clock(&self, _: bool, _: bool) -> Option<u32> {
            None
        }
        fn power_limit_mw(&self) -> Option<u32> {
            None
        }
    }

    #[test]
    fn an_h200_is_described_fully() {
        let driver = Driver {
            version: Some("nvidia 580.159.04".into()),
            cuda: Some(13000),
            runtime: Some("cuBLAS 13.1.0 (libcublas.so.13)".into()),
        };
        let g = describe(0, &H200, &driver);
        assert_eq!(g.name, "NVIDIA H200");
        assert_eq!(g.device_id.as_deref(), Some("0x2335"));
        assert_eq!(g.compute_capability.as_deref(), Some("9.0"));
        assert_eq!(g.sm_count, Some(132));
        assert_eq!(g.memory_class.as_deref(), Some("HBM"));
        // 2 x 3201 MHz x 6144 bits / 8: the datasheet's 4.8 TB/s.
        let bw = g.memory_bandwidth_gbps.unwrap();
        assert!((bw - 4916.7).abs() < 0.1, "{bw}");
        assert_eq!(
            (g.sm_clock_mhz, g.sm_clock_max_mhz),
            (Some(345), Some(1980))
        );
        assert_eq!(g.memory_clock_max_mhz, Some(3201));
        assert_eq!(g.power_limit_w, Some(700.0));
        assert_eq!(g.cuda_driver_version.as_deref(), Some("13.0"));
        assert_eq!(g.driver.as_deref(), Some("nvidia 580.159.04"));
        assert_eq!(g.cuda_runtime, driver.runtime);
        assert_eq!(g.memory_total_bytes, Some(143_771 << 20));
    }

    #[test]
    fn what_nvml_does_not_answer_stays_unknown() {
        let g = describe(
            1,
            &Silent,
            &Driver {
                cuda: Some(12040),
                ..Driver::default()
            },
        );
        assert_eq!(g.name, "NVIDIA GPU");
        assert_eq!(g.index, 1);
        // Cores without a compute capability give no SM count.
        assert_eq!(g.sm_count, None);
        assert_eq!(g.memory_bandwidth_gbps, None);
        assert_eq!(g.memory_class, None);
        assert_eq!(g.power_limit_w, None);
        assert_eq!(g.cuda_driver_version.as_deref(), Some("12.4"));
    }

    #[test]
    fn cores_per_sm_follow_the_architectures() {
        assert_eq!(cores_per_sm(8, 0), Some(64)); // A100
        assert_eq!(cores_per_sm(8, 6), Some(128)); // RTX 30
        assert_eq!(cores_per_sm(7, 0), Some(64)); // V100
        assert_eq!(cores_per_sm(9, 0), Some(128)); // H100
        assert_eq!(cores_per_sm(2, 0), None);
    }
}
