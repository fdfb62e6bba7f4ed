//! Packing: a block of A into `MR`-tall micro-panels and a block of B into
//! `NR`-wide ones, each stored step by step of `k` so the microkernel reads
//! both front to back. Edges are padded with zeros to a whole panel, so
//! the kernel always runs a full tile (the padding's results are never
//! stored). Elements whose kernels take `G` consecutive depths at once
//! (bf16: 2, int8: 4) are stored a group at a time: `G` depths of a row
//! (of A) or column (of B) side by side, the depth padded with zeros to
//! whole groups.
//!
//! Packing is copying, but it is on every product's path (a product of
//! n = 384 packs as many elements as it does multiply-adds per 384), so
//! each layout has its own loop: an operand whose panel steps are
//! contiguous in memory is copied (or, by groups, interleaved) a step at
//! a time; one whose panel steps cut across its storage (B column-major,
//! A row-major: both operands of a row-major product, which the driver
//! multiplies transposed) is transposed in blocks of a few steps, each
//! source run read once, front to back.

mod block;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::kernel::{Element, PanelOrder};
use crate::mat::MatRef;

/// Groups of a strided operand transposed per block by the portable loop:
/// a cache line or two of each source run read before the next run's.
const BLOCK: usize = 16;

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
    let kp = k.next_multiple_of(T::GROUP);
    if m > 0
        && k > 0
        && (block::copy(a, i0, m, p0, k, mr, out) || block::interleave(a, i0, m, p0, k, mr, out))
    {
        return;
    }
    for (r, panel) in out
        .chunks_exact_mut(kp * mr)
        .take(m.div_ceil(mr))
        .enumerate()
    {
        let rows = (m - r * mr).min(mr);
        pack_panel(a.raw(), i0 + r * mr, rows, mr, p0, k, true, panel);
    }
}

/// Packs depths `p0..p0 + k` and columns `j0..j0 + n` of `b` into `out`,
/// panels `first..last` only (threads pack a block's panels between them):
/// panel `c` (columns `j0 + c·nr ..`, `w` of them: `nr`, or fewer in the
/// last) at `c·k'·nr`, element `(p, j)` of it at `(p / G·w + j)·G + p % G`.
/// A narrow panel is packed as narrow as it is, so a tile of its width
/// reads it without striding over padding (a decode step's one column
/// would otherwise fill twelve times the cache lines it needs).
///
/// A panel of B is a panel of `Bᵀ`'s rows, as A's are packed: `B`'s view
/// with its strides swapped.
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
    let kp = k.next_multiple_of(T::GROUP);
    for (c, slot) in panels.zip(out.chunks_exact_mut(kp * nr)) {
        let w = (n - c * nr).min(nr);
        pack_panel(
            (data, cs, rs),
            j0 + c * nr,
            w,
            w,
            p0,
            k,
            false,
            &mut slot[..kp * w],
        );
    }
}

/// [`pack_b`] into the order `order` says: a [`PanelOrder::Chunks`]
/// kernel's panels are copied straight into chunks from a B whose columns
/// are contiguous (a column-major B, or the `Aᵀ` of a row-major product:
/// each column's 16 groups of a chunk are one run of its storage), else
/// packed step by step and rearranged ([`chunk_panels`]). `out` holds
/// the panels `panels` (from the first, `k'·nr` apart) and may be longer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_b_in<T: Element>(
    order: PanelOrder,
    b: &MatRef<'_, T>,
    p0: usize,
    k: usize,
    j0: usize,
    n: usize,
    nr: usize,
    panels: std::ops::Range<usize>,
    out: &mut [T],
) {
    let kp = k.next_multiple_of(T::GROUP);
    let out = &mut out[..panels.len() * kp * nr];
    match order {
        PanelOrder::Steps => pack_b(b, p0, k, j0, n, nr, panels, out),
        PanelOrder::Chunks if b.raw().1 == 1 => copy_chunks(b, p0, k, j0, n, nr, panels, out),
        PanelOrder::Chunks => {
            let first = panels.start;
            pack_b(b, p0, k, j0, n, nr, panels, out);
            chunk_panels(kp, nr, n, first, out);
        }
    }
}

/// [`pack_b_in`]'s copy of a B with contiguous columns into chunks: panel
/// `c` of `panels` at `c'·k'·nr` (`c'` counted from the first), chunk `q`
/// of it (`s` groups) at group `16q·w`, column `j`'s run at `j·s` within.
#[allow(clippy::too_many_arguments)]
fn copy_chunks<T: Element>(
    b: &MatRef<'_, T>,
    p0: usize,
    k: usize,
    j0: usize,
    n: usize,
    nr: usize,
    panels: std::ops::Range<usize>,
    out: &mut [T],
) {
    let (data, _, cs) = b.raw();
    let g = T::GROUP;
    let kp = k.next_multiple_of(g);
    let groups = kp / g;
    if !k.is_multiple_of(g) {
        // The last group's depths past k stay zero.
        out.fill(T::PAD);
    }
    for (c, slot) in panels.zip(out.chunks_exact_mut(kp * nr)) {
        let w = (n - c * nr).min(nr);
        for (q, chunk) in slot[..kp * w].chunks_mut(CHUNK * w * g).enumerate() {
            let s = CHUNK.min(groups - q * CHUNK);
            let depth = q * CHUNK * g;
            // The depths of this chunk that exist (all but a partial
            // last group's).
            let have = (s * g).min(k - depth);
            for (jj, run) in chunk.chunks_exact_mut(s * g).enumerate() {
                let col = (j0 + c * nr + jj) * cs + p0 + depth;
                let (from, to) = (&data[col..col + have], &mut run[..have]);
                if std::mem::size_of_val(from) == 64 {
                    // A whole chunk's run, one cache line: a copy of a
                    // constant size is two vector moves where a slice copy
                    // of this length is a call to memcpy (3% of a bf16
                    // MiniLM forward on AMX, its own cost beside the copy).
                    // SAFETY: `from` and `to` are 64 bytes each, and `to`
                    // is in `out`, which does not alias `b`'s data.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            from.as_ptr().cast::<u8>(),
                            to.as_mut_ptr().cast::<u8>(),
                            64,
                        )
                    };
                } else {
                    to.copy_from_slice(from);
                }
            }
        }
    }
}

/// Steps of depth in a chunk of [`chunk_panels`]' order.
pub(crate) const CHUNK: usize = 16;

/// Arranges packed panels of B ([`pack_b`]'s, each `kp` deep, `nr` apart;
/// from panel `first` of a block of `nb` columns, so a last one is as
/// narrow as it was packed) in chunks of [`CHUNK`] steps: in chunk `q`
/// (steps `16q ..`, `s` of them: 16, or fewer in the last), column `j`'s
/// `s` groups side by side at group `16q·w + j·s` — the order AMX's
/// kernels read, a tile row being one column's groups. A chunk holds the
/// same steps in either order, so each is rearranged in place.
fn chunk_panels<T: Element>(kp: usize, nr: usize, nb: usize, first: usize, panels: &mut [T]) {
    let steps = kp / T::GROUP;
    if steps == 0 || kp * nr == 0 {
        return;
    }
    let size = std::mem::size_of::<T>();
    // SAFETY: Element's types are plain bits (any bytes moved elsewhere
    // are the same value); the view covers exactly `panels`.
    let bytes: &mut [u8] = unsafe {
        std::slice::from_raw_parts_mut(panels.as_mut_ptr().cast(), std::mem::size_of_val(panels))
    };
    // Bytes of a group.
    let gb = T::GROUP * size;
    let mut temp = vec![0u8; CHUNK * nr * gb];
    for (c, panel) in bytes.chunks_exact_mut(kp * nr * size).enumerate() {
        let w = nr.min(nb - (first + c) * nr);
        for (q, chunk) in panel[..kp * w * size]
            .chunks_mut(CHUNK * w * gb)
            .enumerate()
        {
            let s = CHUNK.min(steps - q * CHUNK);
            let temp = &mut temp[..s * w * gb];
            temp.copy_from_slice(chunk);
            for (t, step) in temp.chunks_exact(w * gb).enumerate() {
                for (j, group) in step.chunks_exact(gb).enumerate() {
                    let at = (j * s + t) * gb;
                    chunk[at..at + gb].copy_from_slice(group);
                }
            }
        }
    }
}

/// One panel: rows `top..top + rows` and depths `p0..p0 + k` of the matrix
/// `(data, rs, cs)`, `width >= rows` wide (the rest padding), element
/// `(i, p)` at `(p / G·width + i)·G + p % G` (through the element's A map
/// when `a_side`). A column-major matrix's steps are contiguous runs of
/// rows, copied or interleaved a step at a time; a row-major one's rows
/// are contiguous runs of depths, transposed.
#[allow(clippy::too_many_arguments)]
fn pack_panel<T: Element>(
    (data, rs, cs): (&[T], usize, usize),
    top: usize,
    rows: usize,
    width: usize,
    p0: usize,
    k: usize,
    a_side: bool,
    panel: &mut [T],
) {
    let g = T::GROUP;
    if rows < width || !k.is_multiple_of(g) {
        panel.fill(T::PAD);
    }
    if rs == 1 {
        // A group's rows are G columns, side by side: every whole group
        // in one call where AVX2 interleaves them, any others (and the
        // last, partial one) a step at a time.
        let done = interleave_panel((data, cs), top, rows, width, p0, k / g, a_side, panel);
        for (q, step) in panel.chunks_exact_mut(width * g).enumerate().skip(done) {
            let depths = g.min(k - q * g);
            let column = |s: usize| &data[top + (p0 + q * g + s) * cs..][..rows];
            interleave(&mut step[..rows * g], g, depths, column, a_side);
        }
    } else if cs == 1 {
        transpose(&data[top * rs + p0..], rs, rows, width, k, a_side, panel);
    } else {
        for i in 0..rows {
            for p in 0..k {
                let x = data[(top + i) * rs + (p0 + p) * cs];
                panel[((p / g) * width + i) * g + p % g] = if a_side { T::pack_a(x) } else { x };
            }
        }
    }
}

/// The first `steps` whole groups of depths of a column-major panel
/// (rows `top..top + rows`, depths from `p0`, steps `width` groups apart
/// in `panel`) interleaved in one call where AVX2 can (groups of 4
/// bytes); how many it packed (0: none, the caller packs them).
#[allow(clippy::too_many_arguments)]
fn interleave_panel<T: Element>(
    (data, cs): (&[T], usize),
    top: usize,
    rows: usize,
    width: usize,
    p0: usize,
    steps: usize,
    a_side: bool,
    panel: &mut [T],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    let g = T::GROUP;
    #[cfg(target_arch = "x86_64")]
    if g > 1
        && steps > 0
        && rows > 0
        && std::mem::size_of::<T>() * g == 4
        && crate::isa::Isa::Avx2.available()
    {
        // The last step's last run, and the last step's groups.
        let end = top + (p0 + steps * g - 1) * cs + rows;
        assert!(end <= data.len() && (steps - 1) * width * g + rows * g <= panel.len());
        let size = std::mem::size_of::<T>();
        let flip = if a_side { T::A_FLIP } else { 0 };
        // SAFETY: every step's runs end by `end` inside `data` and its
        // groups inside `panel` (asserted); Element's types are plain bits,
        // moved a group (4 bytes) at a time, A's flipped as its packing
        // says; the CPU runs AVX2.
        unsafe {
            x86::interleave_steps(
                data.as_ptr().add(top + p0 * cs).cast(),
                cs * size,
                steps,
                g,
                rows,
                flip,
                panel.as_mut_ptr().cast(),
                width * g * size,
            )
        };
        return steps;
    }
    let _ = (data, cs, top, rows, width, p0, steps, a_side, panel);
    0
}

/// One step of a panel (rows of A or columns of B, `g` depths each) from
/// the `depths <= g` runs `run(s)` that hold depth `s` of each:
/// `dst[i·g + s] = run(s)[i]` (through the element's A map when `a_side`).
/// Depths past `depths` are left as they are (padding). The steps AVX2
/// interleaves go through [`interleave_panel`] instead, a panel at a time.
fn interleave<'d, T: Element>(
    dst: &mut [T],
    g: usize,
    depths: usize,
    run: impl Fn(usize) -> &'d [T],
    a_side: bool,
) {
    let f = |x| if a_side { T::pack_a(x) } else { x };
    match (g, depths) {
        (1, 1) => {
            for (d, &x) in dst.iter_mut().zip(run(0)) {
                *d = f(x);
            }
        }
        (2, 2) => {
            let (x0, x1) = (run(0), run(1));
            for ((d, &a), &b) in dst.chunks_exact_mut(2).zip(x0).zip(x1) {
                d[0] = f(a);
                d[1] = f(b);
            }
        }
        (4, 4) => {
            let (x0, x1, x2, x3) = (run(0), run(1), run(2), run(3));
            for ((((d, &a), &b), &c), &e) in dst.chunks_exact_mut(4).zip(x0).zip(x1).zip(x2).zip(x3)
            {
                d[0] = f(a);
                d[1] = f(b);
                d[2] = f(c);
                d[3] = f(e);
            }
        }
        _ => {
            for s in 0..depths {
                for (i, &x) in run(s).iter().enumerate() {
                    dst[i * g + s] = f(x);
                }
            }
        }
    }
}

/// `runs` runs of depths, run `j` at `src[j·stride ..]` and `k` long, laid
/// side by side `width` apart a group of `G` depths at a time: depth `p`
/// of run `j` at `dst[(p / G·width + j)·G + p % G]` (through the
/// element's A map when `a_side`). With AVX2, a block of runs' groups at
/// a time in registers (`x86`), where a group is 4 or 8 bytes; else
/// [`transpose_portable`].
fn transpose<T: Element>(
    src: &[T],
    stride: usize,
    runs: usize,
    width: usize,
    k: usize,
    a_side: bool,
    dst: &mut [T],
) {
    if runs == 0 {
        return;
    }
    let (g, full) = (T::GROUP, k / T::GROUP);
    // Every run's whole groups and their places, checked once.
    assert!(runs <= width);
    assert!((runs - 1) * stride + full * g <= src.len() && full * width * g <= dst.len());
    #[cfg(target_arch = "x86_64")]
    if crate::isa::Isa::Avx2.available() {
        let unit = std::mem::size_of::<T>() * g;
        if unit == 4 || unit == 8 {
            let flip = if a_side { T::A_FLIP } else { 0 };
            // SAFETY: the bounds asserted above; Element's types are plain
            // bits, so a group's bytes may be moved as one unit (A's with
            // the bits its packing flips flipped); the CPU runs AVX2.
            unsafe {
                x86::transpose(
                    src.as_ptr().cast(),
                    stride * std::mem::size_of::<T>(),
                    runs,
                    width,
                    full,
                    unit,
                    flip,
                    dst.as_mut_ptr().cast(),
                )
            };
            // The last group, when short of G depths.
            transpose_portable(src, stride, runs, width, full * g..k, a_side, dst);
            return;
        }
    }
    transpose_portable(src, stride, runs, width, 0..k, a_side, dst);
}

/// [`transpose`] of depths `depths` (starting at a whole group), a block
/// of groups read from each run in turn, so every run is read front to
/// back a cache line at a time and the block's steps stay in L1 while
/// they fill.
fn transpose_portable<T: Element>(
    src: &[T],
    stride: usize,
    runs: usize,
    width: usize,
    depths: std::ops::Range<usize>,
    a_side: bool,
    dst: &mut [T],
) {
    let g = T::GROUP;
    let f = |x| if a_side { T::pack_a(x) } else { x };
    for p0 in depths.clone().step_by(BLOCK * g) {
        let p1 = (p0 + BLOCK * g).min(depths.end);
        for j in 0..runs {
            for (p, &x) in (p0..p1).zip(&src[j * stride + p0..j * stride + p1]) {
                dst[((p / g) * width + j) * g + p % g] = f(x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bf16;

    /// The transposes with AVX2 and without agree on every shape: runs
    /// past and short of a register's block, depths past and short of a
    /// whole group and block, odd strides (unaligned units), both sides.
    fn agree<T: Element + PartialEq + std::fmt::Debug>(from: impl Fn(usize) -> T) {
        for (runs, width) in [(1, 1), (3, 6), (6, 6), (8, 8), (5, 8), (12, 12), (11, 48)] {
            for k in [1, 2, 3, 5, 7, 8, 17, 64, 100] {
                for a_side in [false, true] {
                    let stride = k + 3;
                    let src: Vec<T> = (0..runs * stride).map(&from).collect();
                    let len = k.next_multiple_of(T::GROUP) * width;
                    let (mut fast, mut plain) = (vec![T::PAD; len], vec![T::PAD; len]);
                    transpose(&src, stride, runs, width, k, a_side, &mut fast);
                    transpose_portable(&src, stride, runs, width, 0..k, a_side, &mut plain);
                    assert_eq!(fast, plain, "{} runs {runs} width {width} k {k}", T::NAME);
                    // Every depth of every run somewhere, once.
                    let g = T::GROUP;
                    for j in 0..runs {
                        for p in 0..k {
                            let want = if a_side {
                                T::pack_a(src[j * stride + p])
                            } else {
                                src[j * stride + p]
                            };
                            assert_eq!(plain[((p / g) * width + j) * g + p % g], want);
                        }
                    }
                }
            }
        }
    }

    /// A column-major panel's whole groups interleaved a panel at a time
    /// with AVX2 agree with the plain loop step by step: rows past and
    /// short of a vector, padded panels, one step and several, both sides.
    fn interleaves_agree<T: Element + PartialEq + std::fmt::Debug>(from: impl Fn(usize) -> T) {
        let g = T::GROUP;
        let (top, p0) = (2, 1);
        for (rows, width) in [
            (1, 8),
            (7, 8),
            (15, 16),
            (16, 16),
            (17, 48),
            (31, 32),
            (32, 32),
            (33, 48),
            (48, 48),
            (100, 100),
        ] {
            for steps in [1, 3] {
                for a_side in [false, true] {
                    let cs = rows + top + 5;
                    let src: Vec<T> = (0..(p0 + steps * g) * cs).map(&from).collect();
                    let column = |q: usize, s: usize| &src[top + (p0 + q * g + s) * cs..][..rows];
                    let len = steps * width * g;
                    let (mut fast, mut plain) = (vec![T::PAD; len], vec![T::PAD; len]);
                    let done = interleave_panel(
                        (&src, cs),
                        top,
                        rows,
                        width,
                        p0,
                        steps,
                        a_side,
                        &mut fast,
                    );
                    assert_eq!(done, steps, "AVX2 takes every whole group here");
                    for (q, step) in plain.chunks_exact_mut(width * g).enumerate() {
                        interleave(&mut step[..rows * g], g, g, |s| column(q, s), a_side);
                    }
                    assert_eq!(fast, plain, "{} rows {rows} steps {steps}", T::NAME);
                    for q in 0..steps {
                        for i in 0..rows {
                            for s in 0..g {
                                let x = column(q, s)[i];
                                let want = if a_side { T::pack_a(x) } else { x };
                                assert_eq!(plain[(q * width + i) * g + s], want);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn interleaves_agree_with_and_without_avx2() {
        if !crate::isa::Isa::Avx2.available() {
            eprintln!("AVX2 interleave: not run here (no AVX2)");
            return;
        }
        interleaves_agree(|i| Bf16((i * 7919) as u16));
        interleaves_agree(|i| (i * 31 % 256) as u8 as i8);
    }

    #[test]
    fn pack_a_flips_the_bits_its_element_says() {
        fn flips<T: Element>(values: &[T]) {
            for &x in values {
                let size = std::mem::size_of::<T>();
                // SAFETY: plain bits (Element's contract), read as bytes.
                let bytes = |v: &T| unsafe {
                    std::slice::from_raw_parts((v as *const T).cast::<u8>(), size).to_vec()
                };
                let want: Vec<u8> = bytes(&x).iter().map(|b| b ^ T::A_FLIP).collect();
                assert_eq!(bytes(&T::pack_a(x)), want, "{}", T::NAME);
            }
        }
        flips(&[0.0f64, -1.5, 3.25]);
        flips(&[0.0f32, -1.5, 3.25]);
        flips(&[Bf16(0), Bf16(0x3F80), Bf16(0xBF80)]);
        flips(&[0i8, -128, 127, -1, 5]);
    }

    #[test]
    fn transposes_agree_with_and_without_avx2() {
        agree(|i| i as f64 + 0.5);
        agree(|i| i as f32 - 0.25);
        agree(|i| Bf16(i as u16 ^ 0x3F00));
        agree(|i| (i % 251) as i8);
    }
}
