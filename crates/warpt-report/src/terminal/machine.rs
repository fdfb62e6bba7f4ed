//! `warpt list`: the machine snapshot in a few lines.

use warpt_model::ListOutput;

use super::bytes;

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or("?".into(), |v| v.to_string())
}

/// The machine snapshot in a few lines.
pub fn machine(s: &ListOutput) -> String {
    let mut o = String::new();
    let c = &s.cpu;
    o += &format!(
        "CPU      {} ({}), {} socket(s), {} cores, {} logical CPUs usable, {} thread(s)/core, {} NUMA node(s)\n",
        c.model,
        c.vendor,
        opt(&c.sockets),
        opt(&c.physical_cores),
        c.logical_cores,
        opt(&c.threads_per_core),
        opt(&c.numa_nodes)
    );
    o += &format!(
        "         {} MHz (base {}, max {}); {}\n",
        c.mhz.map_or("?".into(), |m| format!("{m:.0}")),
        c.base_mhz.map_or("?".into(), |m| format!("{m:.0}")),
        c.max_mhz.map_or("?".into(), |m| format!("{m:.0}")),
        c.flags.join(" ")
    );
    let caches: Vec<String> = c
        .caches
        .iter()
        .map(|k| {
            format!(
                "L{}{} {} x{}",
                k.level,
                &k.kind[..1].to_lowercase(),
                bytes(k.size_bytes),
                k.instances
            )
        })
        .collect();
    o += &format!("         caches: {}\n", caches.join(", "));
    let m = &s.memory;
    o += &format!(
        "Memory   {} total, {} available, swap {}, huge pages {} x {}, THP {}\n",
        bytes(m.total_bytes),
        bytes(m.available_bytes),
        bytes(m.swap_total_bytes),
        m.hugepages_total,
        bytes(m.hugepage_size_bytes),
        opt(&m.transparent_hugepages)
    );
    for d in &m.dimms {
        o += &format!(
            "         {} {} {} {} MT/s {}\n",
            d.locator,
            bytes(d.size_bytes),
            opt(&d.kind),
            opt(&d.speed_mts),
            opt(&d.part_number)
        );
    }
    if let Some(n) = &m.dimm_note {
        o += &format!("         DIMMs: {n}\n");
    }
    o += &format!(
        "OS       {}, kernel {}, {}, host {}, virtualization {}, container {}\n",
        s.os.name,
        s.os.kernel,
        s.os.arch,
        s.os.hostname,
        opt(&s.os.virtualization),
        s.os.container.as_deref().unwrap_or("none")
    );
    if s.gpus.is_empty() {
        o += "GPUs     none found\n";
    }
    for g in &s.gpus {
        o += &format!(
            "GPU {}    {} [{}] driver {}{}\n",
            g.index,
            g.name,
            g.source,
            opt(&g.driver),
            g.memory_total_bytes
                .map_or(String::new(), |b| format!(", {}", bytes(b)))
        );
        let facts = gpu_facts(g);
        if !facts.is_empty() {
            o += &format!("         {}\n", facts.join(", "));
        }
    }
    for n in &s.gpu_notes {
        o += &format!("         ({n})\n");
    }
    for a in &s.compute_adapters {
        o += &format!(
            "Compute  device_index={} {} [{} {}{}] driver {}{}\n",
            a.index,
            a.name,
            a.backend,
            a.device_type,
            if a.software { ", software" } else { "" },
            a.driver,
            if a.shader_f16 { ", shader-f16" } else { "" }
        );
    }
    // The compatibility map, one line per device: families grouped by the
    // precisions they run in.
    for device in ["cpu", "cuda", "metal"] {
        let rows: Vec<_> = s
            .model_support
            .iter()
            .filter(|r| r.device == device)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for r in rows.iter().filter(|r| !r.precisions.is_empty()) {
            let key = r.precisions.join(" ");
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, fams)) => fams.push(&r.family),
                None => groups.push((key, vec![&r.family])),
            }
        }
        if groups.is_empty() {
            let why = rows.iter().find_map(|r| r.reason.as_deref()).unwrap_or("");
            o += &format!("Models   {device}: none ({why})\n");
            continue;
        }
        for (i, (precisions, fams)) in groups.iter().enumerate() {
            o += &format!(
                "Models   {:<6} {} ({precisions})\n",
                if i == 0 { device } else { "" },
                fams.join(", ")
            );
        }
    }
    let not_yet: Vec<&str> = s
        .model_support
        .iter()
        .filter(|r| r.device == "cpu" && r.benchmark.is_empty())
        .map(|r| r.family.as_str())
        .collect();
    if !not_yet.is_empty() {
        o += &format!(
            "Models   not run by any benchmark yet: {}\n",
            not_yet.join(", ")
        );
    }
    for d in &s.storage {
        o += &format!(
            "Disk     {} {} {} {}, scheduler {}\n",
            d.name,
            bytes(d.size_bytes),
            d.model.as_deref().unwrap_or(""),
            match d.rotational {
                Some(true) => "rotational",
                Some(false) => "solid-state",
                None => "?",
            },
            opt(&d.scheduler)
        );
    }
    for mnt in s.mounts.iter().filter(|m| m.is_storage()) {
        o += &format!(
            "Mount    {} {} ({})\n",
            mnt.mount_point, mnt.filesystem, mnt.source
        );
    }
    let hidden = s.mounts.iter().filter(|m| !m.is_storage()).count();
    if hidden > 0 {
        o += &format!(
            "Mount    ({hidden} pseudo and bind mounts hidden: /proc, /sys, /dev, cgroups, \
             overlay layers, container binds; --json lists all)\n"
        );
    }
    for n in &s.network {
        o += &format!(
            "Net      {} {} MTU {} speed {} driver {}\n",
            n.name,
            opt(&n.state),
            opt(&n.mtu),
            n.speed_mbps.map_or("?".into(), |s| format!("{s} Mb/s")),
            opt(&n.driver)
        );
    }
    if s.tools.is_empty() {
        o += "Tools    none of nvcc, nvidia-smi, rocm-smi, docker, mpirun, xhpl, hpcc, fio, iperf3 on PATH\n";
    }
    for t in &s.tools {
        o += &format!(
            "Tool     {} {} ({})\n",
            t.name,
            t.version.as_deref().unwrap_or(""),
            t.path
        );
    }
    o
}

/// What NVML told of an NVIDIA GPU beyond its name, each fact where known:
/// compute capability, SMs, memory class and peak, clocks, power limit,
/// the CUDA driver and the runtime the benchmarks load.
fn gpu_facts(g: &warpt_model::GpuInfo) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(cc) = &g.compute_capability {
        f.push(format!("compute {cc}"));
    }
    if let Some(n) = g.sm_count {
        f.push(format!("{n} SMs"));
    }
    if let (Some(class), Some(bits)) = (&g.memory_class, g.memory_bus_width_bits) {
        let peak = g
            .memory_bandwidth_gbps
            .map_or(String::new(), |p| format!(" ({p:.0} GB/s peak)"));
        f.push(format!("{class} {bits}-bit{peak}"));
    }
    if let (Some(now), Some(max)) = (g.sm_clock_mhz, g.sm_clock_max_mhz) {
        f.push(format!("SM {now}/{max} MHz"));
    }
    if let (Some(now), Some(max)) = (g.memory_clock_mhz, g.memory_clock_max_mhz) {
        f.push(format!("memory {now}/{max} MHz"));
    }
    if let Some(w) = g.power_limit_w {
        f.push(format!("{w:.0} W limit"));
    }
    if let Some(v) = &g.cuda_driver_version {
        f.push(format!("CUDA {v} (driver)"));
    }
    if let Some(r) = &g.cuda_runtime {
        f.push(r.clone());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_nvidia_gpu_line_names_what_nvml_told() {
        let g = warpt_model::GpuInfo {
            compute_capability: Some("9.0".into()),
            sm_count: Some(132),
            memory_class: Some("HBM".into()),
            memory_bus_width_bits: Some(6144),
            memory_bandwidth_gbps: Some(4916.7),
            sm_clock_mhz: Some(345),
            sm_clock_max_mhz: Some(1980),
            power_limit_w: Some(700.0),
            cuda_driver_version: Some("13.0".into()),
            ..warpt_model::GpuInfo::default()
        };
        assert_eq!(
            gpu_facts(&g).join(", "),
            "compute 9.0, 132 SMs, HBM 6144-bit (4917 GB/s peak), SM 345/1980 MHz, 700 W limit, CUDA 13.0 (driver)"
        );
        // A DRM card: nothing beyond its line.
        assert!(gpu_facts(&warpt_model::GpuInfo::default()).is_empty());
    }
}
