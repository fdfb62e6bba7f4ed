//! The quantized product's aarch64 tile on base NEON (every aarch64 CPU):
//! `smull` of 8 weight-activation byte pairs into i16, `sadalp` of the
//! pairs into i32, a record's sixteen rows in eight accumulators. (The
//! dot-product extension's `sdot` would do the four in one; its
//! intrinsics are not stable in this Rust.) It computes what `portable`
//! computes, to the bit: each block's exact integer dot product,
//! converted, then one fused multiply-add by the product of the scales.

// Register tiles are arrays indexed by unrolled constant loops: the
// indices are the point.
#![allow(clippy::needless_range_loop)]

use std::arch::aarch64::*;

use super::{GROUP, Panel, QActs, QType, Span, Tile};

/// Groups `g..g + rg` against rows `t0..t0 + tn` into `tile`: one group
/// by two rows at a time.
///
/// # Safety
/// The CPU runs NEON; the groups are in the panel and the rows in `acts`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_tile(span: Span, tile: &mut Tile) {
    let (panel, acts) = (span.panel, span.acts);
    let (g, rg, t0, tn) = (span.g, span.rg, span.t0, span.tn);
    super::by_pairs(rg, tn, |i, t, two| {
        let (g, t0, col) = (g + i, t0 + t, GROUP * i);
        // SAFETY: the caller's.
        unsafe {
            match (panel.qtype, two) {
                (QType::Q8_0, false) => neon::<false, 1>(panel, g, acts, t0, tile, t, col),
                (QType::Q4_0, false) => neon::<true, 1>(panel, g, acts, t0, tile, t, col),
                (QType::Q8_0, true) => neon::<false, 2>(panel, g, acts, t0, tile, t, col),
                (QType::Q4_0, true) => neon::<true, 2>(panel, g, acts, t0, tile, t, col),
            }
        }
    });
}

/// [`neon_tile`] for group `g` and `T` rows from `t0`, stored at `tile`'s
/// row `at` on, column `col` on.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn neon<const Q4: bool, const T: usize>(
    panel: &Panel,
    g: usize,
    acts: &QActs,
    t0: usize,
    tile: &mut Tile,
    at: usize,
    col: usize,
) {
    // q8_0's weights are made signed again here (`smull` multiplies
    // signed by signed), so only q4_0's offset is taken back.
    let offset = if Q4 { panel.qtype.offset() } else { 0 };
    let mut y = [[vdupq_n_f32(0.0); T]; 4];
    for b in 0..panel.blocks {
        let record = panel.record(g, b);
        let rec = record.as_ptr();
        let mut x = [std::ptr::null::<i8>(); T];
        let mut dx = [0f32; T];
        // Accumulators: [4-row vector][pair of rows][token].
        let mut acc = [[[vdupq_n_s32(0); T]; 2]; 4];
        for t in 0..T {
            let (d, sum, q) = acts.block(t0 + t, b);
            dx[t] = d;
            x[t] = q.as_ptr();
            // The offset correction, split over the pair's two lanes
            // of row 0 (added back when the lanes are summed).
            let c = vsetq_lane_s32::<0>(-offset * sum, vdupq_n_s32(0));
            let c = vsetq_lane_s32::<2>(-offset * sum, c);
            for v in acc.iter_mut() {
                v[0][t] = c;
                v[1][t] = c;
            }
        }
        // SAFETY: every record is `2 · GROUP` scale bytes and then 512
        // (q8_0) or 256 (q4_0) weight bytes; every block of activations
        // 32 values.
        unsafe {
            let mut quad = |w: [int8x16_t; 4], q: usize| {
                for t in 0..T {
                    let four = std::ptr::read_unaligned(x[t].add(4 * q).cast::<i32>());
                    let xb = vreinterpretq_s8_s32(vdupq_n_s32(four));
                    for v in 0..4 {
                        acc[v][0][t] =
                            vpadalq_s16(acc[v][0][t], vmull_s8(vget_low_s8(w[v]), vget_low_s8(xb)));
                        acc[v][1][t] = vpadalq_s16(acc[v][1][t], vmull_high_s8(w[v], xb));
                    }
                }
            };
            if Q4 {
                let low = vdupq_n_u8(0x0f);
                for p in 0..4 {
                    let raw: [uint8x16_t; 4] =
                        std::array::from_fn(|v| vld1q_u8(rec.add(2 * GROUP + 64 * p + 16 * v)));
                    quad(raw.map(|r| vreinterpretq_s8_u8(vandq_u8(r, low))), p);
                    quad(raw.map(|r| vreinterpretq_s8_u8(vshrq_n_u8::<4>(r))), p + 4);
                }
            } else {
                let flip = vdupq_n_u8(0x80);
                for p in 0..8 {
                    let w: [int8x16_t; 4] = std::array::from_fn(|v| {
                        vreinterpretq_s8_u8(veorq_u8(
                            vld1q_u8(rec.add(2 * GROUP + 64 * p + 16 * v)),
                            flip,
                        ))
                    });
                    quad(w, p);
                }
            }
        }
        let mut scales = [0f32; GROUP];
        for (r, s) in scales.iter_mut().enumerate() {
            *s = half::f16::from_le_bytes([record[2 * r], record[2 * r + 1]]).to_f32();
        }
        for v in 0..4 {
            // SAFETY: four of the sixteen scales.
            let dw = unsafe { vld1q_f32(scales.as_ptr().add(4 * v)) };
            for t in 0..T {
                // Rows 4v, 4v+1 from the first pair's lanes, 4v+2, 4v+3
                // from the second's.
                let sums = vpaddq_s32(acc[v][0][t], acc[v][1][t]);
                let s = vmulq_f32(dw, vdupq_n_f32(dx[t]));
                y[v][t] = vfmaq_f32(y[v][t], vcvtq_f32_s32(sums), s);
            }
        }
    }
    for t in 0..T {
        for v in 0..4 {
            // SAFETY: `at + t < MAX_TOKENS` and `col + 16 <= MAX_GROUPS · 16`.
            unsafe { vst1q_f32(tile[at + t].as_mut_ptr().add(col + 4 * v), y[v][t]) };
        }
    }
}
