//! The CPU's SIMD instruction set for floating-point multiply-add, and
//! what it implies (vector width, fused or not): facts of the hardware
//! that the FMA kernels, the theoretical peak and Linpack all read.

/// The SIMD instruction set a kernel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// x86-64 AVX-512F: 512-bit FMA.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// x86-64 AVX2 with FMA3: 256-bit FMA.
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    /// x86-64 SSE2: 128-bit multiply and add (no fused instruction).
    #[cfg(target_arch = "x86_64")]
    Sse2,
    /// AArch64 Advanced SIMD: 128-bit FMA.
    #[cfg(target_arch = "aarch64")]
    Neon,
    /// Plain scalar code, on any other architecture.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    Scalar,
}

impl Isa {
    /// The best instruction set this CPU supports.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Isa::Avx2Fma;
            }
            Isa::Sse2
        }
        #[cfg(target_arch = "aarch64")]
        {
            Isa::Neon
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            Isa::Scalar
        }
    }

    /// Name as reported in results.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => "avx512f",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => "avx2+fma",
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => "sse2",
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => "neon",
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            Isa::Scalar => "scalar",
        }
    }

    /// Vector width in bytes.
    pub fn vector_bytes(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => 64,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => 32,
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => 16,
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => 16,
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            Isa::Scalar => 8,
        }
    }

    /// Independent accumulators (vector registers) per kernel.
    pub fn accumulators(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => 16,
            // 16 architectural registers: 12 chains plus the two constants.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma | Isa::Sse2 => 12,
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => 16,
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            Isa::Scalar => 8,
        }
    }

    /// Whether the kernel issues fused multiply-adds (else a multiply and an add).
    pub fn fused(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => false,
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            Isa::Scalar => false,
            #[allow(unreachable_patterns)]
            _ => true,
        }
    }

    /// Floating-point operations one kernel iteration performs for elements
    /// of `elem_bytes` bytes: 2 (multiply and add) per lane per accumulator.
    pub fn flops_per_iter(self, elem_bytes: usize) -> u64 {
        (self.accumulators() * self.vector_bytes() / elem_bytes * 2) as u64
    }
}
