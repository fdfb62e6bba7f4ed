//! Buffers each thread keeps from product to product: packing's A and B
//! blocks taken fresh on every product cost a page-zeroing `memset` and,
//! when the allocator gave the pages back, a TLB shootdown interrupting
//! every other thread of the process (a bf16 product of n = 256 on two
//! threads ran at 205 GFLOP/s, at 307 with glibc told never to trim).
//! They are made of cache lines, aligned as such: a panel's rows (an AMX
//! tile's 64 bytes) each in one line, not split across two (the AMX bf16
//! kernel ran at 450 GFLOP/s on buffers 16 bytes off a line, n = 2048).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use crate::kernel::Element;

/// Buffers this thread may use again, at most this many kept.
const KEPT: usize = 4;

/// A cache line of a buffer.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// Bytes of a [`Line`].
const LINE: usize = std::mem::size_of::<Line>();

thread_local! {
    static POOL: RefCell<Vec<Vec<Line>>> = const { RefCell::new(Vec::new()) };
}

/// `len` elements of `T` from this thread's kept buffers (or a new one,
/// zeroed), given back when dropped. Their values are whatever the last
/// user left: callers write what they read.
pub(crate) struct Scratch<T> {
    words: Vec<Line>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> Scratch<T> {
    pub(crate) fn new(len: usize) -> Self {
        assert!(std::mem::align_of::<T>() <= LINE);
        let need = (len * std::mem::size_of::<T>()).div_ceil(LINE);
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
            words.resize(need, Line::default());
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

/// `len` elements of `T` of its own, from a cache line's boundary and
/// zeroed when made: a [`crate::PackedA`]'s panels, read as Scratch's are.
pub(crate) struct Aligned<T> {
    lines: Vec<Line>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> Aligned<T> {
    /// `len` elements, all bits zero (a value of every Element).
    pub(crate) fn zeroed(len: usize) -> Self {
        assert!(std::mem::align_of::<T>() <= LINE);
        let need = (len * std::mem::size_of::<T>()).div_ceil(LINE);
        Aligned {
            lines: vec![Line::default(); need],
            len,
            _t: PhantomData,
        }
    }
}

impl<T> Clone for Aligned<T> {
    fn clone(&self) -> Self {
        Aligned {
            lines: self.lines.clone(),
            len: self.len,
            _t: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Aligned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Aligned({} elements)", self.len)
    }
}

impl<T: Element> Deref for Aligned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: as Scratch's: the lines hold `len` T, aligned for T
        // (asserted in `zeroed`), zeroed when made and written only as T.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Element> DerefMut for Aligned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and the lines are this value's alone.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<T>(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool's buffers, by size in lines.
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
            // Lines: 800 bytes are 13, 40 bytes one.
            let b = Scratch::<f32>::new(10);
            assert_eq!(a.as_ptr().align_offset(LINE), 0);
            drop(a);
            drop(b);
            assert_eq!(kept(), [1, 13]);
            // Nothing asked, nothing taken.
            let none = Scratch::<f64>::new(0);
            assert_eq!(kept(), [1, 13]);
            drop(none);
            assert_eq!(kept(), [1, 13]);
            // The smallest that fits: the f32 one for 8 bytes, the
            // other (as the last user left it) for 80 values.
            let small = Scratch::<f64>::new(1);
            assert_eq!(kept(), [13]);
            let big = Scratch::<f64>::new(80);
            assert_eq!((big.len(), big[79]), (80, 2.5));
            assert!(kept().is_empty());
            drop((small, big));
            assert_eq!(kept(), [1, 13]);
        })
        .join()
        .expect("the test's thread");
        // No more than KEPT stay, the smallest going first.
        std::thread::spawn(|| {
            // i lines each (8 f64 a line).
            let many: Vec<_> = (1..=KEPT + 2).map(|i| Scratch::<f64>::new(8 * i)).collect();
            drop(many);
            assert_eq!(kept(), (3..=KEPT + 2).collect::<Vec<_>>());
        })
        .join()
        .expect("the test's thread");
    }
}
