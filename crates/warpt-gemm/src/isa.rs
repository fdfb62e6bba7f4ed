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
    /// AVX-512 with half-precision arithmetic (`vfmadd231ph`, fp16
    /// accumulators): Sapphire Rapids and later.
    Avx512Fp16,
    /// AMX tiles with bf16 and int8 products (`tdpbf16ps`, `tdpbsud`),
    /// beside AVX-512: Sapphire Rapids and later, in a process Linux has
    /// granted the tile data ([`amx_permission`]).
    Amx,
    /// aarch64's Advanced SIMD (every aarch64 CPU).
    Neon,
}

impl Isa {
    /// Every level, in order.
    pub const ALL: [Isa; 8] = [
        Isa::Portable,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Avx512Vnni,
        Isa::Avx512Bf16,
        Isa::Avx512Fp16,
        Isa::Amx,
        Isa::Neon,
    ];

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            // F16C too ([`crate::Half`]'s tiles widen with it): every
            // AVX2 CPU has it.
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("f16c")
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
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Fp16 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512fp16")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Amx => {
                // Asked once: every product asks which kernels run, and
                // CPUID in a virtual machine is a trap to the hypervisor
                // (1.6% of a bf16 MiniLM forward on a KVM guest).
                static AMX: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
                *AMX.get_or_init(|| {
                    // CPUID.(EAX=7, ECX=0):EDX: AMX-BF16 bit 22, AMX-TILE
                    // 24, AMX-INT8 25 (std's detection of them is not
                    // stable).
                    let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
                    let amx = [22, 24, 25].iter().all(|bit| edx & (1 << bit) != 0);
                    std::arch::is_x86_feature_detected!("avx512f")
                        && amx
                        && amx_permission().is_ok()
                })
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
            Isa::Avx512Fp16 => "avx512_fp16",
            Isa::Amx => "amx",
            Isa::Neon => "neon",
        }
    }
}

/// Whether Linux lets this process use the AMX tile data, asked once per
/// process (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`, Linux
/// 5.16+; the grant covers every thread); otherwise why not, starting
/// `not available: `. A CPU without AMX-TILE is refused by the kernel too.
pub fn amx_permission() -> Result<(), String> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        static ASKED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        ASKED
            .get_or_init(|| {
                const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
                const XFEATURE_XTILEDATA: libc::c_long = 18;
                // SAFETY: arch_prctl with an integer argument; it changes
                // only which register state this process may use.
                let rc = unsafe {
                    libc::syscall(
                        libc::SYS_arch_prctl,
                        ARCH_REQ_XCOMP_PERM,
                        XFEATURE_XTILEDATA,
                    )
                };
                if rc == 0 {
                    Ok(())
                } else {
                    Err(format!(
                        "not available: the kernel refused the AMX tile state \
                         (arch_prctl ARCH_REQ_XCOMP_PERM: {}; Linux 5.16+ and a hypervisor \
                         that passes AMX through are needed)",
                        std::io::Error::last_os_error()
                    ))
                }
            })
            .clone()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        Err("not available: AMX runs on x86-64 Linux only".into())
    }
}
