//! The quantized product in plain Rust: what any CPU runs, and the
//! arithmetic every other kernel must reproduce (per block an exact
//! integer sum, then one f32 multiply-add by the two scales).

use super::{BLOCK, GROUP, QType, Span, Tile};

/// Row `r`'s weights of a record, unsigned (see [`super::place`]).
fn weights(qtype: QType, record: &[u8], r: usize) -> [i32; BLOCK] {
    let w = &record[2 * GROUP..];
    let mut out = [0; BLOCK];
    for q in 0..BLOCK / 4 {
        for j in 0..4 {
            out[4 * q + j] = match qtype {
                QType::Q8_0 => i32::from(w[64 * q + 4 * r + j]),
                QType::Q4_0 => {
                    let byte = w[64 * (q % 4) + 4 * r + j];
                    i32::from(if q < 4 { byte & 0x0f } else { byte >> 4 })
                }
            };
        }
    }
    out
}

/// Groups `g..g + rg` against activation rows `t0..t0 + tn` into `tile`.
pub(super) fn tile(span: Span, tile: &mut Tile) {
    let (panel, acts) = (span.panel, span.acts);
    let (g, rg, t0, tn) = (span.g, span.rg, span.t0, span.tn);
    let offset = panel.qtype.offset();
    for b in 0..panel.blocks {
        for gi in 0..rg {
            let record = panel.record(g + gi, b);
            for r in 0..GROUP {
                let dw = half::f16::from_le_bytes([record[2 * r], record[2 * r + 1]]).to_f32();
                let w = weights(panel.qtype, record, r);
                for (ti, row) in tile.iter_mut().take(tn).enumerate() {
                    let (dx, sum, x) = acts.block(t0 + ti, b);
                    let dot: i32 = w.iter().zip(x).map(|(w, x)| w * i32::from(*x)).sum();
                    let exact = dot - offset * sum;
                    // One fused multiply-add, as the vector kernels do: all
                    // kernels agree to the bit.
                    let y = &mut row[gi * GROUP + r];
                    *y = (exact as f32).mul_add(dw * dx, *y);
                }
            }
        }
    }
}
