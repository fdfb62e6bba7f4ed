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
