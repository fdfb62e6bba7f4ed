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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bf16, Isa};

    /// A kernel of `isa` with MR 32, KC 2048, MC 256 (the AMX bf16
    /// tile's shape), whatever this CPU runs: only its numbers are read.
    fn shaped(isa: Isa) -> Kernel<Bf16> {
        let mut k = *Kernel::<Bf16>::all().next().expect("the portable kernel");
        (k.isa, k.mr, k.kc, k.mc) = (isa, 32, 2048, 256);
        k
    }

    #[test]
    fn amx_blocks_of_a_keep_their_bytes_at_shallow_depths() {
        let amx = shaped(Isa::Amx);
        // At the tile's own depth (and deeper blocks never occur), MC.
        assert_eq!(rows(&amx, 2048), 256);
        // Shallower: MC x KC's elements, in whole tiles of rows.
        assert_eq!(rows(&amx, 1024), 512);
        assert_eq!(rows(&amx, 384), 1344);
        assert_eq!(rows(&amx, 1000) % 32, 0);
        assert!(rows(&amx, 1000) * 1000 <= 256 * 2048);
        // Never fewer than MC, whatever the depth.
        assert_eq!(rows(&amx, 0), 256);
        assert_eq!(rows(&amx, 4096), 256);
    }

    #[test]
    fn other_kernels_keep_mc_at_every_depth() {
        let avx = shaped(Isa::Avx512);
        for kcb in [0, 2, 384, 2048] {
            assert_eq!(rows(&avx, kcb), 256);
        }
    }
}
