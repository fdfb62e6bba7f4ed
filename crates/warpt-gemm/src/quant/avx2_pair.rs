//! The AVX2 tile of the quantized product for two activation rows (a
//! prefill's tile), in assembly: sixteen rows of weights (a record) by two
//! tokens over every block, with the four sums of a block, the four fp32
//! results, A's two vectors, the broadcast value and its magnitude, two
//! products and the constants all in the sixteen registers. Compiled from
//! the intrinsics (`x86::avx2`), the same step kept eight of them on the
//! stack and reloaded them every quad (`perf annotate`: `vpsignb` and
//! `vfmadd` with stack operands; the tile was 73% of a q8_0 prefill of
//! 128 tokens on Zen 3).
//!
//! The unrolled steps are macros that expand to the template's lines
//! (`concat!`), their offsets left to the assembler (`64*3`).
//!
//! What it computes is the intrinsic tile's, to the bit: each block's
//! integer dot products (exact, in any order), converted, then one fused
//! multiply-add by the product of the two scales.

use std::arch::x86_64::*;

use super::{GROUP, QActs};

/// Where a token's blocks start: its scales, sums and values.
pub(super) struct Token {
    d: *const f32,
    sums: *const i32,
    q: *const i8,
}

impl Token {
    /// Row `t` of `acts` from block `b`.
    pub(super) fn of(acts: &QActs, t: usize, b: usize) -> Self {
        let (d, sums, q) = acts.row_from(t, b);
        Token { d, sums, q }
    }
}

/// One token's step of a q8_0 quad: the quad's four activations at
/// `[{$x} + 4·$p]` broadcast, their magnitudes times A's signed weights
/// (`ymm10`, `ymm11`) given the activations' signs, summed in pairs,
/// then in fours, into the token's two sums `$a0`, `$a1`.
macro_rules! q8_token {
    ($p:literal, $x:literal, $a0:literal, $a1:literal) => {
        concat!(
            "vpbroadcastd ymm12, [{",
            $x,
            "} + 4*",
            $p,
            "]\n",
            "vpabsb ymm13, ymm12\n",
            "vpsignb ymm14, ymm10, ymm12\n",
            "vpmaddubsw ymm14, ymm13, ymm14\n",
            "vpmaddwd ymm14, ymm14, ymm8\n",
            "vpaddd ",
            $a0,
            ", ",
            $a0,
            ", ymm14\n",
            "vpsignb ymm15, ymm11, ymm12\n",
            "vpmaddubsw ymm15, ymm13, ymm15\n",
            "vpmaddwd ymm15, ymm15, ymm8\n",
            "vpaddd ",
            $a1,
            ", ",
            $a1,
            ", ymm15\n",
        )
    };
}

/// Quad `$p` of a q8_0 record: A's 16 rows of it made signed (`w + 128`
/// flipped back by `ymm9`), then both tokens' steps.
macro_rules! q8_quad {
    ($p:literal) => {
        concat!(
            "vpxor ymm10, ymm9, [{r} + 32 + 64*",
            $p,
            "]\n",
            "vpxor ymm11, ymm9, [{r} + 64 + 64*",
            $p,
            "]\n",
            q8_token!($p, "x0", "ymm0", "ymm1"),
            q8_token!($p, "x1", "ymm2", "ymm3"),
        )
    };
}

/// One token's step of q4_0's quads `$p` and `$p + 4` on one half of the
/// rows (low nibbles in `ymm10`, high in `ymm11`) into its sum `$a`: the
/// two products fit an i16 (2 · 2 · 15 · 127), so they are added before
/// the widening to i32.
macro_rules! q4_token {
    ($p:literal, $x:literal, $a:literal) => {
        concat!(
            "vpbroadcastd ymm12, [{",
            $x,
            "} + 4*",
            $p,
            "]\n",
            "vpbroadcastd ymm13, [{",
            $x,
            "} + 16 + 4*",
            $p,
            "]\n",
            "vpmaddubsw ymm14, ymm10, ymm12\n",
            "vpmaddubsw ymm15, ymm11, ymm13\n",
            "vpaddw ymm14, ymm14, ymm15\n",
            "vpmaddwd ymm14, ymm14, ymm8\n",
            "vpaddd ",
            $a,
            ", ",
            $a,
            ", ymm14\n",
        )
    };
}

/// Half `$h` (rows `8h..8h + 8`) of q4_0's record bytes for quads `$p`
/// and `$p + 4`: the nibbles split by `ymm9` (`0x0f`), then both tokens.
macro_rules! q4_half {
    ($p:literal, $h:literal, $a0:literal, $a1:literal) => {
        concat!(
            "vmovdqu ymm10, [{r} + 32 + 64*",
            $p,
            " + 32*",
            $h,
            "]\n",
            "vpsrld ymm11, ymm10, 4\n",
            "vpand ymm10, ymm10, ymm9\n",
            "vpand ymm11, ymm11, ymm9\n",
            q4_token!($p, "x0", $a0),
            q4_token!($p, "x1", $a1),
        )
    };
}

/// A block's four sums converted and added to the results (`ymm4`-`ymm7`)
/// times the rows' scales (f16 at the record's start) and the token's
/// (`[{d0}]`, `[{d1}]`); then every pointer to the next block, and the
/// loop, records `$rec` bytes apart.
macro_rules! scale_and_next {
    ($rec:literal $(, $more:literal)*) => {
        concat!(
            "vcvtph2ps ymm10, [{r}]\n",
            "vcvtph2ps ymm11, [{r} + 16]\n",
            "vbroadcastss ymm12, [{d0}]\n",
            "vmulps ymm13, ymm10, ymm12\n",
            "vcvtdq2ps ymm0, ymm0\n",
            "vfmadd231ps ymm4, ymm0, ymm13\n",
            "vmulps ymm13, ymm11, ymm12\n",
            "vcvtdq2ps ymm1, ymm1\n",
            "vfmadd231ps ymm5, ymm1, ymm13\n",
            "vbroadcastss ymm12, [{d1}]\n",
            "vmulps ymm13, ymm10, ymm12\n",
            "vcvtdq2ps ymm2, ymm2\n",
            "vfmadd231ps ymm6, ymm2, ymm13\n",
            "vmulps ymm13, ymm11, ymm12\n",
            "vcvtdq2ps ymm3, ymm3\n",
            "vfmadd231ps ymm7, ymm3, ymm13\n",
            "add {r}, ", $rec, "\n",
            "add {x0}, 32\n",
            "add {x1}, 32\n",
            "add {d0}, 4\n",
            "add {d1}, 4\n",
            $($more, "\n",)*
            "dec {n}\n",
            "jnz 2b\n",
        )
    };
}

/// q8_0: `blocks` records from `rec` (16 rows, weights stored `w + 128`)
/// against tokens `x0` and `x1`; returns the fp32 results `y[h][t]` (rows
/// `8h..8h + 8`, token `t`) added to `y`.
///
/// # Safety
/// The CPU runs AVX2, FMA and F16C; `blocks >= 1` records of q8_0 (544
/// bytes each) at `rec`, and `blocks` blocks of each token from where it
/// points; no weight is -128 (`vpsignb` cannot negate it).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn q8_0(
    rec: *const u8,
    blocks: usize,
    x: [&Token; 2],
    y: [[__m256; 2]; 2],
) -> [[__m256; 2]; 2] {
    const { assert!(GROUP == 16) };
    let [[mut y00, mut y01], [mut y10, mut y11]] = y;
    // SAFETY: the caller's records and blocks, read `blocks` times each a
    // record and a block further (the loop runs at least once); every
    // vector register written is an operand or declared clobbered.
    unsafe {
        std::arch::asm!(
            "2:",
            "vpxor ymm0, ymm0, ymm0",
            "vpxor ymm1, ymm1, ymm1",
            "vpxor ymm2, ymm2, ymm2",
            "vpxor ymm3, ymm3, ymm3",
            q8_quad!(0),
            q8_quad!(1),
            q8_quad!(2),
            q8_quad!(3),
            q8_quad!(4),
            q8_quad!(5),
            q8_quad!(6),
            q8_quad!(7),
            scale_and_next!(544),
            r = inout(reg) rec => _,
            x0 = inout(reg) x[0].q => _,
            x1 = inout(reg) x[1].q => _,
            d0 = inout(reg) x[0].d => _,
            d1 = inout(reg) x[1].d => _,
            n = inout(reg) blocks => _,
            in("ymm8") _mm256_set1_epi16(1),
            in("ymm9") _mm256_set1_epi8(-128),
            inout("ymm4") y00, inout("ymm5") y10, inout("ymm6") y01, inout("ymm7") y11,
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
            out("ymm10") _, out("ymm11") _, out("ymm12") _, out("ymm13") _,
            out("ymm14") _, out("ymm15") _,
            options(nostack, readonly),
        )
    }
    [[y00, y01], [y10, y11]]
}

/// q4_0 as [`q8_0`]: records of 288 bytes (the nibbles `w + 8`), the
/// offset taken back with each token's block sums (`8 · sum`).
///
/// # Safety
/// As [`q8_0`], for q4_0's records.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn q4_0(
    rec: *const u8,
    blocks: usize,
    x: [&Token; 2],
    y: [[__m256; 2]; 2],
) -> [[__m256; 2]; 2] {
    let [[mut y00, mut y01], [mut y10, mut y11]] = y;
    // SAFETY: as in `q8_0`.
    unsafe {
        std::arch::asm!(
            "2:",
            "vpxor ymm0, ymm0, ymm0",
            "vpxor ymm1, ymm1, ymm1",
            "vpxor ymm2, ymm2, ymm2",
            "vpxor ymm3, ymm3, ymm3",
            q4_half!(0, 0, "ymm0", "ymm2"),
            q4_half!(0, 1, "ymm1", "ymm3"),
            q4_half!(1, 0, "ymm0", "ymm2"),
            q4_half!(1, 1, "ymm1", "ymm3"),
            q4_half!(2, 0, "ymm0", "ymm2"),
            q4_half!(2, 1, "ymm1", "ymm3"),
            q4_half!(3, 0, "ymm0", "ymm2"),
            q4_half!(3, 1, "ymm1", "ymm3"),
            "vpbroadcastd ymm12, [{s0}]",
            "vpslld ymm12, ymm12, 3",
            "vpsubd ymm0, ymm0, ymm12",
            "vpsubd ymm1, ymm1, ymm12",
            "vpbroadcastd ymm12, [{s1}]",
            "vpslld ymm12, ymm12, 3",
            "vpsubd ymm2, ymm2, ymm12",
            "vpsubd ymm3, ymm3, ymm12",
            scale_and_next!(288, "add {s0}, 4", "add {s1}, 4"),
            r = inout(reg) rec => _,
            x0 = inout(reg) x[0].q => _,
            x1 = inout(reg) x[1].q => _,
            d0 = inout(reg) x[0].d => _,
            d1 = inout(reg) x[1].d => _,
            s0 = inout(reg) x[0].sums => _,
            s1 = inout(reg) x[1].sums => _,
            n = inout(reg) blocks => _,
            in("ymm8") _mm256_set1_epi16(1),
            in("ymm9") _mm256_set1_epi8(0x0f),
            inout("ymm4") y00, inout("ymm5") y10, inout("ymm6") y01, inout("ymm7") y11,
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
            out("ymm10") _, out("ymm11") _, out("ymm12") _, out("ymm13") _,
            out("ymm14") _, out("ymm15") _,
            options(nostack, readonly),
        )
    }
    [[y00, y01], [y10, y11]]
}
