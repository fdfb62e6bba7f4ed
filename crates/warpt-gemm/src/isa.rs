//! What this CPU runs, as far as the engine's kernels care.

/// An instruction-set level a kernel is written for, best last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable Rust the compiler vectorizes as it can.
    Portable,
    /// AVX2 with FMA (x86-64-v3).
    Avx2,
    /// AVX-512 Foundation (x86-64-v4).
    Avx512,
    /// AVX-512 with the int8 dot products (`vpdpbusd`): Ice Lake, Cascade
    /// Lake and later, Zen 4 and later.
    Avx512Vnni,
    /// AVX-512 with the bf16 dot products (`vdpbf16ps`): Cooper Lake,
    /// Sapphire Rapids and later, Zen 4 and later.
    Avx512Bf16,
    /// aarch64's Advanced SIMD (every aarch64 CPU).
    Neon,
}

impl Isa {
    /// Every level, in order.
    pub const ALL: [Isa; 6] = [
        Isa::Portable,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Avx512Vnni,
        Isa::Avx512Bf16,
        Isa::Neon,
    ];

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Bf16 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bf16")
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            _ => false,
        }
    }

    /// The best level this CPU runs.
    pub fn best() -> Isa {
        Isa::ALL
            .into_iter()
            .rev()
            .find(|i| i.available())
            .unwrap_or(Isa::Portable)
    }

    /// Its name in results (`details.isa`).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2+fma",
            Isa::Avx512 => "avx512f",
            Isa::Avx512Vnni => "avx512_vnni",
            Isa::Avx512Bf16 => "avx512_bf16",
            Isa::Neon => "neon",
        }
    }
}
