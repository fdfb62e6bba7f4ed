//! AMX tile kernels (Intel Sapphire Rapids and later): `tdpbf16ps` (bf16
//! pairs into fp32) and `tdpbssd` (s8 quads into s32) on 16 x 16
//! accumulator tiles, where these CPUs have their bf16 and int8 peak.
//!
//! Eight tiles of 16 rows x 64 bytes: C0..C3 (`tmm0`-`tmm3`) accumulate
//! from A0, A1 (`tmm4`, `tmm5`) and B0, B1 (`tmm6`, `tmm7`) in the 2 x 2
//! blocking Intel's optimisation manual gives for peak (four independent
//! accumulators hide the product's latency). Every input element is `one`
//! (1 unless a test wants a wrong answer), so each accumulator element
//! has a closed form after `iters` iterations and all 1,024 of them are
//! checked: a `tdpbf16ps` adds 32 products (K = 32 bf16) to each fp32
//! element, a `tdpbssd` 64 (K = 64 int8) to each int32 element.
//!
//! Linux hands out the tile data state only on request
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`, kernel 5.16+,
//! asked by [`warpt_gemm::isa::amx_permission`] for the whole process);
//! a CPU, kernel or hypervisor that does not allow it makes the precision
//! unavailable, with the reason. The instructions are written in inline
//! assembly: Rust's AMX intrinsics are not stable.

/// The two AMX products.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AmxOp {
    /// `tdpbf16ps`: bf16 x bf16 pairs accumulated in fp32.
    Bf16,
    /// `tdpbssd`: s8 x s8 quads accumulated in int32.
    Int8,
}

/// Tile products per iteration (C0..C3).
const PRODUCTS: u64 = 4;
/// Rows and accumulator columns of a tile.
const M: u64 = 16;
/// Bytes per tile row.
const ROW_BYTES: usize = 64;

impl AmxOp {
    /// The instruction, as reported in details.
    pub fn name(self) -> &'static str {
        match self {
            AmxOp::Bf16 => "amx_bf16 tdpbf16ps 2x2 tiles",
            AmxOp::Int8 => "amx_int8 tdpbssd 2x2 tiles",
        }
    }

    /// Products summed into each accumulator element per instruction.
    fn k(self) -> u64 {
        match self {
            AmxOp::Bf16 => 32,
            AmxOp::Int8 => 64,
        }
    }

    /// Operations per iteration: four 16 x 16 x K products, 2 per
    /// multiply-add.
    pub fn ops_per_iter(self) -> u64 {
        PRODUCTS * M * M * self.k() * 2
    }

    /// The value every accumulator element holds after `iters` iterations
    /// with every input 1.
    pub fn expected(self, iters: u64) -> f64 {
        (self.k() * iters) as f64
    }

    /// The most iterations whose result stays exact (fp32's 2^24, int32's
    /// 2^31).
    pub fn max_iters(self) -> u64 {
        match self {
            AmxOp::Bf16 => (1 << 24) / self.k(),
            AmxOp::Int8 => (1 << 30) / self.k(),
        }
    }

    /// Whether this CPU and kernel let this process run it; otherwise why
    /// not, starting `not available: `.
    pub fn available(self) -> Result<(), String> {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        {
            // CPUID.(EAX=7, ECX=0):EDX: AMX-BF16 bit 22, AMX-TILE 24, AMX-INT8 25.
            let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
            let has = |bit: u32| edx & (1 << bit) != 0;
            let (bit, feature) = match self {
                AmxOp::Bf16 => (22, "AMX-BF16"),
                AmxOp::Int8 => (25, "AMX-INT8"),
            };
            if !has(24) || !has(bit) {
                return Err(format!("not available: this CPU has no {feature}"));
            }
            warpt_gemm::isa::amx_permission()
        }
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        {
            Err("not available: AMX runs on x86-64 Linux only".into())
        }
    }

    /// Runs `iters` iterations with every input equal to `one` and returns
    /// the (min, max) over every accumulator element.
    ///
    /// # Safety
    /// [`AmxOp::available`] must have returned `Ok` in this process.
    #[cfg(target_arch = "x86_64")]
    pub unsafe fn run(self, iters: u64, one: i8) -> (f64, f64) {
        // SAFETY: the caller checked the CPU and the tile permission.
        unsafe { x86::run(self, iters, one) }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;
    use std::hint::black_box;

    use super::{AmxOp, ROW_BYTES};

    /// A tile configuration: palette 1, eight tiles of 16 rows x 64 bytes.
    #[repr(C, align(64))]
    struct TileConfig([u8; 64]);

    impl TileConfig {
        fn eight_full_tiles() -> Self {
            let mut c = [0u8; 64];
            c[0] = 1; // palette
            for t in 0..8 {
                // colsb[t] (u16 at 16 + 2t) and rows[t] (u8 at 48 + t).
                c[16 + 2 * t..18 + 2 * t].copy_from_slice(&(ROW_BYTES as u16).to_le_bytes());
                c[48 + t] = 16;
            }
            TileConfig(c)
        }
    }

    /// # Safety
    /// The CPU has AMX-TILE and the op's AMX unit, and the process holds
    /// the tile data permission.
    pub unsafe fn run(op: AmxOp, iters: u64, one: i8) -> (f64, f64) {
        let cfg = TileConfig::eight_full_tiles();
        // One 16 x 64-byte tile of inputs, A's and B's alike.
        let element: u16 = match op {
            // bf16 is the top half of the fp32 bit pattern.
            AmxOp::Bf16 => ((f32::from(black_box(one))).to_bits() >> 16) as u16,
            AmxOp::Int8 => u16::from_le_bytes([black_box(one) as u8; 2]),
        };
        let input = [element; 16 * ROW_BYTES / 2];
        let mut out = [0u32; 4 * 16 * 16];
        let stride = ROW_BYTES;
        let iters = black_box(iters);
        if iters > 0 {
            // SAFETY: the tiles are configured, loaded from and stored to
            // buffers of 16 rows x `stride` bytes (`out` holds four), and
            // released before the block ends; no Rust value lives in a tile.
            unsafe {
                // One block per product: only the instruction differs.
                macro_rules! tiles {
                    ($product:literal) => {
                        asm!(
                            "ldtilecfg [{cfg}]",
                            "tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3",
                            "tileloadd tmm4, [{a} + {s}*1]",
                            "tileloadd tmm5, [{a} + {s}*1]",
                            "tileloadd tmm6, [{a} + {s}*1]",
                            "tileloadd tmm7, [{a} + {s}*1]",
                            "2:",
                            concat!($product, " tmm0, tmm4, tmm6"),
                            concat!($product, " tmm1, tmm4, tmm7"),
                            concat!($product, " tmm2, tmm5, tmm6"),
                            concat!($product, " tmm3, tmm5, tmm7"),
                            "dec {n}",
                            "jnz 2b",
                            "tilestored [{c} + {s}*1], tmm0",
                            "tilestored [{c1} + {s}*1], tmm1",
                            "tilestored [{c2} + {s}*1], tmm2",
                            "tilestored [{c3} + {s}*1], tmm3",
                            "tilerelease",
                            cfg = in(reg) cfg.0.as_ptr(),
                            a = in(reg) input.as_ptr(),
                            s = in(reg) stride,
                            c = in(reg) out.as_mut_ptr(),
                            c1 = in(reg) out.as_mut_ptr().add(256),
                            c2 = in(reg) out.as_mut_ptr().add(512),
                            c3 = in(reg) out.as_mut_ptr().add(768),
                            n = inout(reg) iters => _,
                            options(nostack),
                        )
                    };
                }
                match op {
                    AmxOp::Bf16 => tiles!("tdpbf16ps"),
                    AmxOp::Int8 => tiles!("tdpbssd"),
                }
            }
        }
        out.iter()
            .map(|&bits| match op {
                AmxOp::Bf16 => f64::from(f32::from_bits(bits)),
                AmxOp::Int8 => f64::from(bits as i32),
            })
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    }
}
