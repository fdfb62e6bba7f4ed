//! Sixteen rows of a small bf16 product on the AMX tiles, both operands
//! already laid out as tiles: attention's two products per head
//! ([`crate::attention`]), too small for the engine's packing and blocking
//! to pay (a 128 x 128 product of depth 32 is sixteen tile products).
//!
//! `C = Σₛ Aₛ·Bᵢ,ₛ` for `s < steps` into `TILES` tiles of C side by side
//! (16 rows x 16 fp32 columns each): `Aₛ` is 16 rows of 32 bf16 (a row's
//! 64 bytes from `a + 64·s`, rows `lda` bytes apart), `Bᵢ,ₛ` a tile in
//! the pair-interleaved layout `tdpbf16ps` takes (16 rows of 16 pairs,
//! row `p` holding the depths `2p` and `2p + 1` of each of 16 columns),
//! 1 KiB at `b + 1024·i + b_step·s`. The tiles are configured as the
//! engine's 32 x 32 kernel configures them for 16 columns of each half
//! (every tile 16 rows of 64 bytes), so a product that follows this one
//! on the same thread does not configure them again.

use super::amx::configure;
use crate::attention::Operands;

/// The asm of one call for `$tiles` tiles of C (2 or 4): accumulators
/// `tmm0`-`tmm3`, A in `tmm4`, B in `tmm6` and `tmm7` in turn.
macro_rules! rows {
    ($name:ident, $($zero:literal, $load:literal, $dot:literal, $store:literal);+) => {
        /// # Safety
        /// As [`rows16`] for this many tiles of C; the tiles configured.
        #[inline]
        unsafe fn $name(steps: usize, a: *const u8, lda: usize, b: *const u8, b_step: usize, c: *mut u8, ldc: usize) {
            // SAFETY: the caller's promise; the tiles are loaded from and
            // stored to its buffers (no Rust value lives in a tile).
            unsafe {
                std::arch::asm!(
                    $($zero,)+
                    "mov {t}, 64",
                    "2:",
                    "tileloadd tmm4, [{a} + {lda}*1]",
                    $($load, $dot,)+
                    "add {a}, 64",
                    "add {b}, {bs}",
                    "dec {n}",
                    "jnz 2b",
                    $($store,)+
                    a = inout(reg) a => _,
                    lda = in(reg) lda,
                    b = inout(reg) b => _,
                    bs = in(reg) b_step,
                    n = inout(reg) steps => _,
                    c = in(reg) c,
                    ldc = in(reg) ldc,
                    t = out(reg) _,
                    options(nostack),
                )
            }
        }
    };
}

rows!(rows_2,
    "tilezero tmm0", "tileloadd tmm6, [{b} + {t}*1]", "tdpbf16ps tmm0, tmm4, tmm6", "tilestored [{c} + {ldc}*1], tmm0";
    "tilezero tmm1", "tileloadd tmm7, [{b} + {t}*1 + 1024]", "tdpbf16ps tmm1, tmm4, tmm7", "tilestored [{c} + {ldc}*1 + 64], tmm1"
);

rows!(rows_4,
    "tilezero tmm0", "tileloadd tmm6, [{b} + {t}*1]", "tdpbf16ps tmm0, tmm4, tmm6", "tilestored [{c} + {ldc}*1], tmm0";
    "tilezero tmm1", "tileloadd tmm7, [{b} + {t}*1 + 1024]", "tdpbf16ps tmm1, tmm4, tmm7", "tilestored [{c} + {ldc}*1 + 64], tmm1";
    "tilezero tmm2", "tileloadd tmm6, [{b} + {t}*1 + 2048]", "tdpbf16ps tmm2, tmm4, tmm6", "tilestored [{c} + {ldc}*1 + 128], tmm2";
    "tilezero tmm3", "tileloadd tmm7, [{b} + {t}*1 + 3072]", "tdpbf16ps tmm3, tmm4, tmm7", "tilestored [{c} + {ldc}*1 + 192], tmm3"
);

/// `C = Σₛ Aₛ·Bᵢ,ₛ` (the module's layout) for `o.tiles` tiles of C (an
/// even number), four at a time: `o.tiles · 16` fp32 columns of 16 rows,
/// `o.ldc` bytes apart.
///
/// # Safety
/// The CPU runs AMX and the process holds the tile permission; `o.steps
/// ≥ 1`; `a + lda·r + 64·s .. + 64` is readable for every row `r < 16` and
/// step `s`, `b + 1024·i + b_step·s .. + 1024` for every tile `i` and
/// step, and `c + ldc·r .. + 64·tiles` writable for every row, touched by
/// no other thread.
pub(crate) unsafe fn rows16(o: &Operands) {
    debug_assert!(o.steps >= 1 && o.tiles.is_multiple_of(2));
    // SAFETY: the caller's promise; the offsets stay inside B's tiles
    // and C's columns for each group of tiles.
    unsafe {
        configure(16, 16);
        let mut i = 0;
        while i < o.tiles {
            let (b, c) = (o.b.add(1024 * i), o.c.add(64 * i));
            if o.tiles - i >= 4 {
                rows_4(o.steps, o.a, o.lda, b, o.b_step, c, o.ldc);
                i += 4;
            } else {
                rows_2(o.steps, o.a, o.lda, b, o.b_step, c, o.ldc);
                i += 2;
            }
        }
    }
}

/// Releases this thread's tiles ([`super::amx`]'s release).
///
/// # Safety
/// The CPU runs AMX.
pub(crate) unsafe fn release() {
    // SAFETY: the caller's promise.
    unsafe { super::amx::release() }
}
