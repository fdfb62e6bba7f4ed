//! Block sizes: how deep a packed block goes, and blocks that cover a
//! length evenly.

use crate::kernel::{Element, Kernel};

/// The depth a packed block of `kernel` takes at most for a product of
/// depth `k`: `KC`, or `k` rounded up to whole groups when shallower.
pub(crate) fn depth<T: Element>(kernel: &Kernel<T>, k: usize) -> usize {
    kernel.kc.min(k.next_multiple_of(T::GROUP))
}

/// The size of the blocks, each a multiple of `unit` and at most `max`
/// (itself a multiple of `unit`), that cover `len` as evenly as they go:
/// 384 deep with blocks of up to 256 is two of 192, not 256 and 128.
pub(crate) fn balanced(len: usize, max: usize, unit: usize) -> usize {
    let blocks = len.div_ceil(max).max(1);
    (len.div_ceil(blocks).div_ceil(unit) * unit).clamp(unit, max)
}

/// The rows a packed block of A takes at most beside a depth block of
/// `kcb`: `MC`, and on AMX's tiles as many more as keep the block's bytes
/// those of `MC` rows `KC` deep (about 1 MiB, in L2). A shallow product's
/// block then holds more of A's panels, each micro-panel of B (a tile's
/// other operand, from L1 once loaded) meeting all of them before the
/// next is read: at a depth of 384 (a small encoder's layers), 256 rows
/// left B's panels to be read six times from L3 (bf16, 4096 x 384 times
/// 384 x 1536, one thread: 730-800 GFLOP/s with 256 rows, 800-890 with
/// 1536).
pub(crate) fn rows<T: Element>(kernel: &Kernel<T>, kcb: usize) -> usize {
    if kernel.isa != crate::Isa::Amx || kcb == 0 {
        return kernel.mc;
    }
    (kernel.mc * kernel.kc / kcb / kernel.mr * kernel.mr).max(kernel.mc)
}
