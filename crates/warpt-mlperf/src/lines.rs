//! Activation buffers that start on a cache line, and the pool a network
//! keeps them in from layer to layer. On a line, a product may write them
//! with streaming stores (warpt-gemm's `Epilogue::stream`, which needs
//! every stored vector aligned to its size), and a `Vec<f32>` starts
//! wherever the allocator put it (16 bytes past a line with glibc).

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

use crate::winograd;

/// One cache line of values.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// Values in one line.
const PER_LINE: usize = 16;

/// `len` `f32`s from the start of a cache line, as a slice.
#[derive(Clone, Default)]
pub(crate) struct Lines {
    /// Whole lines, at least `len` values.
    lines: Vec<Line>,
    /// The values in use.
    len: usize,
}

impl Lines {
    /// How many values it holds without reallocating.
    pub(crate) fn capacity(&self) -> usize {
        self.lines.capacity() * PER_LINE
    }

    /// `len` values: those it held first (up to `len`), then zeros.
    pub(crate) fn resize(&mut self, len: usize) {
        let lines = len.div_ceil(PER_LINE);
        if len > self.len {
            // The values past the old length and up to its last whole
            // line are stale from a longer use: zeroed, as new lines are.
            let end = (self.len.div_ceil(PER_LINE) * PER_LINE).min(len);
            let old = self.len;
            self.len = end;
            self[old..end].fill(0.0);
        }
        self.lines.resize(lines, Line::default());
        self.len = len;
    }
}

impl Deref for Lines {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        // SAFETY: a `Line` is 16 `f32`s with no padding (`repr(C)`), so
        // the vector's lines are `lines.len() * 16` initialized `f32`s
        // from its (line-aligned) start, and `len` never exceeds that
        // (kept by `resize`, the only place either changes).
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<f32>(), self.len) }
    }
}

impl DerefMut for Lines {
    fn deref_mut(&mut self) -> &mut [f32] {
        // SAFETY: as `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<f32>(), self.len) }
    }
}

/// Buffers of finished layers, kept for the next ones and the next
/// batch: a fresh `Vec` of this size is a fresh mapping, whose page
/// faults and zeroing cost more than a small layer's GEMM.
#[derive(Default)]
pub(crate) struct Pool {
    /// Buffers free for the next layer.
    free: Vec<Lines>,
    /// The Winograd convolutions' transforms.
    pub(crate) winograd: winograd::Scratch,
    /// A buffer per thread for the pieces of an im2col.
    pieces: Vec<Mutex<Vec<f32>>>,
}

impl Pool {
    /// A buffer of `len` values, contents unspecified (the caller writes
    /// every one).
    pub(crate) fn take(&mut self, len: usize) -> Lines {
        let free = &mut self.free;
        let best = (0..free.len())
            .filter(|&i| free[i].capacity() >= len)
            .min_by_key(|&i| free[i].capacity())
            .or_else(|| (0..free.len()).max_by_key(|&i| free[i].capacity()));
        let mut v = best.map(|i| free.swap_remove(i)).unwrap_or_default();
        v.resize(len);
        v
    }

    /// `v`, free for a later layer.
    pub(crate) fn give(&mut self, v: Lines) {
        self.free.push(v);
    }

    /// One im2col buffer for each of `threads` threads.
    pub(crate) fn pieces(&mut self, threads: usize) -> &[Mutex<Vec<f32>>] {
        self.pieces.resize_with(threads.max(1), Mutex::default);
        &self.pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_start_on_a_cache_line_and_keep_their_values() {
        let mut v = Lines::default();
        assert!(v.is_empty());
        for (len, keep) in [(5, 0), (40, 5), (17, 17), (1000, 17), (3, 3), (33, 3)] {
            v.resize(len);
            assert_eq!(v.len(), len);
            assert!(v.capacity() >= len);
            assert!(v.as_ptr().cast::<u8>().align_offset(64) == 0 || len == 0);
            // What it held first stays; what it grows by is zero.
            for (i, x) in v.iter().enumerate() {
                let want = if i < keep { i as f32 + 1.0 } else { 0.0 };
                assert_eq!(*x, want, "{len} values, value {i}");
            }
            v.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = i as f32 + 1.0);
        }
    }
}
