//! Vectors whose every element a pass writes, built without zeroing them
//! first.
//!
//! `vec![0f32; n]` on memory the allocator reuses is a `memset` of all of
//! it: a batch-8 prefill of the small Llama zeroed about 40 MB a layer
//! before overwriting it, a tenth of its time. [`par_rows`] hands each
//! row's uninitialized slots to a writer that must return them as the
//! initialized row (a `&mut [f32]` over exactly those slots, which safe
//! code can only get by writing them: [`init`]), so no row is left
//! unwritten.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// A `rows × width` row-major vector, row `r` written by `f(r, slots)`,
/// rows in parallel. `f` returns `slots` initialized ([`init`]).
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
        out.spare_capacity_mut()[..len]
            .par_chunks_mut(width)
            .enumerate()
            .for_each(|(r, slots)| {
                let (ptr, n) = (slots.as_ptr().cast::<f32>(), slots.len());
                let row = f(r, slots);
                assert!(
                    std::ptr::eq(row.as_ptr(), ptr) && row.len() == n,
                    "a row's writer returned other memory than its row"
                );
            });
    }
    // SAFETY: every chunk of the first `len` slots was returned by `f` as
    // a `&mut [f32]` over exactly its memory (asserted): initialized.
    unsafe { out.set_len(len) };
    out
}

/// `slots` written from `values`, element by element; the initialized
/// slots.
///
/// # Panics
/// When `values` holds more or fewer values than there are slots.
pub(crate) fn init(
    slots: &mut [MaybeUninit<f32>],
    values: impl IntoIterator<Item = f32>,
) -> &mut [f32] {
    let mut values = values.into_iter();
    let mut written = 0;
    for slot in slots.iter_mut() {
        let Some(v) = values.next() else { break };
        slot.write(v);
        written += 1;
    }
    assert!(
        written == slots.len() && values.next().is_none(),
        "one value per slot: {written} values (or more) for {} slots",
        slots.len()
    );
    // SAFETY: every one of the slots was written just above (counted).
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
            init(slots, (0..5).map(move |c| (r * 10 + c) as f32))
        });
        assert_eq!(v.len(), 185);
        for (i, x) in v.iter().enumerate() {
            assert_eq!(*x, ((i / 5) * 10 + i % 5) as f32);
        }
        assert!(par_rows(0, 5, |_, s| init(s, [])).is_empty());
    }

    #[test]
    #[should_panic(expected = "one value per slot")]
    fn a_short_row_is_refused() {
        par_rows(2, 4, |_, slots| init(slots, [1.0f32, 2.0]));
    }

    #[test]
    #[should_panic(expected = "one value per slot")]
    fn a_long_row_is_refused() {
        par_rows(1, 2, |_, slots| init(slots, [1.0f32, 2.0, 3.0]));
    }

    #[test]
    #[should_panic(expected = "other memory")]
    fn a_writer_returning_other_memory_is_refused() {
        par_rows(1, 3, |_, _| Box::leak(vec![0f32; 3].into_boxed_slice()));
    }
}
