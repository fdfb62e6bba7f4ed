//! The aarch64 register tiles (`tile`'s, on NEON's 32 registers of 128
//! bits): 24 accumulators, 4 x 6 vectors, as AVX-512's fp64 tile (one
//! broadcast of B per four multiply-adds), with 4 registers for A's step
//! and one for B's broadcast. fp64 8 x 6 (2 lanes), fp32 16 x 6 (4 lanes).
//! NEON is part of every aarch64 CPU; its bf16 (`bfdot`) and int8 (`sdot`)
//! dot products are optional extensions not used yet.

use std::arch::aarch64::*;

use super::Store;

/// `vfmaq_f64` in the tile's argument order: `a·b + c`.
#[inline]
#[target_feature(enable = "neon")]
fn fma_f64(a: float64x2_t, b: float64x2_t, c: float64x2_t) -> float64x2_t {
    vfmaq_f64(c, a, b)
}

/// `vfmaq_f32` in the tile's argument order: `a·b + c`.
#[inline]
#[target_feature(enable = "neon")]
fn fma_f32(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
    vfmaq_f32(c, a, b)
}

/// Two zero lanes.
#[inline]
#[target_feature(enable = "neon")]
fn zero_f64() -> float64x2_t {
    vdupq_n_f64(0.0)
}

/// Four zero lanes.
#[inline]
#[target_feature(enable = "neon")]
fn zero_f32() -> float32x4_t {
    vdupq_n_f32(0.0)
}

tile_kernel!(
    f64_neon,
    f64_neon_direct,
    "neon",
    f64,
    float64x2_t,
    2,
    4,
    zero_f64,
    vld1q_f64,
    vdupq_n_f64,
    fma_f64,
    vst1q_f64,
    vst1q_f64,
    vaddq_f64,
    vsubq_f64,
    vmaxnmq_f64,
    [1:2 2:1 3:1 4:1 5:1 6:1],
    short: [1 2 3],
    6:1
);
tile_kernel!(
    f32_neon,
    f32_neon_direct,
    "neon",
    f32,
    float32x4_t,
    4,
    4,
    zero_f32,
    vld1q_f32,
    vdupq_n_f32,
    fma_f32,
    vst1q_f32,
    vst1q_f32,
    vaddq_f32,
    vsubq_f32,
    vmaxnmq_f32,
    [1:2 2:1 3:1 4:1 5:1 6:1],
    short: [1 2 3],
    6:1
);
