//! Which microkernels each element has on each architecture, best last,
//! and the blocking each runs with (measured with `--example rate`; the
//! comments say where).

#[cfg(target_arch = "aarch64")]
use super::neon;
use super::{Bf16, Finishing, Half, Kernel, PanelOrder, portable};
#[cfg(target_arch = "x86_64")]
use super::{Pair, amx, bf16_avx2, widen, x86};
use crate::isa::Isa;

#[cfg(target_arch = "x86_64")]
pub(super) static I8: [Kernel<i8>; 4] = [
    portable::I8,
    // For rows a multiple of 32 but not of 48 (as fp32's 32x12).
    Kernel {
        name: "avx512_vnni i8 32x12",
        isa: Isa::Avx512Vnni,
        mr: 32,
        nr: 12,
        kc: 1024,
        mc: 160,
        nc: 3072,
        run: x86::i8_avx512vnni_32x12,
        direct: None,
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        pair: None,
    },
    Kernel {
        name: "avx512_vnni i8 48x8",
        isa: Isa::Avx512Vnni,
        mr: 48,
        nr: 8,
        kc: 1024,
        mc: 240,
        nc: 3072,
        run: x86::i8_avx512vnni,
        direct: None,
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        pair: None,
    },
    // 4096 deep (1024 fours): as bf16's 2048.
    Kernel {
        name: "amx i8 32x32",
        isa: Isa::Amx,
        mr: 32,
        nr: 32,
        kc: 4096,
        mc: 256,
        nc: 3072,
        run: amx::i8_amx,
        direct: None,
        biased: None,
        finishing: None,
        order: PanelOrder::Chunks,
        pair: None,
    },
];

#[cfg(not(target_arch = "x86_64"))]
pub(super) static I8: [Kernel<i8>; 1] = [portable::I8];

#[cfg(target_arch = "x86_64")]
// bf16's depth blocks are 1024 deep (512 pairs, as int8's 1024 are 256
// fours: the same bytes): against 512, 1-3% faster at n = 1024-2048 on
// one and two threads (Zen 4, `--example rate`), fewer updates of C.
pub(super) static BF16: [Kernel<Bf16>; 5] = [
    portable::BF16,
    // AVX2 without AVX512_BF16: the pairs widened to fp32 as loaded
    // (`bf16_avx2.rs`), half fp32's bytes to read. kc 1024: at n = 2048
    // 65-74 GFLOP/s against 69 at 512 (one core, Zen 3, `--example rate`,
    // a noisy hour: +-15% from run to run; mc 96-288 within it).
    Kernel {
        name: "avx2+fma bf16>f32 16x6",
        isa: Isa::Avx2,
        mr: 16,
        nr: 6,
        kc: 1024,
        mc: 144,
        nc: 3072,
        run: bf16_avx2::bf16_avx2,
        direct: None,
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        pair: None,
    },
    // For rows a multiple of 32 but not of 48 (as fp32's 32x12).
    Kernel {
        name: "avx512_bf16 bf16 32x12",
        isa: Isa::Avx512Bf16,
        mr: 32,
        nr: 12,
        kc: 1024,
        mc: 160,
        nc: 3072,
        run: x86::bf16_avx512_32x12,
        direct: None,
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        pair: None,
    },
    Kernel {
        name: "avx512_bf16 bf16 48x8",
        isa: Isa::Avx512Bf16,
        mr: 48,
        nr: 8,
        kc: 1024,
        mc: 240,
        nc: 3072,
        run: x86::bf16_avx512,
        direct: None,
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        pair: None,
    },
    // 2048 deep (1024 pairs; a micro-panel of B is 128 KiB, read from
    // L2): each call's fixed cost (C's tile loaded or stored, the tiles'
    // pipeline filled and drained) over more depth. At n = 2048 on one
    // core: 512 deep 592 GFLOP/s, 1024 727, 2048 821; at 4096, 1024 deep
    // 740, 2048 798 (Xeon with AMX, `--example rate`).
    Kernel {
        name: "amx bf16 32x32",
        isa: Isa::Amx,
        mr: 32,
        nr: 32,
        kc: 2048,
        mc: 256,
        nc: 3072,
        run: amx::bf16_amx,
        direct: None,
        biased: Some(amx::bf16_amx_bias),
        finishing: None,
        order: PanelOrder::Chunks,
        pair: None,
    },
];

#[cfg(not(target_arch = "x86_64"))]
pub(super) static BF16: [Kernel<Bf16>; 1] = [portable::BF16];

#[cfg(target_arch = "x86_64")]
pub(super) static F64: [Kernel<f64>; 3] = [
    portable::F64,
    Kernel {
        name: "avx2+fma f64 8x6",
        isa: Isa::Avx2,
        mr: 8,
        nr: 6,
        kc: 256,
        mc: 144,
        nc: 2040,
        run: x86::f64_avx2,
        direct: Some(x86::f64_avx2_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: x86::f64_avx2::finishing,
            direct: x86::f64_avx2::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: None,
    },
    // 512 deep: B's micro-panel (24 KiB) still fits L1 beside A's stream,
    // and C is updated a third less often than at 384: 1-4% faster at
    // n = 1024-2048 on one and two threads (Zen 4, `--example rate`).
    Kernel {
        name: "avx512f f64 32x6",
        isa: Isa::Avx512,
        mr: 32,
        nr: 6,
        kc: 512,
        mc: 256,
        nc: 4080,
        run: x86::f64_avx512,
        direct: Some(x86::f64_avx512_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: x86::f64_avx512::finishing,
            direct: x86::f64_avx512::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: None,
    },
];

#[cfg(target_arch = "x86_64")]
const F32_TILES: [Kernel<f32>; 4] = [
    portable::F32,
    Kernel {
        name: "avx2+fma f32 16x6",
        isa: Isa::Avx2,
        mr: 16,
        nr: 6,
        kc: 384,
        mc: 144,
        nc: 3072,
        run: x86::f32_avx2,
        direct: Some(x86::f32_avx2_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: x86::f32_avx2::finishing,
            direct: x86::f32_avx2::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: None,
    },
    // A shorter tile for products whose rows are a multiple of 32 but not
    // of 48 (64, 128, 256 channels: 48 rows would pad 64 to 96).
    Kernel {
        name: "avx512f f32 32x12",
        isa: Isa::Avx512,
        mr: 32,
        nr: 12,
        kc: 384,
        mc: 160,
        nc: 3072,
        run: x86::f32_avx512_32x12,
        direct: Some(x86::f32_avx512_32x12_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: x86::f32_avx512_32x12::finishing,
            direct: x86::f32_avx512_32x12::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: Some(Pair {
            run: x86::f32_avx512_32x12_pair::run,
            direct: x86::f32_avx512_32x12_pair::direct,
        }),
    },
    Kernel {
        name: "avx512f f32 48x8",
        isa: Isa::Avx512,
        mr: 48,
        nr: 8,
        kc: 384,
        mc: 144,
        nc: 3072,
        run: x86::f32_avx512,
        direct: Some(x86::f32_avx512_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: x86::f32_avx512::finishing,
            direct: x86::f32_avx512::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: Some(Pair {
            run: x86::f32_avx512_pair::run,
            direct: x86::f32_avx512_pair::direct,
        }),
    },
];

/// fp32's AVX-512 depth and rows with a large L2 ([`crate::cache::large_l2`]):
/// an A block of 480 x 512
/// (960 KiB, about fp64's 256 x 512), each micro-panel of B read from L3
/// once for ten tiles instead of three. On an Intel Xeon (family 6 model
/// 207, 2 MiB L2, `--example rate`, interleaved) against 384 x 144:
/// n = 2048 one thread 142 -> 158 GFLOP/s, two 284 -> 309; n = 1024
/// 141 -> 153, 278 -> 297; n = 384 level. The AMD cores this was tuned
/// on (512 KiB - 1 MiB L2) keep 384 x 144 and 384 x 160.
#[cfg(target_arch = "x86_64")]
const LARGE_L2_BLOCKING: (usize, usize) = (512, 480);

/// fp32's tiles, blocked for this CPU's L2 ([`crate::cache`]).
#[cfg(target_arch = "x86_64")]
pub(super) static F32: std::sync::LazyLock<[Kernel<f32>; 4]> = std::sync::LazyLock::new(|| {
    let mut tiles = F32_TILES;
    if crate::cache::large_l2() {
        for k in tiles.iter_mut().filter(|k| k.isa == Isa::Avx512) {
            (k.kc, k.mc) = LARGE_L2_BLOCKING;
        }
    }
    tiles
});

// fp16 in, fp16 accumulated and out (AVX512_FP16 has no wider
// accumulation): 32 lanes a vector, 2 x 12 of them as fp32's 32x12.
#[cfg(target_arch = "x86_64")]
pub(super) static F16: [Kernel<half::f16>; 2] = [
    portable::F16,
    Kernel {
        name: "avx512_fp16 f16 64x12",
        isa: Isa::Avx512Fp16,
        mr: 64,
        nr: 12,
        kc: 512,
        mc: 192,
        nc: 3072,
        run: x86::f16_avx512fp16,
        direct: Some(x86::f16_avx512fp16_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: x86::f16_avx512fp16::finishing,
            direct: x86::f16_avx512fp16::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: None,
    },
];

#[cfg(not(target_arch = "x86_64"))]
pub(super) static F16: [Kernel<half::f16>; 1] = [portable::F16];

// fp16 widened to fp32 as loaded: fp32's tiles, A's vectors and B's
// values converted on the way in (a decode step reads half fp32's bytes).
#[cfg(target_arch = "x86_64")]
pub(super) static HALF: [Kernel<Half>; 3] = [
    portable::HALF,
    Kernel {
        name: "avx2+f16c f16>f32 16x6",
        isa: Isa::Avx2,
        mr: 16,
        nr: 6,
        kc: 384,
        mc: 144,
        nc: 3072,
        run: widen::half_avx2,
        direct: Some(widen::half_avx2_direct),
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        pair: None,
    },
    Kernel {
        name: "avx512f f16>f32 48x8",
        isa: Isa::Avx512,
        mr: 48,
        nr: 8,
        kc: 384,
        mc: 144,
        nc: 3072,
        run: widen::half_avx512,
        direct: Some(widen::half_avx512_direct),
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        // No pair: fp16's decode steps ran slower on them (`llm_infer`
        // f16, Zen 4: TPOT 0.95x, five interleaved rounds; fp32 1.03x).
        pair: None,
    },
];

#[cfg(not(target_arch = "x86_64"))]
pub(super) static HALF: [Kernel<Half>; 1] = [portable::HALF];

#[cfg(target_arch = "aarch64")]
pub(super) static F64: [Kernel<f64>; 2] = [
    portable::F64,
    Kernel {
        name: "neon f64 8x6",
        isa: Isa::Neon,
        mr: 8,
        nr: 6,
        kc: 256,
        mc: 128,
        nc: 3072,
        run: neon::f64_neon,
        direct: Some(neon::f64_neon_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: neon::f64_neon::finishing,
            direct: neon::f64_neon::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: None,
    },
];

#[cfg(target_arch = "aarch64")]
pub(super) static F32: [Kernel<f32>; 2] = [
    portable::F32,
    Kernel {
        name: "neon f32 16x6",
        isa: Isa::Neon,
        mr: 16,
        nr: 6,
        kc: 256,
        mc: 128,
        nc: 3072,
        run: neon::f32_neon,
        direct: Some(neon::f32_neon_direct),
        biased: None,
        finishing: Some(Finishing {
            packed: neon::f32_neon::finishing,
            direct: neon::f32_neon::direct_finishing,
        }),
        order: PanelOrder::Steps,
        pair: None,
    },
];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) static F64: [Kernel<f64>; 1] = [portable::F64];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) static F32: [Kernel<f32>; 1] = [portable::F32];
