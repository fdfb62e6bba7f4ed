//! Vectors whose every element a pass writes, built without zeroing them
//! first.
//!
//! `vec![0f32; n]` on memory the allocator reuses is a `memset` of all of
//! it: a batch-8 prefill of the small Llama zeroed about 40 MB a layer
//! before overwriting it, a tenth of its time. [`par_rows`] hands each
//! row's uninitialized slots to a writer that must return them as the
//! initialized row (a `&mut [f32]` over exactly those slots, which safe
//! code can only get by writing them: [`copy`], [`chunks`]), so no row is left
//! unwritten.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Below this many values [`par_rows`] writes on the calling thread: a
/// decode step's rows are a few thousand values, and a parallel pass
/// costs more than it saves there.
const PARALLEL_MIN: usize = 1 << 14;

/// A `rows × width` row-major vector, row `r` written by `f(r, slots)`,
/// rows in parallel (for more than a few thousand values). `f` returns `slots` initialized ([`init`]).
///
/// # Panics
/// When `f` returns anything but its own row's slots.
pub(crate) fn par_rows<F>(rows: usize, width: usize, f: F) -> Vec<f32>
where
    F: for<'a> Fn(usize, &'a mut [MaybeUninit<f32>]) -> &'a mut [f32] + Sync,
{
    let len = rows * width;
    let mut out: Vec<f32> = Vec::with_capacity(len);
    if len > 0 {
        let write = |(r, slots): (usize, &mut [MaybeUninit<f32>])| {
            let (ptr, n) = (slots.as_ptr().cast::<f32>(), slots.len());
            let row = f(r, slots);
            assert!(
                std::ptr::eq(row.as_ptr(), ptr) && row.len() == n,
                "a row's writer returned other memory than its row"
            );
        };
        let spare = &mut out.spare_capacity_mut()[..len];
        if len < PARALLEL_MIN {
            spare.chunks_mut(width).enumerate().for_each(write);
        } else {
            spare.par_chunks_mut(width).enumerate().for_each(write);
        }
    }
    // SAFETY: every chunk of the first `len` slots was returned by `f` as
    // a `&mut [f32]` over exactly its memory (asserted): initialized.
    unsafe { out.set_len(len) };
    out
}

/// `slots` written with a copy of `src`; the initialized slots (a loop
/// the compiler turns into vector moves).
///
/// # Panics
/// When the lengths differ.
pub(crate) fn copy<'a>(slots: &'a mut [MaybeUninit<f32>], src: &[f32]) -> &'a mut [f32] {
    assert_eq!(slots.len(), src.len(), "one value per slot");
    for (slot, v) in slots.iter_mut().zip(src) {
        slot.write(*v);
    }
    // SAFETY: zipped with src, as long (asserted): every slot written.
    unsafe { assume_init(slots) }
}

/// `slots` written `width` at a time, chunk `c` by `f(c, chunk)`, which
/// returns its chunk initialized; the initialized slots.
///
/// # Panics
/// When `width` does not divide the slots, or `f` returns anything but its
/// own chunk.
pub(crate) fn chunks<F>(slots: &mut [MaybeUninit<f32>], width: usize, mut f: F) -> &mut [f32]
where
    F: for<'a> FnMut(usize, &'a mut [MaybeUninit<f32>]) -> &'a mut [f32],
{
    assert!(
        width > 0 && slots.len().is_multiple_of(width),
        "chunks of {width} in {} slots",
        slots.len()
    );
    for (c, chunk) in slots.chunks_exact_mut(width).enumerate() {
        let (ptr, n) = (chunk.as_ptr().cast::<f32>(), chunk.len());
        let done = f(c, chunk);
        assert!(
            std::ptr::eq(done.as_ptr(), ptr) && done.len() == n,
            "a chunk's writer returned other memory than its chunk"
        );
    }
    // SAFETY: the chunks cover the slots (width divides them, asserted),
    // and each was returned initialized as its own memory (asserted).
    unsafe { assume_init(slots) }
}

/// `slots` as the initialized values they hold.
///
/// # Safety
/// Every one of `slots` has been written.
pub(crate) unsafe fn assume_init(slots: &mut [MaybeUninit<f32>]) -> &mut [f32] {
    // SAFETY: MaybeUninit<f32> has f32's layout; the caller vouches that
    // every slot holds a value.
    unsafe { &mut *(std::ptr::from_mut::<[MaybeUninit<f32>]>(slots) as *mut [f32]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_hold_what_their_writers_wrote() {
        let v = par_rows(37, 5, |r, slots| {
            let row: Vec<f32> = (0..5).map(|c| (r * 10 + c) as f32).collect();
            copy(slots, &row)
        });
        assert_eq!(v.len(), 185);
        for (i, x) in v.iter().enumerate() {
            assert_eq!(*x, ((i / 5) * 10 + i % 5) as f32);
        }
        assert!(par_rows(0, 5, |_, s| copy(s, &[])).is_empty());
    }

    #[test]
    fn rows_of_chunks_and_copies_hold_their_values() {
        // Past PARALLEL_MIN: the parallel path.
        let (rows, width) = (40, 600);
        let src: Vec<f32> = (0..rows * width).map(|i| i as f32).collect();
        let v = par_rows(rows, width, |r, slots| {
            chunks(slots, 200, |c, chunk| {
                copy(chunk, &src[r * width + c * 200..][..200])
            })
        });
        assert_eq!(v, src);
    }

    #[test]
    #[should_panic(expected = "other memory than its chunk")]
    fn a_chunk_writer_returning_other_memory_is_refused() {
        par_rows(1, 4, |_, slots| {
            chunks(slots, 2, |_, _| Box::leak(vec![0f32; 2].into_boxed_slice()))
        });
    }

    #[test]
    #[should_panic(expected = "one value per slot")]
    fn a_short_copy_is_refused() {
        par_rows(2, 4, |_, slots| copy(slots, &[1.0, 2.0]));
    }

    #[test]
    #[should_panic(expected = "other memory")]
    fn a_writer_returning_other_memory_is_refused() {
        par_rows(1, 3, |_, _| Box::leak(vec![0f32; 3].into_boxed_slice()));
    }
}
