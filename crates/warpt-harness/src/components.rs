//! Which benchmarks stand for a component when a run is chosen by component.

use warpt_model::{BenchmarkComponent, BenchmarkId};

/// The default benchmarks of `component`, whether or not this build has
/// them: a component whose suite does not exist yet maps to ids the registry
/// cannot find, and the plan reports them as unavailable rather than faking.
pub fn component_defaults(component: BenchmarkComponent) -> Vec<BenchmarkId> {
    let ids: &[(&str, &str)] = match component {
        BenchmarkComponent::Cpu => &[("micro", "cpu_flops")],
        BenchmarkComponent::Gpu => &[("micro", "gpu_flops")],
        BenchmarkComponent::Ram => &[("micro", "mem_bandwidth"), ("micro", "mem_latency")],
        BenchmarkComponent::Storage => &[("micro", "disk_io")],
        BenchmarkComponent::Network => &[("micro", "net_bandwidth"), ("micro", "net_latency")],
        BenchmarkComponent::System => &[("pepbench", "end_to_end_infer")],
    };
    ids.iter().map(|(s, n)| BenchmarkId::new(*s, *n)).collect()
}
