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

/// NVIDIA GPUs from NVML, or why there are none.
fn nvml_gpus() -> Result<Vec<GpuInfo>, String> {
    let nvml = nvml_wrapper::Nvml::init()
        .map_err(|e| format!("NVML unavailable (no NVIDIA driver?): {e}"))?;
    let count = nvml
        .device_count()
        .map_err(|e| format!("NVML device count: {e}"))?;
    let mut out = Vec::new();
    for index in 0..count {
        let Ok(dev) = nvml.device_by_index(index) else {
            continue;
        };
        out.push(GpuInfo {
            index,
            name: dev.name().unwrap_or_else(|_| "NVIDIA GPU".into()),
            vendor: "NVIDIA".into(),
            vendor_id: Some("0x10de".into()),
            device_id: dev
                .pci_info()
                .ok()
                .map(|p| format!("{:#06x}", p.pci_device_id >> 16)),
            driver: nvml
                .sys_driver_version()
                .ok()
                .map(|v| format!("nvidia {v}")),
            memory_total_bytes: dev.memory_info().ok().map(|m| m.total),
            uuid: dev.uuid().ok(),
            source: "nvml".into(),
        });
    }
    Ok(out)
}

/// DRM cards (`/sys/class/drm/cardN`) with their PCI ids and driver.
fn drm_gpus() -> Vec<GpuInfo> {
    let Ok(entries) = fs::read_dir("/sys/class/drm") else {
        return Vec::new();
    };
    let mut out: Vec<GpuInfo> = entries
        .flatten()
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
                memory_total_bytes: None,
                uuid: None,
                source: "drm".into(),
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
