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
        let mut words = POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            match pool.iter().position(|w| w.len() >= need) {
                Some(i) => pool.swap_remove(i),
                None => pool.pop().unwrap_or_default(),
            }
        });
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
