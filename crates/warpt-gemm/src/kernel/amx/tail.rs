//! A depth's last, partial chunk of 16 steps, copied into whole tiles
//! for the pass that ends with it ([`super`]'s kernels).

use super::{A_STEP, CHUNK, NR};

/// A depth's last, partial chunk copied into whole tiles, zero past its
/// steps: A's steps (16 of A_STEP bytes) and B's 32 columns (64 bytes,
/// `tail` groups each).
#[repr(C, align(64))]
pub(super) struct Tails {
    /// A's 16 steps.
    pub(super) a: [u8; CHUNK * A_STEP],
    /// B's 32 columns.
    pub(super) b: [u8; NR * 64],
}

impl Tails {
    /// Writes every byte of `to`: `tail` steps of A from `a` (A_STEP
    /// bytes each) and `cols` columns of B from `b` (`tail` groups each,
    /// side by side), zeros past them. Vector moves, not copies of a
    /// length known only here (each a call to memcpy: a sixth of a
    /// product 1040 deep).
    ///
    /// # Safety
    /// `a` and `b` hold what is read; `tail` < 16, `cols` <= 32.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn fill(
        to: *mut Tails,
        a: *const u8,
        b: *const u8,
        tail: usize,
        cols: usize,
    ) {
        use std::arch::x86_64::{
            _mm512_loadu_si512, _mm512_maskz_loadu_epi32, _mm512_setzero_si512, _mm512_store_si512,
        };
        // SAFETY: the caller's promise; `to`'s fields are 64-byte aligned
        // and each store is one whole line of them.
        unsafe {
            let ta = std::ptr::addr_of_mut!((*to).a).cast::<u8>();
            for line in 0..CHUNK * A_STEP / 64 {
                let v = if line * 64 < tail * A_STEP {
                    _mm512_loadu_si512(a.add(line * 64).cast())
                } else {
                    _mm512_setzero_si512()
                };
                _mm512_store_si512(ta.add(line * 64).cast(), v);
            }
            let tb = std::ptr::addr_of_mut!((*to).b).cast::<u8>();
            let groups = ((1u32 << tail) - 1) as u16;
            for j in 0..NR {
                let v = if j < cols {
                    _mm512_maskz_loadu_epi32(groups, b.add(j * tail * 4).cast())
                } else {
                    _mm512_setzero_si512()
                };
                _mm512_store_si512(tb.add(j * 64).cast(), v);
            }
        }
    }
}
