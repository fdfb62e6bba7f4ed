//! Buffers each thread keeps from product to product: packing's A and B
//! blocks taken fresh on every product cost a page-zeroing `memset` and,
//! when the allocator gave the pages back, a TLB shootdown interrupting
//! every other thread of the process (a bf16 product of n = 256 on two
//! threads ran at 205 GFLOP/s, at 307 with glibc told never to trim).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use crate::kernel::Element;

/// Buffers this thread may use again, at most this many kept.
const KEPT: usize = 4;

thread_local! {
    static POOL: RefCell<Vec<Vec<u64>>> = const { RefCell::new(Vec::new()) };
}

/// `len` elements of `T` from this thread's kept buffers (or a new one,
/// zeroed), given back when dropped. Their values are whatever the last
/// user left: callers write what they read.
pub(crate) struct Scratch<T> {
    words: Vec<u64>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> Scratch<T> {
    pub(crate) fn new(len: usize) -> Self {
        assert!(std::mem::align_of::<T>() <= std::mem::align_of::<u64>());
        let need = (len * std::mem::size_of::<T>()).div_ceil(8);
        // None for nothing (A packed already, B read in place): a kept
        // buffer stays for the next one that needs it.
        let mut words = if need == 0 {
            Vec::new()
        } else {
            POOL.with(|pool| {
                // The smallest that fits, else the largest to grow.
                let mut pool = pool.borrow_mut();
                let fits = (0..pool.len())
                    .filter(|&i| pool[i].len() >= need)
                    .min_by_key(|&i| pool[i].len());
                let any = (0..pool.len()).max_by_key(|&i| pool[i].len());
                fits.or(any)
                    .map(|i| pool.swap_remove(i))
                    .unwrap_or_default()
            })
        };
        if words.len() < need {
            words.resize(need, 0);
        }
        Scratch {
            words,
            len,
            _t: PhantomData,
        }
    }
}

impl<T: Element> Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the words hold at least `len` T (made so in `new`),
        // aligned for T (asserted there) and initialized (zeroed when
        // made, then only written as T); Element's types are plain bits
        // of which all-zero bytes are a value.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Element> DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and the words are this value's alone.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<T>(), self.len) }
    }
}

impl<T> Drop for Scratch<T> {
    fn drop(&mut self) {
        let words = std::mem::take(&mut self.words);
        if words.is_empty() {
            return;
        }
        // At thread exit the pool may be gone: the buffer is then freed.
        let _ = POOL.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            pool.push(words);
            if pool.len() > KEPT {
                // The smallest goes.
                if let Some(i) = (0..pool.len()).min_by_key(|&i| pool[i].len()) {
                    pool.swap_remove(i);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool's buffers, by size.
    fn kept() -> Vec<usize> {
        let mut sizes: Vec<usize> = POOL.with(|p| p.borrow().iter().map(Vec::len).collect());
        sizes.sort_unstable();
        sizes
    }

    #[test]
    fn buffers_are_kept_and_handed_out_again() {
        // A thread of its own: an empty pool to start from.
        std::thread::spawn(|| {
            let mut a = Scratch::<f64>::new(100);
            a.fill(2.5);
            let b = Scratch::<f32>::new(10);
            drop(a);
            drop(b);
            assert_eq!(kept(), [5, 100]);
            // Nothing asked, nothing taken.
            let none = Scratch::<f64>::new(0);
            assert_eq!(kept(), [5, 100]);
            drop(none);
            assert_eq!(kept(), [5, 100]);
            // The smallest that fits: the f32 one for 8 bytes, the
            // other (as the last user left it) for 80 values.
            let small = Scratch::<f64>::new(1);
            assert_eq!(kept(), [100]);
            let big = Scratch::<f64>::new(80);
            assert_eq!((big.len(), big[79]), (80, 2.5));
            assert!(kept().is_empty());
            drop((small, big));
            assert_eq!(kept(), [5, 100]);
        })
        .join()
        .expect("the test's thread");
        // No more than KEPT stay, the smallest going first.
        std::thread::spawn(|| {
            let many: Vec<_> = (1..=KEPT + 2).map(Scratch::<f64>::new).collect();
            drop(many);
            assert_eq!(kept(), (3..=KEPT + 2).collect::<Vec<_>>());
        })
        .join()
        .expect("the test's thread");
    }
}
