//! The work around the products, on this CPU's widest vectors: the crates
//! are built for baseline x86-64 (SSE2), so a loop the compiler
//! vectorizes there runs on 128-bit registers unless it is compiled again
//! for the CPU's features and chosen at run time, as the kernels are.

use half::slice::HalfFloatSliceExt;

use crate::kernel::{Bf16, Half};

/// `f()` compiled for AVX-512 (else AVX2 with FMA) where the CPU has it:
/// for a loop that converts, transforms or copies (a Winograd transform,
/// an im2col, a ReLU) and that the compiler vectorizes. Mark `f`
/// `#[inline(always)]`: it is compiled for those features only when
/// inlined here (the functions it calls are not; rayon's tasks inside it
/// neither, so call this inside each task). Results are the same on every
/// path: only the register width changes (no fused multiply-adds are
/// introduced: Rust does not contract `a * b + c`).
#[inline(always)]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU runs AVX-512F (checked just above).
            return unsafe { x86::avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU runs AVX2 and FMA (checked just above).
            return unsafe { x86::avx2(f) };
        }
    }
    f()
}

/// Each of `src` rounded to the nearest bf16, ties to even, into `dst`
/// (as [`Bf16::from_f32`]; on AVX512_BF16 by `vcvtneps2bf16`, sixteen
/// at a time, which keeps a NaN a NaN and flushes subnormals, below
/// 1.2e-38 in magnitude, to zero of their sign).
///
/// # Panics
/// If the slices differ in length.
pub fn bf16_from_f32(src: &[f32], dst: &mut [Bf16]) {
    assert_eq!(src.len(), dst.len(), "as many bf16 as f32");
    #[cfg(target_arch = "x86_64")]
    if crate::Isa::Avx512Bf16.available() {
        // SAFETY: the CPU runs AVX-512F and AVX512_BF16 (checked).
        unsafe { x86::bf16_from_f32(src, dst) };
        return;
    }
    vectorized(
        #[inline(always)]
        || {
            dst.iter_mut()
                .zip(src)
                .for_each(|(d, s)| *d = Bf16::from_f32(*s))
        },
    )
}

/// Each of `src` rounded to the nearest fp16, ties to even, into `dst`
/// (as [`Half::from_f32`]; by F16C's `vcvtps2ph` where the CPU has it,
/// through the `half` crate's slice conversion).
///
/// # Panics
/// If the slices differ in length.
pub fn half_from_f32(src: &[f32], dst: &mut [Half]) {
    assert_eq!(src.len(), dst.len(), "as many fp16 as f32");
    // SAFETY: a Half is a `repr(transparent)` u16, as `half::f16` is: the
    // same size and alignment, and any bits are a value of either.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), dst.len()) };
    <[half::f16]>::convert_from_f32_slice(dst, src);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use crate::kernel::Bf16;

    /// `f()`, compiled for AVX-512 where inlined.
    ///
    /// # Safety
    /// The CPU runs AVX-512F, BW and VL.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    pub(super) unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// `f()`, compiled for AVX2 and FMA where inlined.
    ///
    /// # Safety
    /// The CPU runs AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// [`super::bf16_from_f32`] by `vcvtneps2bf16`.
    ///
    /// # Safety
    /// The CPU runs AVX-512F and AVX512_BF16; the slices are as long.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn bf16_from_f32(src: &[f32], dst: &mut [Bf16]) {
        let whole = src.len() / 16 * 16;
        for (s, d) in src[..whole]
            .chunks_exact(16)
            .zip(dst[..whole].chunks_exact_mut(16))
        {
            // SAFETY: 16 f32 readable at s, 16 bf16 (32 bytes) writable
            // at d (whole chunks of both).
            unsafe {
                let v = _mm512_loadu_ps(s.as_ptr());
                let h = _mm512_cvtneps_pbh(v);
                _mm256_storeu_si256(
                    d.as_mut_ptr().cast(),
                    std::mem::transmute::<__m256bh, __m256i>(h),
                );
            }
        }
        for (d, s) in dst[whole..].iter_mut().zip(&src[whole..]) {
            *d = Bf16::from_f32(*s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp16_conversion_rounds_as_the_scalar_one() {
        // Ties, values past fp16's range and below its normals, lengths
        // off every multiple of 8.
        let src: Vec<f32> = (0..1000u32)
            .map(|i| match i % 5 {
                0 => 1.0 + (2 * i + 1) as f32 / 4096.0,
                1 => -(i as f32) * 1.000_123,
                2 => 70000.0 * i as f32,
                3 => 1e-6 / (i + 1) as f32,
                _ => 1.0 / (i as f32 + 0.37),
            })
            .collect();
        for len in [0, 1, 7, 8, 9, 999, 1000] {
            let mut dst = vec![Half(0xFFFF); len];
            half_from_f32(&src[..len], &mut dst);
            for (j, (d, s)) in dst.iter().zip(&src).enumerate() {
                assert_eq!(d.0, Half::from_f32(*s).0, "{len}: value {j}: {s}");
            }
        }
    }

    #[test]
    fn bf16_conversion_rounds_as_the_scalar_one() {
        // Ties both ways, values off every multiple of 16, the extremes.
        let src: Vec<f32> = (0..1000u32)
            .map(|i| match i % 5 {
                0 => f32::from_bits(0x3F80_8000 + (i << 16)),
                1 => -(i as f32) * 1.000_123,
                2 => f32::from_bits(0x3F81_8000),
                3 => f32::MAX / (i + 1) as f32,
                _ => 1.0 / (i as f32 + 0.37),
            })
            .collect();
        for len in [0, 1, 15, 16, 17, 999, 1000] {
            let mut dst = vec![Bf16(0xFFFF); len];
            bf16_from_f32(&src[..len], &mut dst);
            for (j, (d, s)) in dst.iter().zip(&src).enumerate() {
                assert_eq!(d.0, Bf16::from_f32(*s).0, "{len}: value {j}: {s}");
            }
        }
        // A subnormal: itself rounded, or (vcvtneps2bf16) zero of its sign.
        let tiny: Vec<f32> = (0..32)
            .map(|i| f32::from_bits(0x0040_0000) * if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let mut dst = vec![Bf16(1); 32];
        bf16_from_f32(&tiny, &mut dst);
        for (d, &s) in dst.iter().zip(&tiny) {
            let zero = Bf16::from_f32(0f32.copysign(s));
            assert!(
                d.0 == Bf16::from_f32(s).0 || d.0 == zero.0,
                "{s:e}: {:x}",
                d.0
            );
        }
    }

    #[test]
    fn vectorized_runs_its_closure_once() {
        let mut calls = 0;
        let out = vectorized(
            #[inline(always)]
            || {
                calls += 1;
                (0..100).map(|i| i as f32).sum::<f32>()
            },
        );
        assert_eq!((out, calls), (4950.0, 1));
    }
}
