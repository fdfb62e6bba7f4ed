//! [`super::pack_a`] of a column-major block where AVX2 runs: a step of
//! depth at a time across every panel of the block, each depth's run of
//! rows read front to back (the hardware prefetchers follow it, and the
//! next steps' runs are asked for ahead), where a panel at a time would
//! read one cache line from each of the depth's rows before moving on.

use super::Element;
#[cfg(target_arch = "x86_64")]
use super::x86;
use crate::mat::MatRef;

/// [`super::pack_a`] of a column-major block of plain elements (groups of one,
/// unflipped) where AVX2 copies it: depth by depth, each depth's rows of
/// every panel read in one run ([`x86::copy_block`]). Whether it did.
pub(super) fn copy<T: Element>(
    a: &MatRef<'_, T>,
    i0: usize,
    m: usize,
    p0: usize,
    k: usize,
    mr: usize,
    out: &mut [T],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let (data, rs, cs) = a.raw();
        if rs != 1 || T::GROUP != 1 || T::A_FLIP != 0 || !crate::isa::Isa::Avx2.available() {
            return false;
        }
        let (panels, last) = prepare(data.len(), cs, i0, m, p0, k, mr, out);
        let size = std::mem::size_of::<T>();
        // SAFETY: every depth's run of rows ends inside `data` and every
        // panel's steps inside `out` (`prepare` asserts it); Element's types are plain
        // bits, copied unchanged (no flip: asserted above); AVX2 runs.
        unsafe {
            x86::copy_block(
                data.as_ptr().add(i0 + p0 * cs).cast(),
                cs * size,
                k,
                panels,
                mr * size,
                last * size,
                out.as_mut_ptr().cast(),
                k * mr * size,
            )
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, i0, m, p0, k, mr, out);
        false
    }
}

/// [`super::pack_a`] of a column-major block of grouped elements (bf16
/// pairs, int8 fours: 4 bytes a group) of whole groups of depth where
/// AVX2 interleaves them: a step at a time, its `G` runs of rows each
/// read once across every panel ([`x86::interleave_block`]); A's map
/// (int8's flip) applied. Whether it did. (A bf16 product's `Bᵀ` at n =
/// 1024 read a panel at a time: 10.6% of its time on one thread.)
pub(super) fn interleave<T: Element>(
    a: &MatRef<'_, T>,
    i0: usize,
    m: usize,
    p0: usize,
    k: usize,
    mr: usize,
    out: &mut [T],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let (data, rs, cs) = a.raw();
        let (g, size) = (T::GROUP, std::mem::size_of::<T>());
        if rs != 1
            || g == 1
            || size * g != 4
            || !k.is_multiple_of(g)
            || !crate::isa::Isa::Avx2.available()
        {
            return false;
        }
        prepare(data.len(), cs, i0, m, p0, k, mr, out);
        // SAFETY: every depth's run of rows ends inside `data` and every
        // panel's steps inside `out` (`prepare` asserts it); Element's types are plain
        // bits, moved a group (4 bytes) at a time, A's flipped as its
        // packing says; AVX2 runs.
        unsafe {
            x86::interleave_block(
                data.as_ptr().add(i0 + p0 * cs).cast(),
                cs * size,
                k / g,
                g,
                m,
                mr,
                T::A_FLIP,
                out.as_mut_ptr().cast(),
                k * mr * size,
            )
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, i0, m, p0, k, mr, out);
        false
    }
}

/// The block's panels and its last panel's rows, that panel's padding
/// rows set to `T::PAD` (the step loops write only the rows that exist).
///
/// # Panics
/// Unless every depth's run of rows (`m` from `i0`, depth `p` at `(p0 +
/// p)·cs`) lies inside the `data_len` elements, and every panel inside
/// `out`: what the step loops' safety rests on.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn prepare<T: Element>(
    data_len: usize,
    cs: usize,
    i0: usize,
    m: usize,
    p0: usize,
    k: usize,
    mr: usize,
    out: &mut [T],
) -> (usize, usize) {
    let panels = m.div_ceil(mr);
    let last = m - (panels - 1) * mr;
    // The last depth's last row, and the last panel's last step.
    assert!(i0 + (p0 + k - 1) * cs + m <= data_len && panels * k * mr <= out.len());
    if last < mr {
        out[(panels - 1) * k * mr..][..k * mr].fill(T::PAD);
    }
    (panels, last)
}
