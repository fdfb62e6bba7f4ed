//! What the threads of a row-split product share: B's packed blocks (and
//! int8's column corrections), two of each so one is written, a part per
//! thread, while the other may still be read, and the barrier itself.

use std::ops::DerefMut;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::blocking::depth;
use crate::kernel::{Element, Kernel, Scalar};
use crate::scratch::Scratch;

/// B's packed blocks and their columns' corrections, shared by a
/// row-split team: with several threads, slot `s % 2` holds step `s` of
/// the product. A thread packing step `s + 1` has passed step `s`'s
/// barrier, so every thread has finished step `s - 1`, the only one that
/// read that slot: one barrier per step instead of two (one to publish the
/// block, one to free it). A thread alone reuses one slot, still warm in
/// its caches.
pub(crate) struct Shared<T: Element> {
    /// The blocks' panels, `block` elements per slot.
    pub(crate) b: Region<T, Scratch<T>>,
    /// Their corrections, `cols` per slot (empty when the element needs
    /// none).
    pub(crate) corr: Region<T::Acc, Vec<T::Acc>>,
    /// One slot's length in `b`.
    block: usize,
    /// One slot's length in `corr`.
    cols: usize,
    /// 2, or 1 for a thread alone.
    slots: usize,
}

impl<T: Element> Shared<T> {
    /// Room for the packed blocks of B of `kernel` for a product of depth
    /// `k` and `n` columns, for a team of `threads`.
    pub(crate) fn new(kernel: &Kernel<T>, k: usize, n: usize, threads: usize) -> Self {
        let cols = kernel.nc.min(n.div_ceil(kernel.nr) * kernel.nr);
        let block = depth(kernel, k) * cols;
        let corr_cols = if T::CORRECTED { cols } else { 0 };
        let slots = if threads > 1 { 2 } else { 1 };
        Shared {
            b: Region::new(Scratch::new(slots * block)),
            corr: Region::new(vec![T::Acc::ZERO; slots * corr_cols]),
            block,
            cols: corr_cols,
            slots,
        }
    }

    /// Where step `step`'s slot starts in `b` and in `corr`.
    pub(crate) fn slot(&self, step: usize) -> (usize, usize) {
        let s = step % self.slots;
        (s * self.block, s * self.cols)
    }
}

/// A buffer the team's threads write between barriers, each its own part,
/// and read after.
pub(crate) struct Region<U, S> {
    /// The storage `ptr` points into; never touched otherwise.
    _buf: S,
    ptr: *mut U,
    len: usize,
}

// SAFETY: written only between barriers, each thread its own panels, and
// read only after the barrier that ends the writing (see `Job::rows`).
unsafe impl<U: Send, S: Send> Sync for Region<U, S> {}

impl<U, S: DerefMut<Target = [U]>> Region<U, S> {
    fn new(mut buf: S) -> Self {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        Region {
            _buf: buf,
            ptr,
            len,
        }
    }

    /// `len` elements from `at`, to write.
    ///
    /// # Safety
    /// No other thread reads or writes them until the next barrier.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get_mut(&self, at: usize, len: usize) -> &mut [U] {
        assert!(at + len <= self.len);
        // SAFETY: inside the allocation (asserted), and this thread's alone
        // (the caller's promise).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at), len) }
    }

    /// `len` elements from `at`, to read.
    ///
    /// # Safety
    /// No thread writes them until the next barrier.
    pub(crate) unsafe fn get(&self, at: usize, len: usize) -> &[U] {
        assert!(at + len <= self.len);
        // SAFETY: inside the allocation (asserted); nobody writes meanwhile
        // (the caller's promise).
        unsafe { std::slice::from_raw_parts(self.ptr.add(at), len) }
    }
}

/// A barrier that spins (then yields, when there are more threads than
/// CPUs): with one thread per core a wake-up costs nanoseconds, not a
/// futex round trip.
pub(crate) struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    pub(crate) const fn new(parties: usize) -> Self {
        SpinBarrier {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    pub(crate) fn wait(&self) {
        if self.parties <= 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            spins += 1;
            if spins < 10_000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}
