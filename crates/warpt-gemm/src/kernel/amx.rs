//! The AMX tiles (Intel Sapphire Rapids and later): bf16 (`tdpbf16ps`,
//! pairs of depths into fp32) and int8 (`tdpbsud`, fours into int32) on
//! eight tile registers of 16 rows x 64 bytes, a 32 x 32 tile of C in four
//! accumulators (the 2 x 2 blocking Intel's optimisation manual gives for
//! peak: each loaded tile meets two others).
//!
//! A tile product `C[m][n] += Σ A[m][g]·B[g][n]` walks A's rows and B's
//! columns, each 16 groups of 4 bytes deep (a bf16 pair, an int8 four).
//! The engine's C is column-major and its packed A holds, step by step,
//! every row's group side by side: sixteen steps of A are already an AMX
//! right-hand tile (rows = steps, 64 bytes = 16 rows of C). So the kernel
//! computes `Cᵀ = Bᵀ·Aᵀ`: the left-hand tiles are B's columns, one column's
//! 16 groups in a row — B's panels arranged in chunks of 16 steps
//! ([`super::PanelOrder::Chunks`], packed so by `pack::pack_b_in`) — and a
//! row of an accumulator is 16 rows of one column of C, stored (and, to
//! add to C, loaded) straight from C's columns.
//!
//! int8 runs `tdpbsud` (signed B times unsigned A) on the A the VNNI
//! kernels read, stored 128 too high (`vpdpbusd` wants an unsigned
//! side): the driver's correction is the same, the sums exact in int32 as
//! `tdpbssd`'s on the unflipped A.
//!
//! A depth that is not a whole number of chunks ends in a chunk of fewer
//! steps, copied into zero-padded tiles and run by the same pass before
//! C's tile is stored (a second pass, C stored and loaded again between,
//! made a product 1040 deep a quarter slower than one 1024 deep). A call
//! configures the tiles only when they are not configured as it needs
//! (nothing but the configuration lives between calls), and the driver
//! releases them at the end of each thread's share of a product. Linux grants the tile data per process
//! ([`crate::isa::amx_permission`]); the instructions are inline assembly
//! (Rust's AMX intrinsics are not stable).

use std::cell::Cell;

use super::{Bf16, Store};

mod tail;

use tail::Tails;

/// Steps of depth in a chunk: a tile row's 64 bytes of 4-byte groups.
pub(crate) const CHUNK: usize = 16;
/// Rows of the tile of C.
const MR: usize = 32;
/// Columns of the tile of C.
const NR: usize = 32;
/// Bytes of one step of A's micro-panel (MR groups).
const A_STEP: usize = MR * 4;

/// A tile configuration (palette 1): C's accumulators `tmm0`-`tmm3` (rows
/// 0-15 and 16-31 of C for the low columns, then the high ones), B's
/// tiles `tmm4` (low columns) and `tmm5` (high), A's `tmm6` (rows 0-15)
/// and `tmm7` (16-31).
#[repr(C, align(64))]
struct Config([u8; 64]);

impl Config {
    /// `lo` and `hi` columns in the two column tiles (1 to 16 each).
    fn new(lo: u8, hi: u8) -> Self {
        let mut c = [0u8; 64];
        c[0] = 1;
        let rows = [lo, lo, hi, hi, lo, hi, 16, 16];
        for (t, &r) in rows.iter().enumerate() {
            // colsb[t] (u16 at 16 + 2t) and rows[t] (u8 at 48 + t).
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&64u16.to_le_bytes());
            c[48 + t] = r;
        }
        Config(c)
    }
}

thread_local! {
    /// The configuration this thread's tiles hold, as [`configure`] last
    /// loaded it; `None` after [`release`] (or before any).
    static LOADED: Cell<Option<(u8, u8)>> = const { Cell::new(None) };
}

/// Configures the tiles for `lo` and `hi` columns, unless the last call
/// on this thread left them so (`ldtilecfg` costs about 60 ns and zeroes
/// every tile). The tiles stay configured between calls; the driver
/// releases them when a thread's share of a product is done, also when
/// it unwinds ([`release`]). Which configuration is loaded is kept on the
/// thread: asking the CPU (`sttilecfg`, then comparing) cost 4-7% of a
/// bf16 product at n = 1024-2048 on one core.
///
/// # Safety
/// The CPU runs AMX and the process holds the tile permission; no other
/// code on this thread loads a tile configuration between this call and
/// [`release`] (only this module's kernels run AMX in between).
#[inline]
pub(super) unsafe fn configure(lo: u8, hi: u8) {
    if LOADED.get() == Some((lo, hi)) {
        return;
    }
    let cfg = Config::new(lo, hi);
    // SAFETY: loads the 64-byte configuration (the caller's promise: AMX
    // runs here).
    unsafe {
        std::arch::asm!(
            "ldtilecfg [{cfg}]",
            cfg = in(reg) cfg.0.as_ptr(),
            options(nostack),
        );
    }
    LOADED.set(Some((lo, hi)));
}

/// Releases this thread's tiles (`tilerelease`): back to the state that
/// neither holds data nor costs a larger register save.
///
/// # Safety
/// The CPU runs AMX (the instruction exists).
pub(super) unsafe fn release() {
    LOADED.set(None);
    // SAFETY: the caller's promise; no Rust value lives in a tile.
    unsafe { std::arch::asm!("tilerelease", options(nostack, nomem)) }
}

/// One pass of the tile over `chunks` whole chunks and, where the depth
/// ends in a partial one, that chunk's copy, as the asm blocks take it.
/// `#[repr(C)]`: the asm reads `chunks`, `bias` and the tail's two
/// pointers from it (the pass needs more addresses than x86-64 has free
/// registers).
#[repr(C)]
struct Pass {
    /// C's tile (or a buffer): column j at `out + j·ld` bytes.
    out: *mut u8,
    /// The high columns' first (column 16), or null for a tile of 16
    /// columns or fewer (neither loaded nor stored).
    out_hi: *mut u8,
    /// Bytes from one column of `out` to the next.
    ld: usize,
    /// Chunks to run.
    chunks: usize,
    /// A's first chunk: 16 steps of A_STEP bytes.
    a: *const u8,
    /// B's first chunk: the low columns, 64 bytes each.
    b: *const u8,
    /// B's high columns' first chunk (`b` itself, one row read and the
    /// result dropped, in a tile of 16 columns or fewer).
    b_hi: *const u8,
    /// Bytes from one chunk of B to the next.
    b_step: usize,
    /// The same for `b_hi` (0 when it is `b`'s dummy row).
    b_hi_step: usize,
    /// The tile's 32 row biases (fp32), the accumulators' start in a
    /// pass that starts from them (else unread).
    bias: *const u8,
    /// A last, partial chunk of A zero-padded to 16 steps, run after the
    /// whole ones before C's tile is stored; null when there is none.
    a_tail: *const u8,
    /// That chunk of B: 32 columns of 64 bytes, each zero-padded (read
    /// only when `a_tail` is not null).
    b_tail: *const u8,
}

/// The start of a pass that loads C: its accumulators (the high columns'
/// when they exist).
macro_rules! from_c {
    () => {
        concat!(
            "tileloadd tmm0, [{out} + {ld}*1]\n",
            "tileloadd tmm1, [{out} + {ld}*1 + 64]\n",
            "test {hi}, {hi}\n",
            "jz 3f\n",
            "tileloadd tmm2, [{hi} + {ld}*1]\n",
            "tileloadd tmm3, [{hi} + {ld}*1 + 64]\n",
        )
    };
}

/// The start of a pass from the row biases: each accumulator row (a
/// column of C) their 16 values, loaded with a stride of 0.
macro_rules! from_bias {
    () => {
        concat!(
            "mov {n}, [{p} + {at_bias}]\n",
            "xor {t:e}, {t:e}\n",
            "tileloadd tmm0, [{n} + {t}*1]\n",
            "tileloadd tmm1, [{n} + {t}*1 + 64]\n",
            "tileloadd tmm2, [{n} + {t}*1]\n",
            "tileloadd tmm3, [{n} + {t}*1 + 64]\n",
        )
    };
}

/// The start of a pass from zero (the accumulators zeroed already).
macro_rules! from_zero {
    () => {
        ""
    };
}

/// Sixteen `prefetcht0`s, one a line, of the kilobyte `from` bytes past
/// `base + ahead` (an operand's chunk two ahead: the tile loads cannot be
/// followed by the hardware prefetchers as vector loads are), placed
/// between the products.
macro_rules! ahead {
    ($base:literal, $ahead:literal, $from:literal) => {
        concat!(
            ".set wline, ",
            $from,
            "\n",
            ".rept 16\n",
            "prefetcht0 [",
            $base,
            " + ",
            $ahead,
            " + wline]\n",
            ".set wline, wline + 64\n",
            ".endr"
        )
    };
}

/// The asm of a pass: `$op` is the tile product; `$start` what the
/// accumulators start from ([`from_zero`], [`from_c`], [`from_bias`]).
macro_rules! pass {
    ($name:ident, $op:literal, $start:ident) => {
        /// # Safety
        /// The tiles are configured as `Config` says ([`configure`]), and
        /// every pointer of `p` covers what its field says for its rows.
        #[inline]
        unsafe fn $name(p: &Pass) {
            // SAFETY: the caller's promise; the tiles are loaded from and
            // stored to the pass's buffers (no Rust value lives in a tile).
            unsafe {
                std::arch::asm!(
                    "tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3",
                    // (Every operand named, whichever start this is.)
                    "/* {at_bias} */",
                    $start!(),
                    "3:",
                    "mov {n}, [{p} + {at_chunks}]",
                    "mov {t}, 64",
                    "test {n}, {n}",
                    "jz 5f",
                    "4:",
                    "tileloadd tmm4, [{b} + {t}*1]",
                    "tileloadd tmm6, [{a} + {sa}*1]",
                    "tileloadd tmm7, [{a} + {sa}*1 + 64]",
                    "tileloadd tmm5, [{bh} + {t}*1]",
                    concat!($op, " tmm0, tmm4, tmm6"),
                    ahead!("{a}", "{pa}", 0),
                    concat!($op, " tmm1, tmm4, tmm7"),
                    ahead!("{a}", "{pa}", 1024),
                    concat!($op, " tmm2, tmm5, tmm6"),
                    ahead!("{b}", "{bs}*2", 0),
                    concat!($op, " tmm3, tmm5, tmm7"),
                    ahead!("{bh}", "{bhs}*2", 0),
                    "add {a}, {astep}",
                    "add {b}, {bs}",
                    "add {bh}, {bhs}",
                    "dec {n}",
                    "jnz 4b",
                    "5:",
                    // The partial last chunk, from its padded copies,
                    // into the same accumulators.
                    "mov {a}, [{p} + {at_a_tail}]",
                    "test {a}, {a}",
                    "jz 6f",
                    "mov {b}, [{p} + {at_b_tail}]",
                    "tileloadd tmm4, [{b} + {t}*1]",
                    "tileloadd tmm6, [{a} + {sa}*1]",
                    "tileloadd tmm7, [{a} + {sa}*1 + 64]",
                    "tileloadd tmm5, [{b} + {t}*1 + 1024]",
                    concat!($op, " tmm0, tmm4, tmm6"),
                    concat!($op, " tmm1, tmm4, tmm7"),
                    concat!($op, " tmm2, tmm5, tmm6"),
                    concat!($op, " tmm3, tmm5, tmm7"),
                    "6:",
                    "tilestored [{out} + {ld}*1], tmm0",
                    "tilestored [{out} + {ld}*1 + 64], tmm1",
                    "test {hi}, {hi}",
                    "jz 7f",
                    "tilestored [{hi} + {ld}*1], tmm2",
                    "tilestored [{hi} + {ld}*1 + 64], tmm3",
                    "7:",
                    p = in(reg) std::ptr::from_ref(p),
                    out = in(reg) p.out,
                    hi = in(reg) p.out_hi,
                    ld = in(reg) p.ld,
                    n = out(reg) _,
                    a = inout(reg) p.a => _,
                    sa = in(reg) A_STEP,
                    astep = const CHUNK * A_STEP,
                    b = inout(reg) p.b => _,
                    bs = in(reg) p.b_step,
                    bh = inout(reg) p.b_hi => _,
                    bhs = in(reg) p.b_hi_step,
                    pa = const 2 * CHUNK * A_STEP,
                    at_chunks = const std::mem::offset_of!(Pass, chunks),
                    at_bias = const std::mem::offset_of!(Pass, bias),
                    at_a_tail = const std::mem::offset_of!(Pass, a_tail),
                    at_b_tail = const std::mem::offset_of!(Pass, b_tail),
                    t = out(reg) _,
                    options(nostack),
                )
            }
        }
    };
}

pass!(bf16_set, "tdpbf16ps", from_zero);
pass!(bf16_add, "tdpbf16ps", from_c);
pass!(bf16_bias, "tdpbf16ps", from_bias);
pass!(i8_set, "tdpbsud", from_zero);
pass!(i8_add, "tdpbsud", from_c);

/// The two products.
#[derive(Clone, Copy)]
enum Op {
    /// `tdpbf16ps`, fp32 accumulators.
    Bf16,
    /// `tdpbsud`, int32 accumulators.
    Int8,
}

/// What a pass's accumulators start from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Zero.
    Zero,
    /// C's tile.
    C,
    /// The row biases ([`Pass::bias`]; bf16's fp32 accumulators only).
    Bias,
}

impl Op {
    /// One pass from `start`.
    ///
    /// # Safety
    /// As the passes'; `start` is not [`Start::Bias`] for int8.
    unsafe fn pass(self, start: Start, p: &Pass) {
        // SAFETY: the caller's promise.
        unsafe {
            match (self, start) {
                (Op::Bf16, Start::Zero) => bf16_set(p),
                (Op::Bf16, Start::C) => bf16_add(p),
                (Op::Bf16, Start::Bias) => bf16_bias(p),
                (Op::Int8, Start::Zero) => i8_set(p),
                (Op::Int8, Start::C) => i8_add(p),
                (Op::Int8, Start::Bias) => unreachable!("int8's tiles take no bias"),
            }
        }
    }

    /// Subtracts `cols` columns of accumulators (`MR` each, `x`) from C's
    /// tile at `c` (`ldo` elements from one column to the next).
    ///
    /// # Safety
    /// `c` points at a writable tile of this product's kind: `cols`
    /// columns of `MR` elements, `ldo` apart; the CPU runs AVX-512 (every
    /// CPU with AMX does).
    unsafe fn sub(self, c: *mut u8, ldo: usize, x: &[u32; MR * NR], cols: usize) {
        // SAFETY (both): the caller's promise.
        match self {
            Op::Bf16 => unsafe { subtract::<f32>(c.cast(), ldo, x, cols) },
            Op::Int8 => unsafe { subtract::<i32>(c.cast(), ldo, x, cols) },
        }
    }
}

/// An accumulator of a tile product: fp32 or int32, from its bits.
trait Accumulator: Copy {
    /// `self − bits`' value (int32 wraps, as the tile's sums do).
    fn minus(self, bits: u32) -> Self;
}

impl Accumulator for f32 {
    #[inline(always)]
    fn minus(self, bits: u32) -> Self {
        self - f32::from_bits(bits)
    }
}

impl Accumulator for i32 {
    #[inline(always)]
    fn minus(self, bits: u32) -> Self {
        self.wrapping_sub(bits as i32)
    }
}

/// `C −= x` column by column, on AVX-512 vectors (a column's 32
/// accumulators are two): element by element it cost more than the tile
/// product itself at a depth of 256 (an LU's trailing update, alpha −1,
/// ran at 60% of the rate of alpha 1).
///
/// # Safety
/// As [`Op::sub`].
#[target_feature(enable = "avx512f")]
unsafe fn subtract<A: Accumulator>(c: *mut A, ldo: usize, x: &[u32; MR * NR], cols: usize) {
    for (j, x) in x.chunks_exact(MR).take(cols).enumerate() {
        // SAFETY: column j < cols of C's tile holds MR elements.
        let c = unsafe { std::slice::from_raw_parts_mut(c.add(j * ldo), MR) };
        for (c, &x) in c.iter_mut().zip(x) {
            *c = c.minus(x);
        }
    }
}

/// The tile: `groups` steps of `a` (packed, MR groups a step) and `b`
/// (`cols` columns arranged in chunks), as [`super::MicroKernel`].
///
/// # Safety
/// As [`super::MicroKernel`] for MR = NR = 32 and 4-byte groups, B
/// arranged in chunks, on a CPU that runs AMX in a process that holds the
/// tile permission.
#[allow(clippy::too_many_arguments)]
unsafe fn tile(
    op: Op,
    groups: usize,
    a: *const u8,
    b: *const u8,
    cols: usize,
    out: *mut u8,
    ldo: usize,
    store: Store,
    bias: Option<*const u8>,
) {
    let (lo, hi) = (cols.min(16), cols.saturating_sub(16));
    // Sub goes through a buffer, subtracted from C below (made only then,
    // not 4 KiB zeroed on every call).
    let mut buffer = if store == Store::Sub {
        Some([0u32; MR * NR])
    } else {
        None
    };
    let (dst, ld) = match &mut buffer {
        Some(buffer) => (buffer.as_mut_ptr().cast::<u8>(), MR * 4),
        None => (out, ldo * 4),
    };
    let chunks = groups / CHUNK;
    let tail = groups % CHUNK;
    let b_step = CHUNK * cols * 4;
    // SAFETY (pointer offsets): column 16 of C's tile exists when hi > 0,
    // and B's chunks hold `cols` columns of 64 bytes each (the high ones
    // from byte 1024).
    let (out_hi, b_hi, b_hi_step) = if hi > 0 {
        (
            unsafe { dst.add(16 * ld) },
            unsafe { b.add(16 * 64) },
            b_step,
        )
    } else {
        (std::ptr::null_mut(), b, 0)
    };
    // The last steps, zero-padded to a chunk (only then: 4 KiB written).
    let mut tails = std::mem::MaybeUninit::<Tails>::uninit();
    let (a_tail, b_tail) = if tail > 0 {
        // SAFETY: the caller's panels end with these steps (A's `tail`
        // steps of A_STEP bytes, `cols` columns of `tail` groups in B's
        // last chunk); AMX runs, so AVX-512 does; `fill` writes every
        // byte of `tails`.
        let tails = unsafe {
            Tails::fill(
                tails.as_mut_ptr(),
                a.add(chunks * CHUNK * A_STEP),
                b.add(chunks * b_step),
                tail,
                cols,
            );
            tails.assume_init_ref()
        };
        (tails.a.as_ptr(), tails.b.as_ptr())
    } else {
        (std::ptr::null(), std::ptr::null())
    };
    let pass = Pass {
        out: dst,
        out_hi,
        ld,
        chunks,
        a,
        b,
        b_hi,
        b_step,
        b_hi_step,
        bias: bias.unwrap_or(std::ptr::null()),
        a_tail,
        b_tail,
    };
    let start = match (bias, store) {
        (Some(_), _) => Start::Bias,
        (None, Store::Add) => Start::C,
        (None, _) => Start::Zero,
    };
    // SAFETY: the caller's promise: AMX runs, `chunks` whole chunks of A
    // and B (and the tail's padded copies), C's tile of MR rows by `cols`
    // columns (and MR biases).
    unsafe {
        configure(lo as u8, hi.max(1) as u8);
        op.pass(start, &pass);
    }
    if let Some(buffer) = buffer {
        // SAFETY: C's tile holds `cols` columns of MR values, ldo apart.
        unsafe { op.sub(out, ldo, &buffer, cols) };
    }
}

/// The bf16 kernel, 32 x 32.
///
/// # Safety
/// As [`super::MicroKernel`], B arranged in chunks, on a CPU and process
/// that run AMX.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn bf16_amx(
    groups: usize,
    a: *const Bf16,
    b: *const Bf16,
    _rows: usize,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    store: Store,
) {
    // SAFETY: the caller's promise.
    unsafe {
        tile(
            Op::Bf16,
            groups,
            a.cast(),
            b.cast(),
            cols,
            out.cast(),
            ldo,
            store,
            None,
        )
    }
}

/// The int8 kernel, 32 x 32 (A stored 128 too high, corrected by the
/// driver).
///
/// # Safety
/// As [`bf16_amx`].
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn i8_amx(
    groups: usize,
    a: *const i8,
    b: *const i8,
    _rows: usize,
    cols: usize,
    out: *mut i32,
    ldo: usize,
    store: Store,
) {
    // SAFETY: the caller's promise.
    unsafe {
        tile(
            Op::Int8,
            groups,
            a.cast(),
            b.cast(),
            cols,
            out.cast(),
            ldo,
            store,
            None,
        )
    }
}

/// The bf16 kernel, 32 x 32, its tile of C set to the product plus
/// `bias[i]` in each row i (a layer's bias, added as the accumulators'
/// start rather than to the stored tile by the epilogue, whose loads
/// waited on the tile's stores: 8% of a MiniLM forward pass).
///
/// # Safety
/// As [`bf16_amx`] with [`Store::Set`], and `bias` holds 32 values.
pub(super) unsafe fn bf16_amx_bias(
    groups: usize,
    a: *const Bf16,
    b: *const Bf16,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    bias: *const f32,
) {
    // SAFETY: the caller's promise.
    unsafe {
        tile(
            Op::Bf16,
            groups,
            a.cast(),
            b.cast(),
            cols,
            out.cast(),
            ldo,
            Store::Set,
            Some(bias.cast()),
        )
    }
}
