//! Asking the CPU for cache lines before they are read: the next steps of
//! A's micro-panel inside a tile, the next panel of B between tiles. A
//! prefetch neither reads, writes nor faults, so these take any address;
//! elsewhere than x86-64 the hardware prefetchers are left to it.

/// Steps of A's micro-panel ahead of the one being multiplied that a tile
/// asks into L1 (512 bytes for an AVX2 tile, as OpenBLAS's Haswell
/// kernels; 16 and 32 measured the same).
#[cfg(target_arch = "x86_64")]
const AHEAD_STEPS: usize = 8;

/// Asks for the cache lines of the micro-panel step `AHEAD_STEPS` past
/// `step` (a step of `MR` elements of `T`); the address may run past the
/// panel.
#[inline(always)]
pub(crate) fn ahead<T, const MR: usize>(step: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = MR * std::mem::size_of::<T>();
        let at = step.wrapping_add(AHEAD_STEPS * MR).cast::<i8>();
        for line in (0..bytes).step_by(64) {
            // SAFETY: a prefetch neither reads nor writes memory.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    at.wrapping_add(line),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = step;
}

/// Asks for every cache line of `data` into L2.
#[inline]
pub(crate) fn into_l2<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let at = data.as_ptr().cast::<i8>();
        for line in (0..std::mem::size_of_val(data)).step_by(64) {
            // SAFETY: a prefetch neither reads nor writes memory.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(
                    at.wrapping_add(line),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}
