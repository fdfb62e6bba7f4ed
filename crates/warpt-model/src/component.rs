//! What a benchmark exercises and what sort of workload it is.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A hardware or system area a benchmark exercises.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum BenchmarkComponent {
    /// Processor compute.
    Cpu,
    /// Graphics or accelerator compute.
    Gpu,
    /// Main memory bandwidth and latency.
    Ram,
    /// Block storage and file systems.
    Storage,
    /// Network interfaces and the network stack.
    Network,
    /// The machine as a whole (end-to-end workloads).
    System,
}

impl BenchmarkComponent {
    /// Every component, in the order the CLI lists them.
    pub const ALL: [BenchmarkComponent; 6] = [
        BenchmarkComponent::Cpu,
        BenchmarkComponent::Gpu,
        BenchmarkComponent::Ram,
        BenchmarkComponent::Storage,
        BenchmarkComponent::Network,
        BenchmarkComponent::System,
    ];

    /// The lowercase name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            BenchmarkComponent::Cpu => "cpu",
            BenchmarkComponent::Gpu => "gpu",
            BenchmarkComponent::Ram => "ram",
            BenchmarkComponent::Storage => "storage",
            BenchmarkComponent::Network => "network",
            BenchmarkComponent::System => "system",
        }
    }
}

impl fmt::Display for BenchmarkComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A component name that is not one of [`BenchmarkComponent::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown component '{0}'; valid components: cpu, gpu, ram, storage, network, system")]
pub struct UnknownComponent(pub String);

impl FromStr for BenchmarkComponent {
    type Err = UnknownComponent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BenchmarkComponent::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownComponent(s.to_string()))
    }
}

/// The high-level category of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BenchmarkKind {
    /// Microbenchmarks and stress-like workloads.
    Synthetic,
    /// End-to-end ML or application workloads.
    Application,
    /// Domain-specific workloads (bioinformatics, omics).
    Domain,
}

impl fmt::Display for BenchmarkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BenchmarkKind::Synthetic => "synthetic",
            BenchmarkKind::Application => "application",
            BenchmarkKind::Domain => "domain",
        })
    }
}
