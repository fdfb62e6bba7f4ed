//! Packing: a block of A into `MR`-tall micro-panels and a block of B into
//! `NR`-wide ones, each stored step by step of `k` so the microkernel reads
//! both front to back. Edges are padded with zeros to a whole panel, so
//! the kernel always runs a full tile (the padding's results are never
//! stored). Elements whose kernels take `G` consecutive depths at once
//! (bf16: 2) are stored a group at a time: `G` depths of a row (of A) or
//! column (of B) side by side, the depth padded with zeros to whole groups.

use crate::kernel::Element;
use crate::mat::MatRef;

/// Packs rows `i0..i0 + m` and depths `p0..p0 + k` of `a` into `out`:
/// panel `r` (rows `i0 + r·mr ..`) at `r·k'·mr` (`k'`: `k` in whole
/// groups of `G`), element `(i, p)` of it at `(p / G·mr + i)·G + p % G`.
#[allow(clippy::too_many_arguments)]
pub fn pack_a<T: Element>(
    a: &MatRef<'_, T>,
    i0: usize,
    m: usize,
    p0: usize,
    k: usize,
    mr: usize,
    out: &mut [T],
) {
    let (data, rs, cs) = a.raw();
    let g = T::GROUP;
    let kp = k.next_multiple_of(g);
    for (r, panel) in out
        .chunks_exact_mut(kp * mr)
        .take(m.div_ceil(mr))
        .enumerate()
    {
        let top = i0 + r * mr;
        let rows = (m - r * mr).min(mr);
        if g > 1 {
            // Group `p / g`, row `i`, depth `p % g` of the group; read in
            // storage order.
            if rows < mr || !k.is_multiple_of(g) {
                panel.fill(T::PAD);
            }
            if rs == 1 {
                for p in 0..k {
                    let column = &data[top + (p0 + p) * cs..][..rows];
                    for (i, &x) in column.iter().enumerate() {
                        panel[((p / g) * mr + i) * g + p % g] = T::pack_a(x);
                    }
                }
            } else {
                for i in 0..rows {
                    for p in 0..k {
                        panel[((p / g) * mr + i) * g + p % g] =
                            T::pack_a(data[(top + i) * rs + (p0 + p) * cs]);
                    }
                }
            }
        } else if rs == 1 || cs != 1 {
            // Column-major (or neither): a step's rows are one column.
            for (p, dst) in panel.chunks_exact_mut(mr).enumerate() {
                let base = top * rs + (p0 + p) * cs;
                for (i, d) in dst[..rows].iter_mut().enumerate() {
                    *d = T::pack_a(data[base + i * rs]);
                }
                dst[rows..].fill(T::PAD);
            }
        } else {
            // Row-major: read each row front to back.
            for i in 0..rows {
                let row = &data[(top + i) * rs + p0..][..k];
                for (p, &x) in row.iter().enumerate() {
                    panel[p * mr + i] = T::pack_a(x);
                }
            }
            if rows < mr {
                for dst in panel.chunks_exact_mut(mr) {
                    dst[rows..].fill(T::PAD);
                }
            }
        }
    }
}

/// Packs depths `p0..p0 + k` and columns `j0..j0 + n` of `b` into `out`,
/// panels `first..last` only (threads pack a block's panels between them):
/// panel `c` (columns `j0 + c·nr ..`, `w` of them: `nr`, or fewer in the
/// last) at `c·k'·nr`, element `(p, j)` of it at `(p / G·w + j)·G + p % G`.
/// A narrow panel is packed as narrow as it is, so a tile of its width
/// reads it without striding over padding (a decode step's one column
/// would otherwise fill twelve times the cache lines it needs).
#[allow(clippy::too_many_arguments)]
pub fn pack_b<T: Element>(
    b: &MatRef<'_, T>,
    p0: usize,
    k: usize,
    j0: usize,
    n: usize,
    nr: usize,
    panels: std::ops::Range<usize>,
    out: &mut [T],
) {
    let (data, rs, cs) = b.raw();
    let g = T::GROUP;
    let kp = k.next_multiple_of(g);
    for (c, slot) in panels.zip(out.chunks_exact_mut(kp * nr)) {
        let left = j0 + c * nr;
        let w = (n - c * nr).min(nr);
        let panel = &mut slot[..kp * w];
        if g > 1 {
            // Group `p / g`, column `j`, depth `p % g` of the group; read
            // in storage order.
            if !k.is_multiple_of(g) {
                panel.fill(T::PAD);
            }
            if cs == 1 {
                for p in 0..k {
                    let row = &data[(p0 + p) * rs + left..][..w];
                    for (j, &x) in row.iter().enumerate() {
                        panel[((p / g) * w + j) * g + p % g] = x;
                    }
                }
            } else {
                for j in 0..w {
                    for p in 0..k {
                        panel[((p / g) * w + j) * g + p % g] =
                            data[(p0 + p) * rs + (left + j) * cs];
                    }
                }
            }
        } else if cs == 1 {
            // Row-major: a step's columns are one row.
            for (p, dst) in panel.chunks_exact_mut(w).enumerate() {
                let base = (p0 + p) * rs + left;
                dst.copy_from_slice(&data[base..base + w]);
            }
        } else {
            // Column-major (or neither): read each column front to back.
            for j in 0..w {
                let base = p0 * rs + (left + j) * cs;
                for p in 0..k {
                    panel[p * w + j] = data[base + p * rs];
                }
            }
        }
    }
}
