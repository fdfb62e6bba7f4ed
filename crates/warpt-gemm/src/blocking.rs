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
