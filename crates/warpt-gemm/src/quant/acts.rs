//! The activations of a quantized product, quantized per call to 8-bit
//! blocks as llama.cpp does: per row and block of 32 a scale
//! `d = max|x| / 127`, the values `x / d` rounded half to even and their
//! sum. On x86-64 in AVX2 registers a block at a time: the compiler's
//! code for the portable loop, even compiled for AVX2, took 1.6 ns a
//! value on Zen 4 (4% of a q4_0 decode step and a fifth of a prefill's
//! time, on the calling thread alone), these 0.35–0.44 (AVX-512's
//! registers measured the same: the block's scale is the critical path).
//! Every path gives the portable loop's bytes.

use super::BLOCK;
use crate::isa::Isa;

/// Activations `n × k` quantized to 8-bit blocks: per row and block, a
/// scale `d = max|x| / 127`, the values `x / d` rounded (half to even) in `-127..=127` and
/// their sum (what the weights' offset is taken back with).
pub struct QActs {
    pub(super) n: usize,
    pub(super) k: usize,
    /// `n × blocks` scales.
    d: Vec<f32>,
    /// `n × blocks` sums of the quantized values.
    sums: Vec<i32>,
    /// `n × k` quantized values.
    q: Vec<i8>,
}

impl QActs {
    /// `x` (`n × k`, row-major) quantized, on this CPU's widest vectors.
    ///
    /// # Panics
    /// If `k` is not a multiple of [`BLOCK`] or `x.len() != n * k`.
    pub fn quantize(x: &[f32], n: usize, k: usize) -> Self {
        let isa = if Isa::Avx2.available() {
            Isa::Avx2
        } else {
            Isa::Portable
        };
        Self::quantize_with(isa, x, n, k)
    }

    /// [`Self::quantize`] with the vectors of `isa`: AVX2's where it is
    /// [`Isa::Avx2`] and this CPU has it, the portable loop otherwise.
    ///
    /// # Panics
    /// As [`Self::quantize`].
    pub fn quantize_with(isa: Isa, x: &[f32], n: usize, k: usize) -> Self {
        assert!(k.is_multiple_of(BLOCK), "{k} columns");
        assert_eq!(x.len(), n * k, "{n} rows of {k}");
        let blocks = n * k / BLOCK;
        let mut acts = QActs {
            n,
            k,
            d: vec![0.0; blocks],
            sums: vec![0; blocks],
            q: vec![0; n * k],
        };
        let (q, d, sums) = (&mut acts.q[..], &mut acts.d[..], &mut acts.sums[..]);
        match isa {
            // SAFETY: the CPU has AVX2 (checked).
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if isa.available() => unsafe { x86::quantize_avx2(x, q, d, sums) },
            _ => {
                let blocks = x.chunks_exact(BLOCK).zip(q.chunks_exact_mut(BLOCK));
                for ((src, dst), (d, sum)) in blocks.zip(d.iter_mut().zip(sums)) {
                    (*d, *sum) = block(src, dst);
                }
            }
        }
        acts
    }

    /// Rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Row `t` from its block `b` on, as pointers to its scales, sums and
    /// values (each row's blocks are consecutive): for a tile that walks
    /// them itself.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn row_from(&self, t: usize, b: usize) -> (*const f32, *const i32, *const i8) {
        let i = t * self.k / BLOCK + b;
        (
            self.d[i..].as_ptr(),
            self.sums[i..].as_ptr(),
            self.q[i * BLOCK..].as_ptr(),
        )
    }

    /// Row `t`'s block `b`: scale, sum and values.
    pub(crate) fn block(&self, t: usize, b: usize) -> (f32, i32, &[i8]) {
        let i = t * self.k / BLOCK + b;
        (self.d[i], self.sums[i], &self.q[i * BLOCK..][..BLOCK])
    }
}

/// The scale a block's largest magnitude gives, and its reciprocal
/// (zero for a block of zeros).
fn scale(amax: f32) -> (f32, f32) {
    let d = amax / 127.0;
    (d, if d > 0.0 { 1.0 / d } else { 0.0 })
}

/// One block of `src` into `dst`: its scale and sum. NaNs are left out
/// of the largest magnitude and quantize to 0, as Rust's `f32::max` and
/// `as i8` have them.
fn block(src: &[f32], dst: &mut [i8]) -> (f32, i32) {
    let mut lanes = [0f32; 16];
    for half in src.chunks_exact(16) {
        for (l, v) in lanes.iter_mut().zip(half) {
            *l = l.max(v.abs());
        }
    }
    let (d, id) = scale(lanes.iter().fold(0f32, |m, v| m.max(*v)));
    let mut sum = 0i32;
    for (o, v) in dst.iter_mut().zip(src) {
        // |v · id| <= 127 up to rounding; the clamp keeps -128 out.
        let q = (v * id).round_ties_even().clamp(-127.0, 127.0) as i8;
        sum += i32::from(q);
        *o = q;
    }
    (d, sum)
}

/// [`block`] in AVX2 registers.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{BLOCK, scale};

    /// Round to nearest, ties to even, raising nothing.
    const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

    /// Every block of `x` into `q`, its scales `d` and sums `sums` (as
    /// many blocks each), in AVX2 registers.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize_avx2(x: &[f32], q: &mut [i8], d: &mut [f32], sums: &mut [i32]) {
        let blocks = x.chunks_exact(BLOCK).zip(q.chunks_exact_mut(BLOCK));
        for ((src, dst), (d, sum)) in blocks.zip(d.iter_mut().zip(sums)) {
            // SAFETY: the CPU has AVX2 (the caller's); both hold BLOCK.
            (*d, *sum) = unsafe { block(src, dst) };
        }
    }

    /// [`super::block`] in four AVX2 registers.
    ///
    /// # Safety
    /// The CPU has AVX2; `src` and `dst` hold [`BLOCK`] values.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn block(src: &[f32], dst: &mut [i8]) -> (f32, i32) {
        debug_assert!(src.len() >= BLOCK && dst.len() >= BLOCK);
        // SAFETY: 4 x 8 values (the caller's promise).
        let v = unsafe { [0, 8, 16, 24].map(|at| _mm256_loadu_ps(src.as_ptr().add(at))) };
        let abs = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX));
        // Lanes j and j + 16 first, as the portable loop's sixteen lanes
        // (max is exact: the order changes nothing but NaNs, left out).
        let mut m = _mm256_setzero_ps();
        for v in v {
            m = _mm256_max_ps(_mm256_and_ps(v, abs), m);
        }
        let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m));
        let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        let m = _mm_max_ss(m, _mm_shuffle_ps::<1>(m, m));
        let (d, id) = scale(_mm_cvtss_f32(m));
        let (lo, hi) = (_mm256_set1_ps(-127.0), _mm256_set1_ps(127.0));
        let q = v.map(|v| {
            let r = _mm256_round_ps::<NEAREST>(_mm256_mul_ps(v, _mm256_set1_ps(id)));
            let r = _mm256_and_ps(r, _mm256_cmp_ps::<_CMP_ORD_Q>(r, r));
            _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi))
        });
        let s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        let s = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        // Packing works within 128-bit lanes: the dwords come out in the
        // order 0 4 1 5 2 6 3 7, put back by the permutation.
        let bytes = _mm256_packs_epi16(
            _mm256_packs_epi32(q[0], q[1]),
            _mm256_packs_epi32(q[2], q[3]),
        );
        let bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        // SAFETY: 32 bytes (the caller's promise).
        unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), bytes) };
        (d, _mm_cvtsi128_si32(s))
    }
}
